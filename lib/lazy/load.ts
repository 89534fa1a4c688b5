/**
 * The npm packages a run may not need, loaded the first time they are: `deno run` downloads
 * every package its module graph reaches before it runs anything, and that graph takes in every
 * `import()` whose specifier is a string literal, run or not. Each such package has a wrapper
 * module here that imports it statically, and {@link loadLazy} imports the wrapper through a
 * specifier Deno cannot read ahead of time, so the package is downloaded (on a first run) and
 * loaded only when a run asks for it. Where Deno does not grant reading the wrapper (the agent
 * run from a checkout with reading granted only in a project), its packages are imported by
 * their `npm:` specifiers instead ({@link LAZY_NPM}), which need no grant. The `import()` here
 * and the source phase import of `./source.js` are the package's two imports that
 * `deno publish` reports as unanalyzable, on purpose.
 *
 * @module
 */

import { importSource } from "./source.js";

/** The wrapper modules, by name, and what each gives. */
export interface LazyModules {
  /** `npm:openai`: the transport of OpenAI-compatible providers and of embeddings. */
  openai_sdk: typeof import("./openai_sdk.ts");
  /** `npm:@anthropic-ai/sdk`: the Anthropic provider's transport. */
  anthropic_sdk: typeof import("./anthropic_sdk.ts");
  /** `npm:@modelcontextprotocol/sdk`: the MCP client, its transports and schemas. */
  mcp_sdk: typeof import("./mcp_sdk.ts");
  /** `npm:@modelcontextprotocol/sdk`: the MCP server and its transports, for `agent mcp`. */
  mcp_server_sdk: typeof import("./mcp_server_sdk.ts");
  /** `npm:@agentclientprotocol/sdk`: the Agent Client Protocol, for `agent acp`. */
  acp_sdk: typeof import("./acp_sdk.ts");
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
  openai_sdk: "./openai_sdk.ts",
  anthropic_sdk: "./anthropic_sdk.ts",
  mcp_sdk: "./mcp_sdk.ts",
  mcp_server_sdk: "./mcp_server_sdk.ts",
  acp_sdk: "./acp_sdk.ts",
  tree_sitter_bash: "./tree_sitter_bash.js",
  re2js: "./re2js.ts",
  node_html_markdown: "./node_html_markdown.ts",
  picomatch: "./picomatch.ts",
};

/**
 * The npm packages each wrapper takes, for when its file cannot be read: the agent run from a
 * checkout (a `file:` module) with reading granted only elsewhere, e.g. `--allow-read=.` in a
 * project. An `npm:` specifier needs no grant to load, and a fully qualified one no import map.
 * Each must match the `imports` of deno.json (a test says so).
 */
export const LAZY_NPM: Readonly<Record<keyof LazyModules, readonly string[]>> = {
  openai_sdk: ["npm:openai@^7.57.0"],
  anthropic_sdk: ["npm:@anthropic-ai/sdk@^1.12.0"],
  mcp_sdk: [
    "npm:@modelcontextprotocol/sdk@1.32.2/client",
    "npm:@modelcontextprotocol/sdk@1.32.2/client/sse.js",
    "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js",
    "npm:@modelcontextprotocol/sdk@1.32.2/types.js",
    "npm:@modelcontextprotocol/sdk@1.32.2/client/auth.js",
  ],
  mcp_server_sdk: [
    "npm:@modelcontextprotocol/sdk@1.32.2/server/mcp.js",
    "npm:@modelcontextprotocol/sdk@1.32.2/server/stdio.js",
    "npm:@modelcontextprotocol/sdk@1.32.2/server/webStandardStreamableHttp.js",
  ],
  acp_sdk: ["npm:@agentclientprotocol/sdk@2.4.0"],
  // The two WebAssembly modules come compiled, as the wrapper gives them.
  tree_sitter_bash: [
    "npm:web-tree-sitter@~0.27.1",
    "runtime=npm:web-tree-sitter@~0.27.1/web-tree-sitter.wasm",
    "grammar=npm:@vscode/tree-sitter-wasm@^0.3.1/wasm/tree-sitter-bash.wasm",
  ],
  re2js: ["npm:re2js@^2.10.0"],
  node_html_markdown: ["npm:node-html-markdown@^2.0.0"],
  picomatch: ["npm:picomatch@^4.0.7"],
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
  const url = new URL(_FILES[name], import.meta.url);
  if (url.protocol === "file:" && !_readable(url)) return _fromNpm(name);
  return _import<LazyModules[Name]>(url.href);
}

/** The wrapper's packages, put together as the wrapper gives them (see {@link LAZY_NPM}). */
async function _fromNpm<Name extends keyof LazyModules>(name: Name): Promise<LazyModules[Name]> {
  const parts = await Promise.all(LAZY_NPM[name].map(async (specifier) => {
    const [key, source] = specifier.split("=");
    if (source === undefined) return await _import<object>(specifier);
    return { [key]: await importSource(source) };
  }));
  return Object.assign({}, ...parts) as LazyModules[Name];
}

/** Whether Deno grants reading the file at `url` (nobody is asked). */
function _readable(url: URL): boolean {
  try {
    return Deno.permissions.querySync({ name: "read", path: url }).state === "granted";
  } catch {
    return false;
  }
}

function _import<T>(specifier: string): Promise<T> {
  // Not a string literal on purpose: Deno would download the package before every run.
  return import(specifier) as Promise<T>;
}
