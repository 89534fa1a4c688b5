// @ts-self-types="./tree_sitter_bash.d.ts"
// `npm:web-tree-sitter` and the Bash grammar of `npm:@vscode/tree-sitter-wasm`, loaded with
// `loadLazy` (`./load.ts`) when a command line is first parsed.
// The WebAssembly of tree-sitter and of its Bash grammar, compiled by Deno's module loader
// (source phase imports) rather than read from the npm cache with the file system: loading them
// needs no --allow-read, and `deno compile` embeds them. TypeScript cannot yet parse
// `import source`, hence this JavaScript file and its declaration file.
import source runtime from "web-tree-sitter/web-tree-sitter.wasm";
import source grammar from "@vscode/tree-sitter-wasm/wasm/tree-sitter-bash.wasm";

export { Language, Parser } from "web-tree-sitter";
export { grammar, runtime };
