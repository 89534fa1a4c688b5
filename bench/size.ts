/**
 * What a user's first run downloads. The files `deno publish` ships (the `publish` include and
 * exclude of deno.json; no deno.lock, as a JSR user gets them) are copied to a temporary
 * directory, and the CLI runs there once per scenario, each time with a fresh, empty `DENO_DIR`,
 * against a loopback mock server: a one-turn answer from an OpenAI-compatible model, the same
 * from an Anthropic model, and an answer after one `bash` call under a
 * `--deny "bash(rm *)"` rule (which needs the Bash parser).
 * For each it prints the npm packages downloaded, the bytes on disk in `DENO_DIR` (apparent
 * size), the bytes downloaded, and the ten largest packages.
 *
 * The bytes downloaded are counted by a loopback proxy the run reaches the registry through
 * (`HTTPS_PROXY`; a proxy of the environment is chained): everything received, tarballs and
 * package metadata, as it came over the wire. Deno keeps no tarball sizes (its `registry.json`
 * holds no `dist.unpackedSize` or tarball size), so nothing finer is reported.
 *
 * Run with `deno task size [--root <checkout>] [--only <scenario words>]`; `--root` measures
 * another checkout (a git worktree of an earlier commit) with this script.
 *
 * @module
 */

import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startMockAnthropicServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { type CountingProxy, startCountingProxy } from "./counting_proxy.ts";
import { type Measure, measureDenoDir } from "./deno_dir.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: { root: { type: "string" }, only: { type: "string" } },
});
const ROOT = resolve(flags.root ?? fileURLToPath(new URL("..", import.meta.url)));

/** Variables the runs keep from this environment: the way to the registry, and nothing else. */
const PASSED_ENV = [
  "PATH",
  "HTTP_PROXY",
  "http_proxy",
  "NO_PROXY",
  "no_proxy",
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "DENO_CERT",
  "DENO_TLS_CA_STORE",
  "NPM_CONFIG_REGISTRY",
  "npm_config_registry",
];

/** One first run: its CLI arguments and variables, and a check of what it answered. */
interface Scenario {
  name: string;
  args(urls: Urls): string[];
  env: Record<string, string>;
  check(stdout: string, urls: Urls): string | undefined;
}

interface Urls {
  openai: string;
  anthropic: string;
}

const ALL_SCENARIOS: Scenario[] = [
  {
    name: "openai, one turn",
    args: (urls) => ["-m", "openai/mock", "--base-url", urls.openai, "say hello"],
    env: { OPENAI_API_KEY: "sk-size" },
    check: (stdout) => stdout.includes("Hello from the mock") ? undefined : "no answer",
  },
  {
    name: "anthropic, one turn",
    args: (urls) => ["-m", "anthropic/mock", "--base-url", urls.anthropic, "say hello"],
    env: { ANTHROPIC_API_KEY: "sk-ant-size" },
    check: (stdout) => stdout.includes("Hello from the mock") ? undefined : "no answer",
  },
  {
    // A rule about commands: the command line is parsed (tree-sitter) before it runs.
    name: "openai, bash call + rule",
    args: (urls) => [
      "-m",
      "openai/mock-bash",
      "--base-url",
      urls.openai,
      "--deny",
      "bash(rm *)",
      "run echo",
    ],
    env: { OPENAI_API_KEY: "sk-size" },
    check: (stdout) => stdout.includes("The command said: lazy") ? undefined : "bash did not run",
  },
];
const SCENARIOS = ALL_SCENARIOS.filter((scenario) =>
  !flags.only || scenario.name.includes(flags.only)
);

/** Copies what `deno publish` ships of `root` into `target`; returns the number of files. */
async function copyPublished(root: string, target: string): Promise<number> {
  const config = JSON.parse(await Deno.readTextFile(join(root, "deno.json")));
  const include: string[] = config.publish?.include ?? ["."];
  const excluded = (config.publish?.exclude ?? []).map(_globRegExp);
  let count = 0;
  const copy = async (path: string): Promise<void> => {
    const rel = relative(root, path);
    if (rel === "deno.lock" || excluded.some((re: RegExp) => re.test(rel))) return;
    const info = await Deno.lstat(path);
    if (info.isDirectory) {
      if (excluded.some((re: RegExp) => re.test(`${rel}/`))) return;
      for await (const entry of Deno.readDir(path)) await copy(join(path, entry.name));
    } else if (info.isFile) {
      await Deno.mkdir(dirname(join(target, rel)), { recursive: true });
      await Deno.copyFile(path, join(target, rel));
      count++;
    }
  };
  for (const entry of include) await copy(join(root, entry));
  return count;
}

/** A publish glob (`tests/`, `**\/*_test.ts`) as a regular expression over relative paths. */
function _globRegExp(glob: string): RegExp {
  const body = glob.replace(/^\.\//, "").split(/(\*\*\/|\*\*|\*)/).map((part) =>
    part === "**/"
      ? "(?:.*/)?"
      : part === "**"
      ? ".*"
      : part === "*"
      ? "[^/]*"
      : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")
  ).join("");
  return new RegExp(`^${body}${glob.endsWith("/") ? "" : "(?:/|$)"}`);
}

