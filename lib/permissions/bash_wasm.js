// @ts-self-types="./bash_wasm.d.ts"
// The WebAssembly of tree-sitter and of its Bash grammar, compiled by Deno's module loader
// (source phase imports) rather than read from the npm cache with the file system: loading them
// needs no --allow-read, and `deno compile` embeds them. TypeScript cannot yet parse
// `import source`, hence this JavaScript file and its declaration file.
import source runtime from "web-tree-sitter/web-tree-sitter.wasm";
import source grammar from "@vscode/tree-sitter-wasm/wasm/tree-sitter-bash.wasm";

export { grammar, runtime };
