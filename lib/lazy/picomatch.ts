/**
 * `npm:picomatch`, loaded with `loadLazy` (`./load.ts`) when a glob is first matched.
 *
 * @module
 */

// @ts-types="@types/picomatch"
export { default } from "picomatch";
