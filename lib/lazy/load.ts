/**
 * The npm packages a run may not need, loaded the first time they are: `deno run` downloads
 * every package its module graph reaches before it runs anything, and that graph takes in every
 * `import()` whose specifier is a string literal, run or not. Each such package has a wrapper
 * module here that imports it statically, and {@link loadLazy} imports the wrapper through a
 * specifier Deno cannot read ahead of time, so the package is downloaded (on a first run) and
 * loaded only when a run asks for it.
 *
 * @module
 */

/** The wrapper modules, by name, and what each gives. */
export interface LazyModules {
  /** `npm:@anthropic-ai/sdk`: the Anthropic provider's transport. */
  anthropic_sdk: typeof import("./anthropic_sdk.ts");
  /** `npm:@modelcontextprotocol/sdk`: the MCP client, its transports and schemas. */
  mcp_sdk: typeof import("./mcp_sdk.ts");
  /** `npm:web-tree-sitter` and the Bash grammar of `npm:@vscode/tree-sitter-wasm`. */
  tree_sitter_bash: typeof import("./tree_sitter_bash.js");
  /** `npm:re2js`: the linear-time regular expressions of `grep`. */
  re2js: typeof import("./re2js.ts");
  /** `npm:node-html-markdown`: HTML to markdown, for `fetch` and `web_search`. */
  node_html_markdown: typeof import("./node_html_markdown.ts");
  /** `npm:picomatch`: glob matching. */
  picomatch: typeof import("./picomatch.ts");
}

/** Each wrapper's file, beside this one (`deno compile` is told to include each: see deno.json). */
const _FILES: Readonly<Record<keyof LazyModules, string>> = {
  anthropic_sdk: "./anthropic_sdk.ts",
  mcp_sdk: "./mcp_sdk.ts",
  tree_sitter_bash: "./tree_sitter_bash.js",
  re2js: "./re2js.ts",
  node_html_markdown: "./node_html_markdown.ts",
  picomatch: "./picomatch.ts",
};

/**
 * Loads a wrapper module, and with it its npm package. A package that cannot be loaded (not
 * downloaded, no network) rejects with the runtime's own error, as a plain `import()` would.
 *
 * @example
 * ```ts
 * import { loadLazy } from "./load.ts";
 * const { RE2JS } = await loadLazy("re2js");
 * if (!RE2JS.compile("a+b").matcher("xaab").find()) throw new Error("unexpected");
 * ```
 */
export function loadLazy<Name extends keyof LazyModules>(name: Name): Promise<LazyModules[Name]> {
  // Not a string literal on purpose: Deno would download the package before every run. This is
  // the package's one import that `deno publish` reports as unanalyzable.
  const url = new URL(_FILES[name], import.meta.url);
  return import(url.href);
}
