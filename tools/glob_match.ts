/**
 * Glob matching with `npm:picomatch`, loaded on first use so that starting the agent does not
 * pay for it.
 *
 * @module
 */

// @ts-types="@types/picomatch"
import type picomatch from "picomatch";

let _loading: Promise<typeof picomatch> | undefined;

/**
 * The picomatch function, imported the first time it is asked for.
 *
 * @example
 * ```ts
 * import { loadPicomatch } from "./glob_match.ts";
 * const match = (await loadPicomatch())("**\/*.ts");
 * if (!match("src/a.ts") || match("src/a.js")) throw new Error("unexpected");
 * ```
 */
export function loadPicomatch(): Promise<typeof picomatch> {
  return _loading ??= import("picomatch").then((module) => module.default);
}
