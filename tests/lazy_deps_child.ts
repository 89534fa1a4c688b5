/**
 * Loads every module of lib/lazy/ with `loadLazy`, run by `lazy_deps_test.ts` where Deno grants
 * no reading of the checkout, and prints what each gives (its export names, as JSON). A Bash
 * line is parsed too, so the WebAssembly modules are shown to work.
 *
 * @module
 */

import { LAZY_NPM, type LazyModules, loadLazy } from "../lib/lazy/load.ts";
import { loadBashParser } from "../lib/permissions/bash_parser.ts";

const names = Object.keys(LAZY_NPM) as Array<keyof LazyModules>;
const loaded: Record<string, string[]> = {};
for (const name of names) loaded[name] = Object.keys(await loadLazy(name));
const tree = (await loadBashParser())("ls && rm x");
if (tree.root.namedChildren[0]?.type !== "list") throw new Error("the Bash line was not parsed");
tree.free();
console.log(JSON.stringify(loaded));
