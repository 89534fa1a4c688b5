/**
 * The protocol's way out to stdout, written in batches. The SDK writes each message on its own,
 * and a run sends an update for every text delta and tool call: a write to the pipe apiece cost
 * more than all the rest of what the agent does for an editor. Here a message is taken at once,
 * and goes out with every other one written before the event loop turns (`setImmediate`, no
 * timer) or while the write before is under way: in order, in one write. Past `highWaterMark`
 * bytes waiting, a write waits for its batch to go (backpressure, as the pipe gives it). A
 * failed write (the editor has gone) fails the writes after it and `drained()`.
 *
 * @module
 */

import { setImmediate } from "node:timers";

/** Where the bytes go: `Deno.stdout`, or any writer with its `write`. */
export interface ByteWriter {
  /** Writes some of `bytes`; resolves to how many were written. */
  write(bytes: Uint8Array): Promise<number>;
}

/** A writable stream that batches what is written to a {@link ByteWriter}. */
export interface BatchedOutput {
  /** The stream to give the protocol. */
  writable: WritableStream<Uint8Array>;
  /**
   * Resolves once everything written so far has gone out (`true`), or after `timeoutMs` if it
   * has not (`false`: an editor that no longer reads); rejects if a write failed.
   */
  drained(timeoutMs?: number): Promise<boolean>;
}

/**
 * A stream whose writes go to `writer` in batches, in order.
 *
 * @example
 * ```ts
 * import { batchedOutput } from "./batched_output.ts";
 * // A pipe that takes 10 ms a write.
 * const sent: string[] = [];
 * const output = batchedOutput({
 *   write: async (bytes) => {
 *     await new Promise((done) => setTimeout(done, 10));
 *     sent.push(new TextDecoder().decode(bytes));
 *     return bytes.length;
 *   },
 * });
 * const writer = output.writable.getWriter();
 * for (const line of ["a\n", "b\n", "c\n"]) await writer.write(new TextEncoder().encode(line));
 * await output.drained();
 * if (sent.join("") !== "a\nb\nc\n" || sent.length > 2) throw new Error(JSON.stringify(sent));
 * ```
 */
export function batchedOutput(writer: ByteWriter, highWaterMark = 1 << 16): BatchedOutput {
  let waiting: Uint8Array[] = [];
  let size = 0;
  let sending: Promise<void> | undefined;
  let failure: { error: unknown } | undefined;

  const send = async () => {
    try {
      // Whatever else is written before the event loop turns goes with the first.
      await new Promise((next) => setImmediate(next));
      while (waiting.length) {
        const batch = _joined(waiting, size);
        [waiting, size] = [[], 0];
        for (let at = 0; at < batch.length;) at += await writer.write(batch.subarray(at));
      }
    } catch (error) {
      failure = { error };
      [waiting, size] = [[], 0];
    } finally {
      // Cleared in the step that found nothing more waiting: a write after it starts anew.
      sending = undefined;
    }
  };
  const start = (): Promise<void> => sending ??= send();
  const drained = async (timeoutMs = Infinity): Promise<boolean> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<false>((resolve) => {
      if (timeoutMs !== Infinity) timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      while (sending) if (await Promise.race([sending, late]) === false) return false;
    } finally {
      clearTimeout(timer);
    }
    if (failure) throw failure.error;
    return true;
  };

  const writable = new WritableStream<Uint8Array>({
    write(chunk) {
      if (failure) throw failure.error;
      waiting.push(chunk);
      size += chunk.length;
      const going = start();
      // The pipe takes its time: the writer waits, as it would on the pipe itself.
      return size > highWaterMark ? going : undefined;
    },
    close: async () => void await drained(),
  });
  return { writable, drained };
}

/** The chunks as one array (the one chunk itself when there is one). */
function _joined(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const joined = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    joined.set(chunk, at);
    at += chunk.length;
  }
  return joined;
}
