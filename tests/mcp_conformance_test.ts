/**
 * The MCP client under the official conformance suite, pinned: for each client scenario it
 * passes, the suite starts its test server, runs `mcp_conformance_client.ts` against it, and
 * judges what the client did. The suite and the adapter are downloaded and compiled once, by the
 * tests' own Deno and environment (TLS, proxy, cache), before any scenario's deadline runs.
 *
 * @module
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { fileURLToPath as fromFileUrl } from "node:url";

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

/** What the suite said of a scenario: its exit, its output, and its checks. */
interface Verdict {
  success: boolean;
  output: string;
  checks: Check[];
}

/** Runs the suite on one client scenario, with results in a directory of its own. */
async function runScenario(scenario: string): Promise<Verdict> {
  const results = await Deno.makeTempDir({ prefix: "mcp_conformance_" });
  try {
    const command = `"${Deno.execPath()}" run -A --config "${CONFIG}" "${ADAPTER}"`;
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--no-config",
        "--no-lock",
        SUITE,
        "client",
        "--command",
        command,
        "--scenario",
        scenario,
        "--timeout",
        "20000",
        "--output-dir",
        results,
      ],
      cwd: results,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(40_000),
    }).output();
    const decoder = new TextDecoder();
    // The suite colours its report; its words are what count.
    const colours = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
    const output = `${decoder.decode(out.stdout)}${decoder.decode(out.stderr)}`.replace(
      colours,
      "",
    );
    const checks: Check[] = [];
    for await (const entry of Deno.readDir(results)) {
      if (!entry.isDirectory || !entry.name.startsWith(`${scenario}-`)) continue;
      const dir = `${results}/${entry.name}`;
      checks.push(...JSON.parse(await Deno.readTextFile(`${dir}/checks.json`)) as Check[]);
    }
    return { success: out.success, output, checks };
  } finally {
    await Deno.remove(results, { recursive: true });
  }
}

/** Asserts the suite passed `scenario`, with every check of `required` a success. */
async function assertPasses(scenario: string, required: string[]): Promise<void> {
  const { success, output, checks } = await runScenario(scenario);
  const shown = `\n--- the suite's output ---\n${output}`;
  assert.ok(success, `the suite failed ${scenario}${shown}`);
  assert.match(output, /OVERALL: PASSED/, shown);
  const failed = checks.filter((check) => check.status === "FAILURE");
  assert.deepEqual(failed, [], shown);
  for (const id of required) {
    assert.equal(checks.find((check) => check.id === id)?.status, "SUCCESS", `${id}${shown}`);
  }
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
});
