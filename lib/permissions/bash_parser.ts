/**
 * The Bash parser behind the permission rules: tree-sitter's Bash grammar (tree-sitter-bash, the
 * one Codex and Gemini CLI use to read command lines), as `npm:@vscode/tree-sitter-wasm` builds it
 * (the WebAssembly alone: no native addon, no install script), run by `npm:web-tree-sitter`. Both
 * are loaded on first use (about 0.1 s) and kept for the life of the process.
 *
 * @module
 */

import type { Node, Parser } from "web-tree-sitter";
import { loadLazy } from "../lazy/load.ts";

/** A parsed command line: its root node, and `free()` to release the tree's memory. */
export interface BashTree {
  /** The `program` node. */
  readonly root: Node;
  /** Releases the tree. The nodes must not be used afterwards. */
  free(): void;
}

/** Parses Bash source. */
export type BashParse = (source: string) => BashTree;

let _loading: Promise<BashParse> | undefined;

/**
 * The Bash parser, loaded the first time it is asked for. The promise rejects when the
 * WebAssembly cannot be loaded; the next call tries again.
 *
 * @example
 * ```ts
 * import { loadBashParser } from "./bash_parser.ts";
 * const parse = await loadBashParser();
 * const tree = parse("ls && rm x");
 * const types = tree.root.namedChildren.map((node) => node.type);
 * tree.free();
 * if (types[0] !== "list") throw new Error("unexpected");
 * ```
 */
export function loadBashParser(): Promise<BashParse> {
  _loading ??= _load().catch((error) => {
    _loading = undefined;
    throw error;
  });
  return _loading;
}

type _Instantiated = (instance: WebAssembly.Instance, module: WebAssembly.Module) => void;

async function _load(): Promise<BashParse> {
  const { Language, Parser, grammar, runtime } = await loadLazy("tree_sitter_bash");
  // Emscripten fills this object in: it becomes the runtime's `Module`.
  const module: Record<string, unknown> = {
    instantiateWasm(imports: WebAssembly.Imports, done: _Instantiated) {
      WebAssembly.instantiate(runtime, imports).then((instance) => done(instance, runtime));
      return {};
    },
  };
  await Parser.init(module);
  // `Language.load()` wants bytes or a path to read; with the compiled module in hand, do what
  // it does after reading.
  const loadModule = module.loadWebAssemblyModule as
    | ((binary: WebAssembly.Module, flags: { loadAsync: boolean }) => Promise<unknown>)
    | undefined;
  const fromExports = (Language as unknown as {
    loadFromWasmExports?: (exports: unknown, options: { sync: boolean }) => unknown;
  }).loadFromWasmExports;
  if (!loadModule || !fromExports) {
    throw new Error("web-tree-sitter changed: cannot load the Bash grammar from a compiled module");
  }
  const language = fromExports.call(Language, await loadModule(grammar, { loadAsync: true }), {
    sync: false,
  }) as Parameters<Parser["setLanguage"]>[0];
  const parser = new Parser();
  parser.setLanguage(language);
  return (source) => {
    const tree = parser.parse(source);
    if (!tree) throw new Error("tree-sitter returned no tree");
    return { root: tree.rootNode, free: () => tree.delete() };
  };
}
