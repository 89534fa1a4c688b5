/**
 * `npm:re2js`, loaded with `loadLazy` (`./load.ts`) when `grep` first meets a pattern that V8
 * could not search in linear time.
 *
 * @module
 */

export { RE2JS } from "re2js";
