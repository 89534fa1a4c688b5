/**
 * The npm packages a run may not need stay out of what `deno run` downloads before it starts:
 * the module graph of each entry of the package (`deno info`), followed as `deno run` follows
 * it (static imports, and `import()` of a string literal, but not type-only imports), reaches
 * none of the packages behind `lib/lazy/`, and each wrapper there loads through `loadLazy`.
 *
 * @module
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import denoJson from "../deno.json" with { type: "json" };
import { LAZY_NPM, type LazyModules, loadLazy } from "../lib/lazy/load.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const LAZY_DIR = join(ROOT, "lib", "lazy");

/** The packages a one-turn answer must not download, each loaded on first use. */
const LAZY_PACKAGES = [
  "@anthropic-ai/sdk",
  "@modelcontextprotocol/sdk",
  "@vscode/tree-sitter-wasm",
  "node-html-markdown",
  "openai",
  "picomatch",
  "re2js",
  "web-tree-sitter",
];

interface _InfoModule {
  specifier: string;
  kind?: string;
  npmPackage?: string;
  dependencies?: Array<{ code?: { specifier?: string }; isDynamic?: boolean }>;
}

/**
 * The npm packages (names without versions) `deno run <entry>` would download: those its code
 * reaches through static imports and `import()` of string literals.
 */
async function prefetchedPackages(entry: string): Promise<Set<string>> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--config", join(ROOT, "deno.json"), entry],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert(output.success, `deno info failed: ${new TextDecoder().decode(output.stderr)}`);
  const info = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    roots: string[];
    modules: _InfoModule[];
    redirects?: Record<string, string>;
  };
  const modules = new Map(info.modules.map((module) => [module.specifier, module]));
  const redirected = (specifier: string): string => {
    for (let i = 0; i < 10 && info.redirects?.[specifier]; i++) {
      specifier = info.redirects[specifier];
    }
    return specifier;
  };
  const packages = new Set<string>();
  const seen = new Set<string>();
  const stack = info.roots.map(redirected);
  while (stack.length) {
    const specifier = stack.pop()!;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    const module = modules.get(specifier);
    if (!module) continue;
    if (module.kind === "npm" && module.npmPackage) {
      packages.add(module.npmPackage.replace(/^(@?[^@]+)@.*$/, "$1"));
      continue;
    }
    for (const dependency of module.dependencies ?? []) {
      // Type-only imports have no `code`: `deno run` does not load them.
      if (dependency.code?.specifier) stack.push(redirected(dependency.code.specifier));
    }
  }
  return packages;
}

/** The wrapper modules of lib/lazy/, by the name `loadLazy` knows them by. */
async function wrapperNames(): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(LAZY_DIR)) {
    if (["load.ts", "source.js"].includes(entry.name) || entry.name.endsWith(".d.ts")) continue;
    names.push(basename(entry.name).replace(/\.(ts|js)$/, ""));
  }
  return names.sort();
}

Deno.test("deno run of any entry of the package downloads none of the packages loaded on demand", async () => {
  const entries = Object.values(denoJson.exports);
  for (const entry of entries) {
    const packages = await prefetchedPackages(join(ROOT, entry));
    const found = LAZY_PACKAGES.filter((name) => packages.has(name));
    assert.deepEqual(found, [], `${entry} reaches ${found.join(", ")} through a literal import`);
  }
  // What the CLI does need is still found: the graph was followed.
  const main = await prefetchedPackages(join(ROOT, "mod.ts"));
  for (const needed of ["zod"]) assert(main.has(needed), `mod.ts reaches no ${needed}`);
});

Deno.test("each package loaded on demand has a wrapper in lib/lazy/ that imports it", async () => {
  const covered = new Set<string>();
  for (const name of await wrapperNames()) {
    const file = (await Array.fromAsync(Deno.readDir(LAZY_DIR)))
      .find((entry) => entry.name.replace(/\.(ts|js)$/, "") === name)!.name;
    for (const found of await prefetchedPackages(join(LAZY_DIR, file))) covered.add(found);
  }
  const missing = LAZY_PACKAGES.filter((name) => !covered.has(name));
  assert.deepEqual(missing, [], `no wrapper imports ${missing.join(", ")}`);
});

