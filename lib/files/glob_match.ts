/**
 * Glob matching with `npm:picomatch`, loaded on first use so that starting the agent does not
 * pay for it, and kept from patterns whose matching could take minutes: picomatch turns each
 * `*` into a lazy run, so a segment with many of them costs the name's length to the power of
 * their number (`*a*a*a*a*a*a*b` against one 100-character name took 65 s, during which the
 * agent could not even be interrupted), and extglobs such as `+(a|aa)` can be exponential. A
 * pattern (from the model or from a rule) may hold at most {@link MAX_STARS_PER_SEGMENT} runs
 * of `*` in one path segment, and extglobs are off.
 *
 * @module
 */

// @ts-types="@types/picomatch"
import type picomatch from "picomatch";
import { loadLazy } from "../lazy/load.ts";

/** The most runs of `*` one path segment of a glob may hold (`**` as a whole segment aside). */
export const MAX_STARS_PER_SEGMENT = 3;

let _loading: Promise<typeof picomatch> | undefined;

/**
 * The picomatch function, imported the first time it is asked for. It refuses, with an error
 * that says why and what to write instead, a pattern with more than
 * {@link MAX_STARS_PER_SEGMENT} runs of `*` in one segment, and reads extglobs as plain text.
 *
 * @example
 * ```ts
 * import { loadPicomatch } from "./glob_match.ts";
 * const picomatch = await loadPicomatch();
 * const match = picomatch("**\/*.ts");
 * if (!match("src/a.ts") || match("src/a.js")) throw new Error("unexpected");
 * let refused = false;
 * try {
 *   picomatch("*a*a*a*a*b");
 * } catch {
 *   refused = true;
 * }
 * if (!refused) throw new Error("unexpected");
 * ```
 */
export function loadPicomatch(): Promise<typeof picomatch> {
  return _loading ??= loadLazy("picomatch").then(({ default: original }) => {
    const guarded = (glob: string | string[], options?: picomatch.PicomatchOptions) => {
      for (const one of Array.isArray(glob) ? glob : [glob]) checkGlob(one);
      return original(glob, { ...options, noextglob: true });
    };
    return Object.assign(guarded, original) as unknown as typeof picomatch;
  });
}

/**
 * Throws an error saying why when `glob` holds more than {@link MAX_STARS_PER_SEGMENT} runs of
 * `*` in one path segment.
 *
 * @example
 * ```ts
 * import { checkGlob } from "./glob_match.ts";
 * checkGlob("src/**\/*.test.*");
 * let refused = false;
 * try {
 *   checkGlob("*a*b*c*d");
 * } catch {
 *   refused = true;
 * }
 * if (!refused) throw new Error("unexpected");
 * ```
 */
export function checkGlob(glob: string): void {
  for (const segment of glob.split("/")) {
    if (segment === "**") continue;
    const stars = segment.match(/\*+/g)?.length ?? 0;
    if (stars > MAX_STARS_PER_SEGMENT) {
      throw new Error(
        `The glob "${glob}" holds ${stars} "*" in one path segment ("${segment}"): matching it ` +
          `could take minutes on long file names, so at most ${MAX_STARS_PER_SEGMENT} are ` +
          `allowed. Use fewer, e.g. a broader glob and then grep for the rest of the name.`,
      );
    }
  }
}
