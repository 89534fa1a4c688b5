/**
 * Small async helpers that honour an AbortSignal.
 *
 * @module
 */

/**
 * Resolves after `ms` milliseconds, or rejects with the signal's reason when it aborts first.
 *
 * @example
 * ```ts
 * import { sleep } from "./async.ts";
 * await sleep(1);
 * ```
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Iterates `iterable` until it ends or `signal` aborts, whichever comes first, so that a source
 * which ignores the signal cannot hold the caller. On abort the source is told to stop and the
 * iteration simply ends; the caller checks `signal.aborted`.
 *
 * @example
 * ```ts
 * import { abortable } from "./async.ts";
 * const controller = new AbortController();
 * async function* forever() {
 *   while (true) yield await new Promise<number>((resolve) => setTimeout(() => resolve(1), 5));
 * }
 * let seen = 0;
 * for await (const _ of abortable(forever(), controller.signal)) {
 *   if (++seen === 2) controller.abort();
 * }
 * if (seen !== 2) throw new Error("unexpected");
 * ```
 */
export async function* abortable<T>(
  iterable: AsyncIterable<T>,
  signal: AbortSignal,
): AsyncGenerator<T, void> {
  if (signal.aborted) return;
  const iterator = iterable[Symbol.asyncIterator]();
  // One waiter at a time, so a long stream does not pile reactions onto a shared promise.
  let wake: ((step: IteratorResult<T>) => void) | undefined;
  const onAbort = () => wake?.({ done: true, value: undefined });
  signal.addEventListener("abort", onAbort, { once: true });
  let finished = false;
  try {
    while (true) {
      const step = await new Promise<IteratorResult<T>>((resolve, reject) => {
        wake = resolve;
        iterator.next().then(resolve, reject);
      });
      if (step.done) {
        finished = !signal.aborted;
        return;
      }
      yield step.value;
      if (signal.aborted) return;
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    // Tell an unfinished source to stop, without waiting for one that ignores the request.
    if (!finished) iterator.return?.()?.catch(() => {});
  }
}

/**
 * Lets timers, I/O and signals run (a Ctrl+C, a stream's next chunk) in the middle of long
 * synchronous work: a message to itself comes back after them, without the ~4 ms a
 * `setTimeout(0)` waits.
 *
 * @example
 * ```ts
 * import { yieldToEvents } from "./async.ts";
 * let ran = false;
 * setTimeout(() => ran = true, 0);
 * const started = Date.now();
 * while (!ran && Date.now() - started < 1_000) await yieldToEvents();
 * if (!ran) throw new Error("a timer never ran");
 * ```
 */
export function yieldToEvents(): Promise<void> {
  const { port1, port2 } = new MessageChannel();
  return new Promise((resolve) => {
    port1.onmessage = () => {
      port1.close();
      port2.close();
      resolve();
    };
    port2.postMessage(null);
  });
}
