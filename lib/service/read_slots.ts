/**
 * A bound on the heavy reads the service does at once (a large session sent whole): a read takes
 * a slot, and gives it back when its body ends. Past the limit a read waits its turn; past 16
 * times as many waiting, it is refused at once with 503 and `Retry-After`, so that a crowd of
 * reads costs a queue, never the service's memory.
 *
 * @module
 */

import { ServiceError } from "./service_error.ts";

/** The slots of {@link readSlots}. */
export interface ReadSlots {
  /**
   * Takes a slot, waiting for one while all are taken; gives the function that gives it back
   * (once). A {@link ServiceError} `too_many_reads` (503, `Retry-After: 1`) when 16 times as
   * many reads as there are slots wait already.
   */
  take(): Promise<() => void>;
  /** The slots taken. */
  readonly taken: number;
}

/**
 * Slots for `limit` reads at once, and 16 times as many waiting (`limit` ≥ 1).
 *
 * @example
 * ```ts
 * import { readSlots } from "./read_slots.ts";
 * const slots = readSlots(1);
 * const release = await slots.take();
 * const waiting = Array.from({ length: 16 }, () => slots.take()); // each waits its turn
 * const refused = await slots.take().catch((error) => error);
 * if (refused.status !== 503 || refused.retryAfter !== 1) throw new Error("unexpected");
 * release();
 * for (const next of waiting) (await next)();
 * if (slots.taken !== 0) throw new Error("every slot is back");
 * ```
 */
export function readSlots(limit: number): ReadSlots {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError(`Reads at once is a whole number ≥ 1, not ${limit}`);
  }
  let taken = 0;
  const waiting: (() => void)[] = [];
  const release = () => {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = waiting.shift();
      if (next) return next(); // the slot passes on
      taken--;
    };
  };
  return {
    take() {
      if (taken < limit) {
        taken++;
        return Promise.resolve(release());
      }
      if (waiting.length >= 16 * limit) {
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
  };
}