/** The environment of a run: the registry's way through `proxy`, a fresh cache and home. */
function runEnv(proxy: CountingProxy | undefined, dir: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of PASSED_ENV) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  const noProxy = [env.NO_PROXY ?? env.no_proxy, "127.0.0.1", "localhost"].filter(Boolean);
  env.NO_PROXY = env.no_proxy = noProxy.join(",");
  if (proxy) env.HTTPS_PROXY = env.https_proxy = proxy.url;
  else {
    const https = Deno.env.get("HTTPS_PROXY") ?? Deno.env.get("https_proxy");
    if (https) env.HTTPS_PROXY = https;
  }
  env.DENO_DIR = join(dir, "deno_dir");
  env.HOME = join(dir, "home");
  env.XDG_CONFIG_HOME = join(dir, "home", ".config");
  env.XDG_DATA_HOME = join(dir, "home", ".local", "share");
  env.XDG_CACHE_HOME = join(dir, "home", ".cache");
  env.DENO_NO_UPDATE_CHECK = "1";
  env.NO_COLOR = "1";
  return env;
}

/** The proxy the environment names for HTTPS, when the counting proxy can chain to it. */
function upstreamProxy(): { url?: URL; unusable?: string } {
  const named = Deno.env.get("HTTPS_PROXY") ?? Deno.env.get("https_proxy");
  if (!named) return {};
  const url = new URL(named.includes("://") ? named : `http://${named}`);
  if (url.protocol !== "http:") return { unusable: `HTTPS_PROXY is ${url.protocol}` };
  return { url };
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

async function main(): Promise<void> {
  const temp = await Deno.makeTempDir({ prefix: "agent-size-" });
  const pkg = join(temp, "package");
  const files = await copyPublished(ROOT, pkg);
  const upstream = upstreamProxy();
  const proxy = upstream.unusable ? undefined : startCountingProxy(upstream.url);
  const openai = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content?: unknown }>;
      if (body.model !== "mock-bash") return { text: "Hello from the mock." };
      const result = messages.find((message) => message.role === "tool");
      return result
        ? { text: `The command said: ${String(result.content).trim()}` }
        : { toolCalls: [{ name: "bash", arguments: { command: "echo lazy" } }] };
    },
  });
  const anthropic = startMockAnthropicServer({ replies: () => ({ text: "Hello from the mock." }) });
  const urls = { openai: openai.url, anthropic: anthropic.url };
  const results: Array<{ scenario: Scenario; measure: Measure; downloaded?: number; ms: number }> =
    [];
  try {
    for (const scenario of SCENARIOS) {
      const dir = join(temp, scenario.name.replace(/\W+/g, "_"));
      const work = join(dir, "work");
      await Deno.mkdir(work, { recursive: true });
      proxy?.reset();
      const started = performance.now();
      const output = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "--no-lock",
          "--config",
          join(pkg, "deno.json"),
          join(pkg, "mod.ts"),
          "--no-session",
          ...scenario.args(urls),
        ],
        cwd: work,
        clearEnv: true,
        env: { ...runEnv(proxy, dir), ...scenario.env },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const ms = performance.now() - started;
      const stdout = new TextDecoder().decode(output.stdout);
      const stderr = new TextDecoder().decode(output.stderr);
      const wrong = output.code !== 0 ? `exit code ${output.code}` : scenario.check(stdout, urls);
      if (wrong) {
        throw new Error(
          `${scenario.name}: ${wrong}\nstdout: ${stdout}\nstderr: ${stderr.slice(-3000)}`,
        );
      }
      const measure = await measureDenoDir(join(dir, "deno_dir"));
      const received = proxy?.received() ?? 0;
      results.push({
        scenario,
        measure,
        downloaded: received > 0 || measure.packages.length === 0 ? received : undefined,
        ms,
      });
    }
  } finally {
    await openai.close();
    await anthropic.close();
    await proxy?.close();
    await Deno.remove(temp, { recursive: true }).catch(() => {});
  }
  report(results, files, upstream.unusable);
}

function report(
  results: Array<{ scenario: Scenario; measure: Measure; downloaded?: number; ms: number }>,
  files: number,
  unusable: string | undefined,
): void {
  const out: string[] = [];
  out.push(
    `First run on an empty cache: deno run -A mod.ts of the ${files} files deno publish ships ` +
      `(${relative(Deno.cwd(), ROOT) || "."}), a fresh DENO_DIR, no lockfile, a loopback model.`,
    "",
  );
  const rows = [[
    "run",
    "packages",
    "metadata only",
    "DENO_DIR on disk",
    "npm on disk",
    "downloaded",
    "time",
  ]];
  for (const { scenario, measure, downloaded, ms } of results) {
    rows.push([
      scenario.name,
      String(measure.packages.length),
      String(measure.metadataOnly.length),
      mib(measure.diskBytes),
      mib(measure.npmBytes),
      downloaded === undefined ? "not measured" : mib(downloaded),
      `${(ms / 1000).toFixed(1)} s`,
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  for (const row of rows) {
    out.push(
      row.map((cell, i) => i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i])).join("  "),
    );
  }
  out.push(
    "",
    "packages: npm packages extracted into DENO_DIR; on disk: apparent size; downloaded: bytes " +
      "received from the registry (tarballs and metadata, compressed, TLS) through a counting proxy" +
      (unusable ? ` (not measured: ${unusable})` : ""),
  );
  for (const { scenario, measure } of results) {
    out.push("", `${scenario.name}: the 10 largest packages (apparent size in DENO_DIR/npm)`);
    const top = measure.largest.slice(0, 10);
    for (const { label, bytes } of top) out.push(`  ${mib(bytes).padStart(9)}  ${label}`);
    const shown = new Set(top.map((big) => big.name));
    const rest = measure.packages.filter((found) =>
      !shown.has(found.slice(0, found.lastIndexOf("@")))
    );
    if (rest.length) out.push(`  and ${rest.length} more: ${rest.join(" ")}`);
    if (measure.metadataOnly.length) out.push(`  metadata only: ${measure.metadataOnly.join(" ")}`);
  }
  console.log(out.join("\n"));
}

if (import.meta.main) await main();
