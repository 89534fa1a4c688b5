/**
 * One process's look for bubblewrap, for the probe cache's tests: `<bwrap> <cache file>
 * [read-only]` prints what `detectSandbox()` found, as JSON.
 */

import { detectSandbox } from "../lib/sandbox/mod.ts";

const [path, file, mode] = Deno.args;
const found = await detectSandbox({ path, cache: { file, write: mode !== "read-only" } });
console.log(JSON.stringify(found));