Deno.test("loadLazy() loads every wrapper module of lib/lazy/", async () => {
  const names = await wrapperNames();
  assert.deepEqual(names, [
    "acp_sdk",
    "anthropic_sdk",
    "mcp_sdk",
    "mcp_server_sdk",
    "node_html_markdown",
    "openai_sdk",
    "picomatch",
    "re2js",
    "tree_sitter_bash",
  ]);
  for (const name of names) {
    const module = await loadLazy(name as keyof LazyModules);
    assert(Object.keys(module).length > 0, `${name} exports nothing`);
  }
  const { default: OpenAI } = await loadLazy("openai_sdk");
  assert.equal(typeof OpenAI, "function");
  const { default: Anthropic, APIError } = await loadLazy("anthropic_sdk");
  assert.equal(typeof Anthropic, "function");
  assert.equal(typeof APIError, "function");
  const { Client, StreamableHTTPError, JSONRPCMessageSchema } = await loadLazy("mcp_sdk");
  assert.equal(typeof Client, "function");
  assert.equal(typeof StreamableHTTPError, "function");
  assert(JSONRPCMessageSchema.safeParse({ jsonrpc: "2.0", id: 1, method: "ping" }).success);
  const { Parser, grammar, runtime } = await loadLazy("tree_sitter_bash");
  assert.equal(typeof Parser, "function");
  assert(grammar instanceof WebAssembly.Module && runtime instanceof WebAssembly.Module);
  const { default: picomatch } = await loadLazy("picomatch");
  assert(picomatch("*.ts")("a.ts"));
  const { NodeHtmlMarkdown } = await loadLazy("node_html_markdown");
  assert.equal(NodeHtmlMarkdown.translate("<b>x</b>"), "**x**");
  const { agent, client, PROTOCOL_VERSION } = await loadLazy("acp_sdk");
  assert.equal(typeof agent, "function");
  assert.equal(typeof client, "function");
  assert.equal(PROTOCOL_VERSION, 1);
  const { McpServer, StdioServerTransport, WebStandardStreamableHTTPServerTransport } =
    await loadLazy("mcp_server_sdk");
  for (const made of [McpServer, StdioServerTransport, WebStandardStreamableHTTPServerTransport]) {
    assert.equal(typeof made, "function");
  }
});

Deno.test("the npm packages loadLazy() falls back on are those of deno.json's imports", () => {
  const imports: Record<string, string> = denoJson.imports;
  const specifiers = Object.values(LAZY_NPM).flat().map((entry) => entry.replace(/^\w+=/, ""));
  for (const specifier of specifiers) {
    const [, name] = specifier.match(/^npm:((?:@[^/]+\/)?[^@/]+)@/)!;
    assert.equal(
      specifier.startsWith(`${imports[name]}/`) || specifier === imports[name],
      true,
      `${specifier} is not ${imports[name]}`,
    );
  }
});

Deno.test("loadLazy() from a checkout where Deno grants no reading of it gives what each wrapper gives", async () => {
  const project = await Deno.makeTempDir();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", `--allow-read=${project}`, join(ROOT, "tests", "lazy_deps_child.ts")],
    cwd: project,
    stdout: "piped",
    stderr: "piped",
  });
  const { code, stdout, stderr } = await child.output();
  await Deno.remove(project, { recursive: true });
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  const loaded: Record<string, string[]> = JSON.parse(new TextDecoder().decode(stdout));
  for (const name of await wrapperNames()) {
    const wrapper = Object.keys(await loadLazy(name as keyof LazyModules));
    const missing = wrapper.filter((key) => !loaded[name]?.includes(key));
    assert.deepEqual(missing, [], `${name} without reading lib/lazy/ lacks ${missing.join(", ")}`);
  }
});
