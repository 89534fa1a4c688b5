/**
 * The MCP client under the official conformance suite, pinned: for each client scenario it
 * passes, the suite starts its test server, runs `mcp_conformance_client.ts` against it, and
 * judges what the client did. The server scenarios that apply to `agent mcp --port` run against
 * it through a loopback proxy that adds its bearer token, which the suite cannot send. The suite
 * and the adapter are downloaded and compiled once, by the tests' own Deno and environment (TLS,
 * proxy, cache), before any scenario's deadline runs.
 *
 * @module
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { request } from "node:http";
import { Readable } from "node:stream";
import { fileURLToPath as fromFileUrl } from "node:url";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { mockReply, startHttpServer } from "./agent_mcp_support.ts";

/** The conformance suite, pinned. */
const SUITE = "npm:@modelcontextprotocol/conformance@0.1.16";
const CONFIG = fromFileUrl(new URL("../deno.json", import.meta.url));
const ADAPTER = fromFileUrl(new URL("./mcp_conformance_client.ts", import.meta.url));

/** Runs `deno` with `args`, and throws with its stderr when it fails. */
async function _deno(args: string[]): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const stderr = new TextDecoder().decode(out.stderr).slice(-2000);
    throw new Error(`deno ${args.join(" ")} failed: ${stderr}`);
  }
}

// `--no-config --no-lock`: the suite has nothing to do with this project's deno.json and lockfile.
await _deno(["cache", "--no-config", "--no-lock", SUITE]);
await _deno(["cache", "--config", CONFIG, ADAPTER]);

/** One check of the suite's `checks.json`. */
interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
  errorMessage?: string;
}

/**
 * What the suite said of a scenario: its exit, its output, how many of its checks passed of
 * how many (-1 when it did not say all passed), and its checks.
 */
interface Verdict {
  success: boolean;
  output: string;
  passed: number;
  of: number;
  checks: Check[];
}

/** Runs the suite with `args` in `results`: whether it exited 0, and what it printed. */
async function _suite(
  args: string[],
  results: string,
): Promise<{ success: boolean; output: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-config", "--no-lock", SUITE, ...args, "--output-dir", results],
    cwd: results,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(90_000),
  }).output();
  const decoder = new TextDecoder();
  // The suite colours its report; its words are what count.
  const colours = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
  const output = `${decoder.decode(out.stdout)}${decoder.decode(out.stderr)}`.replace(colours, "");
  return { success: out.success, output };
}

/**
 * What the suite saved for `saved` under `results` (`auth/x` as `auth/x-<time>`): its checks, and
 * what the client printed.
 */
async function _saved(
  results: string,
  saved: string,
): Promise<{ checks: Check[]; stdout: string; stderr: string }> {
  const [folder, name] = /^(?:(.*)\/)?([^/]*)$/.exec(`${saved}-`)!.slice(1).map((part) =>
    part ?? ""
  );
  const within = folder ? `${results}/${folder}` : results;
  const found = { checks: [] as Check[], stdout: "", stderr: "" };
  const text = (path: string) => Deno.readTextFile(path).catch(() => "");
  for await (const entry of Deno.readDir(within)) {
    if (!entry.isDirectory || !entry.name.startsWith(name)) continue;
    const dir = `${within}/${entry.name}`;
    found.checks.push(...JSON.parse(await Deno.readTextFile(`${dir}/checks.json`)) as Check[]);
    found.stdout += await text(`${dir}/stdout.txt`);
    found.stderr += await text(`${dir}/stderr.txt`);
  }
  return found;
}

/** The client the suite runs: the adapter, by the tests' Deno with the project's configuration. */
const _CLIENT = `"${Deno.execPath()}" run -A --config "${CONFIG}" "${ADAPTER}"`;

/**
 * Runs the suite on one scenario, with results in a directory of its own: a client scenario
 * against the adapter, or a server scenario against the server at `server`.
 */
async function runScenario(scenario: string, server?: string): Promise<Verdict> {
  const results = await Deno.makeTempDir({ prefix: "mcp_conformance_" });
  try {
    const mode = server === undefined
      ? ["client", "--command", _CLIENT, "--timeout", "20000"]
      : ["server", "--url", server];
    const { success, output } = await _suite([...mode, "--scenario", scenario], results);
    const [, passed, of, failed] = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(output) ?? [];
    // A server scenario is saved as `server-<scenario>`, `server-initialize` too.
    const saved = server === undefined ? scenario : `server-${scenario}`;
    return {
      success,
      output,
      passed: failed === "0" ? Number(passed) : -1,
      of: failed === "0" ? Number(of) : -1,
      checks: (await _saved(results, saved)).checks,
    };
  } finally {
    await Deno.remove(results, { recursive: true });
  }
}

