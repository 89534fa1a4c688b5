/**
 * A bound on the heavy reads the service does at once (a session sent whole, of any size): a
 * read takes a slot, and gives it back when its body ends. Past the limit a read waits its turn;
 * past as many waiting, it is refused at once with 503 and `Retry-After`, so that a crowd of
 * reads costs a queue, never the service's memory.
 *
 * @module
 */

import { ServiceError } from "./service_error.ts";

/** The slots of {@link readSlots}. */
export interface ReadSlots {
  /**
   * Takes a slot, waiting for one while all are taken; gives the function that gives it back
   * (once). A {@link ServiceError} `too_many_reads` (503, `Retry-After: 1`) when as many reads
   * wait already as there are slots.
   */
  take(): Promise<() => void>;
  /** The slots taken. */
  readonly taken: number;
  /** Resolves once no slot is taken (at once when none is). */
  idle(): Promise<void>;
}

/**
 * Slots for `limit` reads at once, and as many waiting (`limit` ≥ 1).
 *
 * @example
 * ```ts
 * import { readSlots } from "./read_slots.ts";
 * const slots = readSlots(1);
 * const release = await slots.take();
 * const next = slots.take(); // waits its turn
 * const refused = await slots.take().catch((error) => error);
 * if (refused.status !== 503 || refused.retryAfter !== 1) throw new Error("unexpected");
 * release();
 * (await next)();
 * await slots.idle();
 * ```
 */
export function readSlots(limit: number): ReadSlots {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError(`Reads at once is a whole number ≥ 1, not ${limit}`);
  }
  let taken = 0;
  const waiting: (() => void)[] = [];
  let idle = Promise.withResolvers<void>();
  const release = () => {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = waiting.shift();
      if (next) return next(); // the slot passes on
      if (--taken === 0) {
        idle.resolve();
        idle = Promise.withResolvers<void>();
      }
    };
  };
  return {
    take() {
      if (taken < limit) {
        taken++;
        return Promise.resolve(release());
      }
      if (waiting.length >= limit) {
        return Promise.reject(
          new ServiceError(
            "too_many_reads",
            503,
            `${taken} sessions are being read and ${waiting.length} wait, the most this service ` +
              "takes at once: try again in a second",
            1,
          ),
        );
      }
      return new Promise((resolve) => waiting.push(() => resolve(release())));
    },
    get taken() {
      return taken;
    },
    idle: () => taken === 0 ? Promise.resolve() : idle.promise,
  };
}
