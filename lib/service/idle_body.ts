/**
 * A response body its client must keep taking: one that takes nothing of it for a while (a
 * paused tab, a stuck consumer, a client that sent its request and stopped reading) has it cut
 * off, so that what the body holds while it is sent (an open file, a slot of the heavy reads)
 * is let go instead of held for as long as the connection stays open.
 *
 * @module
 */

/**
 * `body`, passed on a chunk at a time as its reader asks, cut off (the stream errors, `body` is
 * cancelled) when its reader asks for nothing for `idleMs` after the response began or after the
 * last chunk it was given. Time `body` takes to make a chunk is never counted.
 *
 * @example
 * ```ts
 * import { idleBody } from "./idle_body.ts";
 * let cancelled = false;
 * const body = new ReadableStream<Uint8Array>({
 *   pull: (controller) => controller.enqueue(new Uint8Array(1024)),
 *   cancel: () => void (cancelled = true),
 * }, { highWaterMark: 0 });
 * const reader = idleBody(body, 50).getReader();
 * await reader.read(); // taken: the clock starts again
 * await new Promise((done) => setTimeout(done, 100)); // nothing more taken for 100 ms
 * const cut = await reader.read().catch((error) => error);
 * if (!cancelled || !/took nothing/.test(cut.message)) throw new Error("unexpected");
 * ```
 */
export function idleBody(
  body: ReadableStream<Uint8Array>,
  idleMs: number,
): ReadableStream<Uint8Array> {
  if (!(idleMs > 0)) throw new RangeError(`The idle time is a number of ms > 0, not ${idleMs}`);
  const reader = body.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let controller: ReadableStreamDefaultController<Uint8Array>;
  const wait = () => {
    timer = setTimeout(() => {
      const seconds = idleMs >= 1000 ? `${idleMs / 1000} s` : `${idleMs} ms`;
      const error = new Error(`The client took nothing of the answer for ${seconds}: cut off`);
      controller.error(error);
      reader.cancel(error).catch(() => {});
    }, idleMs);
  };
  // Ended on its own (sent whole, failed, stopped): nothing is waited for any more.
  reader.closed.catch(() => {}).finally(() => clearTimeout(timer));
  return new ReadableStream<Uint8Array>({
    start(given) {
      controller = given;
      wait();
    },
    async pull(controller) {
      clearTimeout(timer);
      const step = await reader.read();
      if (step.done) return controller.close();
      controller.enqueue(step.value);
      wait();
    },
    cancel(reason) {
      clearTimeout(timer);
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
