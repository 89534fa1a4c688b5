import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { runToolCall } from "../lib/tool_runner.ts";
import type { ToolContext, ToolOutput } from "../mod.ts";
import { toolRegistry } from "../lib/tool.ts";
import { type BashToolOptions, createBashTool } from "../tools/bash.ts";

const context = (cwd: string, signal = new AbortController().signal): ToolContext => ({
  cwd,
  signal,
  toolCallId: "t1",
});

async function bash(
  input: { command: string; timeout?: number },
  ctx: ToolContext,
  options: BashToolOptions = {},
): Promise<ToolOutput> {
  const tool = createBashTool({ killGraceMs: 300, ...options });
  const checked = tool.parse!(input);
  assert.ok(checked.success, "the input fits the schema");
  const result = await tool.execute(checked.data, ctx);
  assert.ok(typeof result !== "string");
  return result;
}

/** Whether a process still runs: it exists and is not a zombie waiting to be reaped. */
function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z /.test(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return false;
  }
}

async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 50 && alive(pid); i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return !alive(pid);
}

async function readPid(dir: string, name: string): Promise<number> {
  const pid = Number((await Deno.readTextFile(join(dir, name))).trim());
  assert.ok(pid > 0, `${name} holds a pid`);
  return pid;
}

Deno.test("createBashTool() runs the command in ctx.cwd", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    const result = await bash({ command: "pwd; echo made > out.txt" }, context(dir));
    assert.equal(result.output, `${dir}\n[exit code 0]`);
    assert.equal(result.isError, false);
    assert.equal(await Deno.readTextFile(join(dir, "out.txt")), "made\n");
    assert.equal(result.metadata?.exitCode, 0);
    assert.equal(result.metadata?.timedOut, false);
    assert.equal(typeof result.metadata?.durationMs, "number");
    assert.match(result.display ?? "", /^\$ pwd; echo made > out\.txt {2}\(exit code 0, /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createBashTool() merges stdout and stderr in the order written", async () => {
  const result = await bash({ command: "echo a; echo b >&2; echo c" }, context(Deno.cwd()));
  assert.equal(result.output, "a\nb\nc\n[exit code 0]");
});

Deno.test("createBashTool() reports a non-zero exit code as an error", async () => {
  const result = await bash({ command: "echo oops; exit 3" }, context(Deno.cwd()));
  assert.equal(result.output, "oops\n[exit code 3]");
  assert.equal(result.isError, true);
  assert.equal(result.metadata?.exitCode, 3);
  const silent = await bash({ command: "false" }, context(Deno.cwd()));
  assert.equal(silent.output, "[exit code 1]");
  const syntax = await bash({ command: "if then" }, context(Deno.cwd()));
  assert.equal(syntax.isError, true);
  assert.match(syntax.output, /line 1: syntax error/);
});

Deno.test("createBashTool() kills the whole process group on timeout", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const started = performance.now();
    const result = await bash({
      // A background job, and one that ignores SIGTERM and needs SIGKILL.
      command:
        "sleep 100 & echo $! > bg.pid; (trap '' TERM; exec sleep 100) & echo $! > stubborn.pid;" +
        " echo waiting; sleep 100",
      timeout: 300,
    }, context(dir));
    const elapsed = performance.now() - started;
    assert.equal(result.output, "waiting\n[killed: timed out after 0.3 s]");
    assert.equal(result.isError, true);
    assert.equal(result.metadata?.timedOut, true);
    assert.equal(result.metadata?.exitCode, null);
    assert.ok(elapsed < 3_000, `returned after ${elapsed} ms`);
    assert.ok(await gone(await readPid(dir, "bg.pid")), "the background sleep is gone");
    assert.ok(await gone(await readPid(dir, "stubborn.pid")), "the SIGTERM-proof sleep is gone");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createBashTool() stops the command promptly when the signal aborts", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 200);
    const started = performance.now();
    const result = await bash(
      { command: "sleep 100 & echo $! > bg.pid; wait" },
      context(dir, controller.signal),
    );
    clearTimeout(timer);
    assert.ok(performance.now() - started < 2_000);
    assert.equal(result.output, "[killed: cancelled]");
    assert.equal(result.isError, true);
    assert.equal(result.metadata?.timedOut, false);
    assert.ok(await gone(await readPid(dir, "bg.pid")));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createBashTool() stops background jobs left when the command returns", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const started = performance.now();
    const result = await bash({ command: "sleep 100 & echo $! > bg.pid; echo done" }, context(dir));
    // Far less than the 100 s the process left behind would hold it, even on a busy machine.
    assert.ok(performance.now() - started < 10_000, `${performance.now() - started} ms`);
    assert.equal(result.output, "done\n[exit code 0]");
    assert.ok(await gone(await readPid(dir, "bg.pid")));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createBashTool() returns even when a process outside the group holds the pipe", async () => {
  const dir = await Deno.makeTempDir();
  let escaped = 0;
  try {
    const started = performance.now();
    // setsid leaves the process group, so the kill misses it, and it keeps stdout open.
    const result = await bash(
      { command: "setsid sleep 30 & echo $! > escaped.pid; echo left" },
      context(dir),
    );
    escaped = await readPid(dir, "escaped.pid");
    // Far less than the 30 s the escaped process holds the pipe, even on a busy machine.
    assert.ok(performance.now() - started < 10_000, `${performance.now() - started} ms`);
    assert.equal(result.output, "left\n[exit code 0]");
  } finally {
    if (escaped) Deno.kill(escaped, "SIGKILL");
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createBashTool() keeps the head and tail of long output without holding it all", async () => {
  const started = performance.now();
  const huge = await bash(
    { command: "yes | head -c 50000000" },
    context(Deno.cwd()),
    { maxOutputChars: 1_000 },
  );
  assert.ok(performance.now() - started < 15_000, "50 MB streamed through quickly");
  assert.match(
    huge.output,
    /^(y\n){250}\n\n\[… 49999000 bytes of output cut …\]\n\n(y\n){250}\[exit code 0\]$/,
  );
  assert.equal(huge.isError, false);

  const numbers = await bash({ command: "seq 1 100000" }, context(Deno.cwd()), {
    maxOutputChars: 100,
  });
  const [head, tail] = numbers.output.split(/\n\n\[… \d+ bytes of output cut …\]\n\n/);
  assert.ok(head.startsWith("1\n2\n3\n"));
  assert.ok(tail.endsWith("99999\n100000\n[exit code 0]"));
  const total = new TextEncoder().encode(
    Array.from({ length: 100000 }, (_, i) => `${i + 1}\n`).join(""),
  ).length;
  assert.ok(numbers.output.includes(`[… ${total - 100} bytes of output cut …]`));
});

Deno.test("createBashTool() decodes output as UTF-8 leniently", async () => {
  const result = await bash({ command: "printf 'caf\\303\\251 \\377\\n'" }, context(Deno.cwd()));
  assert.equal(result.output, "café \uFFFD\n[exit code 0]");
});

Deno.test("createBashTool() refuses a timeout above the maximum", async () => {
  const tool = createBashTool({ maxTimeoutMs: 10_000 });
  assert.equal(tool.parse!({ command: "true", timeout: 10_001 }).success, false);
  assert.equal(tool.parse!({ command: "true", timeout: 10_000 }).success, true);
  assert.ok(tool.timeoutMs !== undefined && tool.timeoutMs > 10_000);
  const result = await runToolCall(
    { type: "tool_call", id: "c1", name: "bash", input: { command: "true", timeout: 60_000 } },
    toolRegistry([tool]),
    { cwd: Deno.cwd(), signal: new AbortController().signal },
  );
  assert.equal(result.isError, true);
  assert.match(result.output, /invalid arguments for "bash"[\s\S]*timeout/);
});

Deno.test("createBashTool() explains a missing shell", async () => {
  const tool = createBashTool({ shell: "/no/such/bash" });
  const result = await runToolCall(
    { type: "tool_call", id: "c1", name: "bash", input: { command: "true" } },
    toolRegistry([tool]),
    { cwd: Deno.cwd(), signal: new AbortController().signal },
  );
  assert.equal(result.isError, true);
  assert.equal(
    result.output,
    'Error: The shell "/no/such/bash" was not found: install it or configure another shell.',
  );
});

Deno.test("createBashTool() passes extra environment variables", async () => {
  const result = await bash({ command: 'echo "$GREETING"' }, context(Deno.cwd()), {
    env: { GREETING: "hello" },
  });
  assert.equal(result.output, "hello\n[exit code 0]");
});

Deno.test("bash under a grant of the shell alone: a timeout still ends the command when no process can start", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "bash_nofork_" }));
  try {
    // A shell of the test's own, granted by path; the command removes it, so that the shell the
    // kill would start cannot start (as when the user's process limit is reached).
    const shell = join(dir, "bash");
    await Deno.copyFile(await Deno.realPath("/bin/bash"), shell);
    await Deno.chmod(shell, 0o755);
    const script = join(dir, "run.ts");
    await Deno.writeTextFile(
      script,
      `import { createBashTool } from ${
        JSON.stringify(new URL("../tools/bash.ts", import.meta.url).href)
      };
const tool = createBashTool({ shell: ${JSON.stringify(shell)}, killGraceMs: 200 });
const result = await tool.execute({ command: "rm -f ${shell}; sleep 30", timeout: 1000 },
  { cwd: ${JSON.stringify(dir)}, signal: new AbortController().signal, toolCallId: "t" });
console.log(JSON.stringify(result));
`,
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        `--allow-read`,
        `--allow-write=${dir}`,
        `--allow-env`,
        `--allow-run=${shell}`,
        "--config",
        new URL("../deno.json", import.meta.url).pathname,
        script,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    const result = JSON.parse(new TextDecoder().decode(output.stdout));
    assert.match(result.output, /\[killed: timed out after 1(\.0)? s\]/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
