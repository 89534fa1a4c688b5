/**
 * The doom-loop guard through the real CLI: a model polling a status with the same command goes
 * on while the answer changes, and is stopped when the same command gives the same answer again
 * and again.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { type MockReply, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { MOD } from "./terminal_support.ts";

// deno-lint-ignore no-explicit-any
type Event = { type: string } & Record<string, any>;

/** A status script: `pending (poll n)` until its `ready`th run, then `passed`; runs counted. */
const STATUS_SCRIPT = (ready: number) =>
  `n=$(( $(cat polls 2>/dev/null || echo 0) + 1 )); echo $n > polls\n` +
  `if [ $n -ge ${ready} ]; then echo passed; else echo "pending (poll $n)"; fi\n`;

/** Runs the CLI headless on `cwd` against a model that sends `replies`; the events it printed. */
async function runPolling(cwd: string, replies: MockReply[]) {
  const data = await Deno.makeTempDir({ prefix: "agent_data_" });
  await using server = startMockOpenAIServer({ replies });
  try {
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        MOD,
        "-m",
        "openai/test",
        "--cwd",
        cwd,
        "--no-memory",
        "--sandbox",
        "off",
        "--output",
        "stream-json",
        "wait for CI",
      ],
      env: {
        HOME: Deno.env.get("HOME")!,
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        DENO_DIR: Deno.env.get("DENO_DIR")!,
        AGENT_DATA_DIR: data,
        OPENAI_API_KEY: "sk-test",
        OPENAI_BASE_URL: server.url,
        NO_COLOR: "1",
      },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const events: Event[] = new TextDecoder().decode(output.stdout).trim().split("\n")
      .filter(Boolean).map((line) => JSON.parse(line));
    return { code: output.code, stderr: new TextDecoder().decode(output.stderr), events };
  } finally {
    await Deno.remove(data, { recursive: true });
  }
}

const POLL = { name: "bash", arguments: { command: "sh status.sh" } };

Deno.test("cli repeat guard: polling the same command goes on while its output changes", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_cwd_" }));
  try {
    await Deno.writeTextFile(join(cwd, "status.sh"), STATUS_SCRIPT(6));
    const run = await runPolling(cwd, [
      ...Array.from({ length: 6 }, (): MockReply => ({ toolCalls: [POLL] })),
      { text: "CI passed." },
    ]);
    assert.equal(run.code, 0, run.stderr);
    const outputs = run.events.filter((e) => e.type === "tool_result").map((e) => e.output);
    assert.equal(outputs.length, 6);
    assert.match(outputs[4], /^pending \(poll 5\)\n/);
    assert.match(outputs[5], /^passed\n/);
    assert.ok(!run.events.some((e) => e.type === "notice"), "no repeat was flagged");
    assert.equal(run.events.at(-1)?.status, "success");
    assert.equal(run.events.at(-1)?.text, "CI passed.");
    assert.equal((await Deno.readTextFile(join(cwd, "polls"))).trim(), "6");
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
});

Deno.test("cli repeat guard: the same command with the same output is stopped at the fourth call", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_cwd_" }));
  try {
    // Ready at the second poll: "passed" from then on, the same each time.
    await Deno.writeTextFile(join(cwd, "status.sh"), STATUS_SCRIPT(2));
    const run = await runPolling(cwd, [
      ...Array.from({ length: 8 }, (): MockReply => ({ toolCalls: [POLL] })),
      { text: "never reached" },
    ]);
    assert.equal(run.code, 1, run.stderr);
    const outputs = run.events.filter((e) => e.type === "tool_result").map((e) => e.output);
    // pending, then "passed" four times: the third is flagged, the fourth stops the run.
    assert.equal(outputs.length, 5);
    assert.match(outputs[0], /^pending \(poll 1\)\n/);
    assert.match(outputs[3], /\[You have made this exact call 3 times in a row .* same result/);
    assert.match(outputs[4], /^passed\n[^]*\[The run stopped: "bash" was called 4 times in a row/);
    const notices = run.events.filter((e) => e.type === "notice").map((e) => e.kind);
    assert.deepEqual(notices, ["doom_loop"]);
    const result = run.events.at(-1)!;
    assert.equal(result.status, "error");
    assert.match(result.error.message, /4 times in a row with the same input and gave the same/);
    assert.equal((await Deno.readTextFile(join(cwd, "polls"))).trim(), "5");
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
});
