export { Language, Parser } from "web-tree-sitter";
/** The tree-sitter runtime (`web-tree-sitter.wasm`), compiled. */
export declare const runtime: WebAssembly.Module;
/** The Bash grammar (`tree-sitter-bash.wasm`), compiled. */
export declare const grammar: WebAssembly.Module;