/** The client scenarios in which the client is to fail (the suite's `allowClientError`). */
const _CLIENT_FAILS = new Set(["auth/scope-retry-limit", "auth/resource-mismatch"]);

/**
 * Runs the client scenarios of one of the suite's own suites (`auth`) in one run of the suite,
 * which runs them at once: whether it exited 0, and a verdict for each scenario it reports. In
 * that mode the suite judges only each scenario's checks and warnings, so a scenario's verdict
 * also asks for the client's own word that nothing failed (the client's exit code in a run of
 * one scenario).
 */
async function runClientSuite(
  suite: string,
): Promise<{ success: boolean; output: string; verdicts: Map<string, Verdict> }> {
  const results = await Deno.makeTempDir({ prefix: "mcp_conformance_" });
  try {
    // Its clients start at once, on a machine the other tests share: each gets more time.
    const args = ["client", "--command", _CLIENT, "--timeout", "45000", "--suite", suite];
    const { success, output } = await _suite(args, results);
    const verdicts = new Map<string, Verdict>();
    const reported = /^\S+ (\S+): (\d+) passed, (\d+) failed(?:, (\d+) warnings)?$/gm;
    for (const [line, scenario, passed, failed, warnings] of output.matchAll(reported)) {
      const { checks, stdout, stderr } = await _saved(results, scenario);
      const done = stdout.includes(`nothing failed: ${scenario}`) || _CLIENT_FAILS.has(scenario);
      verdicts.set(scenario, {
        success: failed === "0" && warnings === undefined && done,
        output: `${line}\n--- the client's output ---\n${stdout}${stderr}`,
        passed: Number(passed),
        of: Number(passed) + Number(failed),
        checks,
      });
    }
    return { success, output, verdicts };
  } finally {
    await Deno.remove(results, { recursive: true });
  }
}

/** Asserts the suite passed `scenario`, with every check of `required` a success. */
function assertVerdict(scenario: string, verdict: Verdict, required: string[]): void {
  const { success, output, passed, of, checks } = verdict;
  const shown = `\n--- the suite's output ---\n${output}`;
  assert.ok(success, `the suite failed ${scenario}${shown}`);
  assert.ok(passed >= 0 && passed === of && of > 0, `not all passed${shown}`);
  assert.ok(checks.length > 0, `the suite saved no checks of ${scenario}${shown}`);
  const failed = checks.filter((check) => check.status === "FAILURE");
  assert.deepEqual(failed, [], shown);
  for (const id of required) {
    assert.equal(checks.find((check) => check.id === id)?.status, "SUCCESS", `${id}${shown}`);
  }
}

/** Runs the suite on `scenario` and asserts it passed (see {@link assertVerdict}). */
async function assertPasses(scenario: string, required: string[], server?: string): Promise<void> {
  assertVerdict(scenario, await runScenario(scenario, server), required);
}

Deno.test("the MCP client passes the conformance suite's client scenarios", async (t) => {
  await t.step(
    "initialize: the handshake, with the protocol version and client info",
    () => assertPasses("initialize", ["mcp-client-initialization"]),
  );
  await t.step(
    "tools_call: a stateless server's tool, called by the model",
    () => assertPasses("tools_call", ["tool-add-numbers"]),
  );
  await t.step(
    "sse-retry: a closed SSE stream resumed after its retry delay",
    () =>
      assertPasses("sse-retry", [
        "client-sse-graceful-reconnect",
        "client-sse-retry-timing",
        "client-sse-last-event-id",
      ]),
  );
  await t.step(
    "elicitation-sep1034-client-defaults: a form accepted as it comes carries its defaults",
    () =>
      assertPasses("elicitation-sep1034-client-defaults", [
        "client-elicitation-sep1034-string-default",
        "client-elicitation-sep1034-integer-default",
        "client-elicitation-sep1034-number-default",
        "client-elicitation-sep1034-enum-default",
        "client-elicitation-sep1034-boolean-default",
      ]),
  );
});

