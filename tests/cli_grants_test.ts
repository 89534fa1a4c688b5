/**
 * The CLI under partial Deno grants, as a child process against the loopback mock server: what
 * it says at the start names the flag that is missing, commands stop cleanly without a grant to
 * kill processes, and settings a model cannot use are reported, not dropped in silence.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { detectSandbox } from "../lib/sandbox/detect.ts";
import { childEnv, MOD, tempDir } from "./terminal_support.ts";

// deno-lint-ignore no-explicit-any
type Event = { type: string } & Record<string, any>;

interface CliRun {
  code: number;
  stderr: string;
  events: Event[];
}

/** One headless run (`--output stream-json`) with these permission flags and arguments. */
async function runCli(
  server: MockServer,
  permissions: string[],
  args: string[],
  env: Record<string, string> = {},
): Promise<CliRun> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...permissions, MOD, "--output", "stream-json", ...args],
    env: await childEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url, ...env }),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  return {
    code: output.code,
    stderr: new TextDecoder().decode(output.stderr),
    events: stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line)),
  };
}

/** Everything but running programs other than bash. */
function bashOnly(cwd: string): string[] {
  return ["--allow-read", `--allow-write=${cwd}`, "--allow-net", "--allow-env", "--allow-run=bash"];
}

const bwrap = await detectSandbox();
const NEEDS_BWRAP = { ignore: !bwrap.available };

Deno.test({
  name: "cli grants: bubblewrap installed but not granted, the notice names --allow-run=bwrap",
  ...NEEDS_BWRAP,
  async fn() {
    const cwd = await tempDir();
    await using server = startMockOpenAIServer({ replies: () => ({ text: "done" }) });
    const run = await runCli(server, bashOnly(cwd), ["-m", "openai/test", "--cwd", cwd, "hi"]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /commands run without a sandbox: .*--allow-run=bwrap/);
    assert.doesNotMatch(run.stderr, /install bubblewrap/);
    assert.equal(run.events[0].sandbox.kind, "none");
    assert.match(run.events[0].sandbox.reason, /Deno does not grant running .*bwrap/);

    // Required: every command is refused with the same remedy.
    await using strict = startMockOpenAIServer({
      replies: [{ toolCalls: [{ name: "bash", arguments: { command: "touch ran.txt" } }] }, {
        text: "done",
      }],
    });
    const refused = await runCli(strict, bashOnly(cwd), [
      "-m",
      "openai/test",
      "--cwd",
      cwd,
      "--sandbox",
      "required",
      "go",
    ]);
    assert.equal(refused.code, 0, refused.stderr);
    const result = refused.events.find((event) => event.type === "tool_result")!;
    assert.equal(result.isError, true);
    assert.match(result.output, /--allow-run=bwrap/);
    assert.doesNotMatch(result.output, /install bubblewrap/);
    assert.equal(await Deno.stat(join(cwd, "ran.txt")).catch(() => undefined), undefined);
  },
});

/** Whether a process is still running (a zombie is not). */
async function running(pid: number): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

Deno.test("cli grants: with --allow-run=bash alone, background jobs still end with the command", async () => {
  const cwd = await tempDir();
  await using server = startMockOpenAIServer({
    replies: [
      {
        toolCalls: [{
          name: "bash",
          arguments: { command: "sleep 300 & echo $! > job.pid; echo started" },
        }],
      },
      { text: "done" },
    ],
  });
  const run = await runCli(server, bashOnly(cwd), [
    "-m",
    "openai/test",
    "--cwd",
    cwd,
    "--sandbox",
    "off",
    "go",
  ]);
  assert.equal(run.code, 0, run.stderr);
  const result = run.events.find((event) => event.type === "tool_result")!;
  assert.equal(result.output, "started\n[exit code 0]");
  const job = Number(await Deno.readTextFile(join(cwd, "job.pid")));
  try {
    // Stopped when the command returned: gone by now, or within moments.
    for (let tries = 0; tries < 100 && await running(job); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(await running(job), false, "the background job outlived the command");
  } finally {
    if (await running(job)) Deno.kill(job, "SIGKILL");
  }
});

Deno.test("cli grants: with --allow-run=bash alone, a timeout kills a command that ignores SIGTERM", async () => {
  const cwd = await tempDir();
  await using server = startMockOpenAIServer({
    replies: [
      {
        toolCalls: [{
          name: "bash",
          arguments: { command: "trap '' TERM; echo $$ > shell.pid; sleep 300", timeout: 1000 },
        }],
      },
      { text: "done" },
    ],
  });
  const run = await runCli(server, bashOnly(cwd), [
    "-m",
    "openai/test",
    "--cwd",
    cwd,
    "--sandbox",
    "off",
    "go",
  ]);
  assert.equal(run.code, 0, run.stderr);
  const result = run.events.find((event) => event.type === "tool_result")!;
  assert.equal(result.output, "[killed: timed out after 1 s]");
  const shell = Number(await Deno.readTextFile(join(cwd, "shell.pid")));
  try {
    assert.equal(await running(shell), false, "the command outlived its timeout");
  } finally {
    if (await running(shell)) Deno.kill(shell, "SIGKILL");
  }
});
