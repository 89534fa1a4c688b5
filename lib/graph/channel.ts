/**
 * An unbounded queue read as an async iterable: what is pushed before the reader comes is
 * kept, and the iteration ends when the queue is closed.
 *
 * @module
 */

/** A queue of values with one reader. */
export interface Channel<T> extends AsyncIterable<T> {
  /** Adds a value (ignored once closed). */
  push(value: T): void;
  /** Ends the iteration after the values already pushed. */
  close(): void;
}

/**
 * Creates a channel.
 *
 * @example
 * ```ts
 * import { channel } from "./channel.ts";
 * const queue = channel<number>();
 * queue.push(1);
 * queue.push(2);
 * queue.close();
 * const seen = [];
 * for await (const value of queue) seen.push(value);
 * if (seen.join() !== "1,2") throw new Error("unexpected");
 * ```
 */
export function channel<T>(): Channel<T> {
  const values: T[] = [];
  let head = 0;
  let closed = false;
  let wake: (() => void) | undefined;
  return {
    push(value) {
      if (closed) return;
      values.push(value);
      wake?.();
    },
    close() {
      closed = true;
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      while (true) {
        while (head < values.length) {
          const value = values[head];
          values[head++] = undefined as T; // let it go
          yield value;
        }
        if (closed) return;
        await new Promise<void>((resolve) => wake = resolve);
        wake = undefined;
      }
    },
  };
}