Deno.test("the MCP client passes the conformance suite's OAuth scenarios", async (t) => {
  // The suite's own `auth` suite runs its scenarios at once, in one run of the suite (each run
  // of the suite costs about a second of CPU before its scenario starts); the others one by one.
  const { success, output, verdicts: together } = await runClientSuite("auth");
  const scenarios = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/token-endpoint-auth-none",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/scope-from-www-authenticate",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-basic",
  ];
  const unnamed = [...together.keys()].filter((scenario) => !scenarios.includes(scenario));
  assert.deepEqual(unnamed, [], "the auth suite ran scenarios this test does not name");
  assert.ok(together.size >= 10, `the auth suite reported ${together.size} scenarios`);
  for (const scenario of scenarios) {
    await t.step(scenario, async () => {
      const verdict = together.get(scenario) ?? await runScenario(scenario);
      assertVerdict(scenario, verdict, _AUTH_REQUIRED[scenario] ?? []);
    });
  }
  // Every scenario's own verdict passed: so must the run of the suite.
  assert.ok(success, `the suite's run of auth failed:\n${output}`);
});

/** The checks an OAuth scenario must pass (beyond having no failure), by scenario. */
const _AUTH_REQUIRED: Record<string, string[]> = {
  "auth/basic-cimd": ["cimd-client-id-used"],
  "auth/scope-step-up": ["scope-step-up-initial", "scope-step-up-escalation"],
  "auth/scope-retry-limit": ["scope-retry-limit"],
  "auth/offline-access-not-supported": ["sep-2207-offline-access-not-requested"],
};

/**
 * A loopback proxy in front of `agent mcp --port` that adds its bearer token to every request:
 * the suite has no way to send one. The proxy's own address in `Host` and `Origin` becomes the
 * server's, as if the suite had reached the server itself; any other is passed on as it is.
 */
function _tokenProxy(target: URL, token: string): Deno.HttpServer<Deno.NetAddr> {
  const proxy: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (incoming) => {
      const headers: Record<string, string> = {};
      incoming.headers.forEach((value, name) => headers[name] = value);
      headers.authorization = `Bearer ${token}`;
      const own = `127.0.0.1:${proxy.addr.port}`;
      if (headers.host === own) headers.host = target.host;
      if (headers.origin === `http://${own}`) headers.origin = target.origin;
      const { pathname, search } = new URL(incoming.url);
      return new Promise<Response>((resolve, reject) => {
        const outgoing = request({
          host: target.hostname,
          port: target.port,
          method: incoming.method,
          path: pathname + search,
          headers,
        }, (answer) => {
          const back = new Headers();
          for (const [name, value] of Object.entries(answer.headers)) {
            if (value !== undefined) {
              back.set(name, Array.isArray(value) ? value.join(", ") : value);
            }
          }
          const body = Readable.toWeb(answer) as ReadableStream<Uint8Array>;
          resolve(new Response(body, { status: answer.statusCode, headers: back }));
        });
        outgoing.on("error", reject);
        if (incoming.body) Readable.fromWeb(incoming.body as never).pipe(outgoing);
        else outgoing.end();
      });
    },
  );
  return proxy;
}

Deno.test("agent mcp --port passes the conformance suite's server scenarios", async (t) => {
  await using model = startMockOpenAIServer({ replies: mockReply });
  await using server = await startHttpServer(model.url);
  await using proxy = _tokenProxy(new URL(server.url), server.token);
  // 127.0.0.1, the one name the server answers to (it refuses `localhost` as a Host).
  const url = `http://127.0.0.1:${proxy.addr.port}/mcp`;
  await t.step("server-initialize", () => assertPasses("server-initialize", [], url));
  await t.step("ping", () => assertPasses("ping", ["ping"], url));
  await t.step("tools-list", () => assertPasses("tools-list", ["tools-list"], url));
  await t.step(
    "logging-set-level: the session's log level",
    () => assertPasses("logging-set-level", ["logging-set-level"], url),
  );
  await t.step(
    "completion-complete: an answer, with no values for a prompt not offered",
    () => assertPasses("completion-complete", ["completion-complete"], url),
  );
  await t.step(
    "server-sse-multiple-streams: concurrent POST SSE streams",
    () => assertPasses("server-sse-multiple-streams", [], url),
  );
  await t.step(
    "dns-rebinding-protection: a foreign Host or Origin refused",
    () =>
      assertPasses("dns-rebinding-protection", [
        "localhost-host-rebinding-rejected",
        "localhost-host-valid-accepted",
      ], url),
  );
});
