/**
 * The real CLI as a child process (`deno run` with different permission flags) against the
 * loopback mock server.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type MockReply, type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));
// Sessions and memory of these runs go to a directory of their own, not the user's.
Deno.env.set("AGENT_DATA_DIR", await Deno.makeTempDir({ prefix: "agent_test_data_" }));

// deno-lint-ignore no-explicit-any
type Event = { type: string } & Record<string, any>;

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** The stream-json events, when that output was asked for. */
  events: Event[];
}

async function runCli(
  server: MockServer,
  args: string[],
  options: { permissions?: string[]; stdin?: string; env?: Record<string, string> } = {},
): Promise<CliRun> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...(options.permissions ?? ["-A"]), MOD, "-m", "openai/test", ...args],
    env: { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url, NO_COLOR: "1", ...options.env },
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const output = await child.output();
  const stdout = new TextDecoder().decode(output.stdout);
  const events = args.includes("stream-json")
    ? stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line))
    : [];
  return { code: output.code, stdout, stderr: new TextDecoder().decode(output.stderr), events };
}

/** The permission flags of a read-only agent that may reach the mock server. */
function readOnly(dir: string): string[] {
  return [`--allow-read=${dir}`, "--allow-net=127.0.0.1", "--allow-env"];
}

function toolResults(run: CliRun): Event[] {
  return run.events.filter((e) => e.type === "tool_result");
}

/** The result of one call: results of one turn arrive as the calls finish, not in order. */
function resultById(run: CliRun, id: string): Event {
  const result = toolResults(run).find((event) => event.id === id);
  assert.ok(result, `no result for ${id}`);
  return result;
}

async function tempDir(): Promise<string> {
  return await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_e2e_" }));
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("cli e2e: reads, edits and runs a command to finish a task", async () => {
  const dir = await tempDir();
  await Deno.writeTextFile(join(dir, "app.txt"), "greeting = hello\nlimit = 1\n");
  const replies: MockReply[] = [
    { toolCalls: [{ name: "read", arguments: { path: "app.txt" } }] },
    {
      toolCalls: [{
        name: "edit",
        arguments: { path: "app.txt", old_string: "limit = 1", new_string: "limit = 2" },
      }],
    },
    {
      toolCalls: [{
        name: "bash",
        arguments: { command: "grep limit app.txt && echo checked > ran.txt" },
      }],
    },
    { text: "Raised the limit to 2." },
  ];
  await using server = startMockOpenAIServer({ replies });
  const run = await runCli(server, ["--cwd", dir, "--output", "stream-json", "raise the limit"]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(await Deno.readTextFile(join(dir, "app.txt")), "greeting = hello\nlimit = 2\n");
  assert.equal(await Deno.readTextFile(join(dir, "ran.txt")), "checked\n");
  const results = toolResults(run);
  assert.deepEqual(results.map((r) => [r.name, r.isError]), [["read", false], ["edit", false], [
    "bash",
    false,
  ]]);
  assert.match(results[0].output, /^\s+2\tlimit = 1$/m);
  assert.match(results[2].output, /^limit = 2\n\[exit code 0\]/);
  // What the model was sent back: the command's output.
  const last = server.requests[3].body.messages as Array<{ role: string; content: string }>;
  assert.match(last.at(-1)!.content, /limit = 2/);
  assert.equal(run.events.at(-1)?.type, "result");
  assert.equal(run.events.at(-1)?.text, "Raised the limit to 2.");
});

Deno.test("cli e2e: a read-only run offers no write tools and creates no file", async () => {
  const dir = await tempDir();
  await Deno.writeTextFile(join(dir, "notes.md"), "# Notes\n");
  await using server = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ name: "write", arguments: { path: "pwned.txt", content: "x" } }] },
      { toolCalls: [{ name: "read", arguments: { path: "notes.md" } }] },
      { text: "I can only read here." },
    ],
  });
  const run = await runCli(server, ["--cwd", dir, "--output", "stream-json", "write a file"], {
    permissions: readOnly(dir),
  });
  assert.equal(run.code, 0, run.stderr);
  const start = run.events[0] as {
    type: string;
    tools: string[];
    capabilities: Record<string, string>;
  };
  assert.deepEqual(start.tools, ["read", "ls", "glob", "grep", "todo"]);
  assert.equal(start.capabilities.read, "granted");
  assert.equal(start.capabilities.write, "prompt");
  const sentTools = (server.requests[0].body.tools as Array<{ function: { name: string } }>)
    .map((tool) => tool.function.name);
  assert.deepEqual(sentTools, ["read", "ls", "glob", "grep", "todo"]);
  const [write, read] = toolResults(run);
  assert.equal(write.isError, true);
  assert.match(write.output, /unknown tool "write"/);
  assert.equal(read.isError, false);
  assert.equal(await exists(join(dir, "pwned.txt")), false);
});

Deno.test("cli e2e: --deny-write is honoured, by Deno and by the tool table", async () => {
  const dir = await tempDir();
  await Deno.mkdir(join(dir, "locked"));
  await using server = startMockOpenAIServer({
    replies: [
      {
        toolCalls: [
          { name: "write", arguments: { path: "locked/a.txt", content: "no" } },
          { name: "write", arguments: { path: "open.txt", content: "yes" } },
        ],
      },
      { text: "done" },
    ],
  });
  const run = await runCli(server, ["--cwd", dir, "--output", "stream-json", "write"], {
    permissions: ["-A", `--deny-write=${join(dir, "locked")}`],
  });
  assert.equal(run.code, 0, run.stderr);
  const [locked, open] = ["call_1", "call_2"].map((id) => resultById(run, id));
  assert.equal(locked.isError, true);
  assert.match(locked.output, /the runtime refused this call.*write access.*--allow-write/);
  assert.equal(open.isError, false);
  assert.equal(await exists(join(dir, "locked", "a.txt")), false);
  assert.equal(await Deno.readTextFile(join(dir, "open.txt")), "yes");

  // Denying the working directory itself withholds the write tools altogether.
  await using again = startMockOpenAIServer({ replies: [{ text: "ok" }] });
  const denied = await runCli(again, ["--cwd", dir, "--output", "stream-json", "x"], {
    permissions: ["-A", `--deny-write=${dir}`],
  });
  const tools: string[] = denied.events[0].tools;
  assert.ok(!tools.includes("write") && !tools.includes("edit") && tools.includes("bash"));
});

Deno.test("cli e2e: a symlink out of the workspace is refused for writing and for reading", async () => {
  const base = await tempDir();
  const ws = join(base, "ws");
  const outside = join(base, "outside");
  await Deno.mkdir(ws);
  await Deno.mkdir(outside);
  await Deno.writeTextFile(join(outside, "secret.txt"), "top secret");
  await Deno.symlink(outside, join(ws, "escape"));
  await using server = startMockOpenAIServer({
    replies: [
      {
        toolCalls: [
          { name: "write", arguments: { path: "escape/pwned.txt", content: "x" } },
          {
            name: "edit",
            arguments: { path: "escape/secret.txt", old_string: "top", new_string: "no" },
          },
          { name: "read", arguments: { path: "escape/secret.txt" } },
          { name: "write", arguments: { path: "../outside/direct.txt", content: "x" } },
        ],
      },
      { text: "refused" },
    ],
  });
  // Deno grants writing in the workspace only, and reading it; the symlink points outside.
  const run = await runCli(server, ["--cwd", ws, "--output", "stream-json", "escape"], {
    permissions: [
      `--allow-read=${ws}`,
      `--allow-write=${ws}`,
      "--allow-net=127.0.0.1",
      "--allow-env",
    ],
  });
  assert.equal(run.code, 0, run.stderr);
  const [write, edit, read, direct] = ["call_1", "call_2", "call_3", "call_4"].map((id) =>
    resultById(run, id)
  );
  assert.match(write.output, /outside the workspace \(it leads to .*outside\/pwned\.txt\)/);
  assert.match(edit.output, /outside the workspace/);
  assert.match(read.output, /the runtime refused this call.*read access.*--allow-read/);
  assert.match(direct.output, /outside the workspace/);
  assert.ok([write, edit, read, direct].every((result) => result.isError));
  assert.equal(await exists(join(outside, "pwned.txt")), false);
  assert.equal(await exists(join(outside, "direct.txt")), false);
  assert.equal(await Deno.readTextFile(join(outside, "secret.txt")), "top secret");
});

Deno.test("cli e2e: the prompt comes from stdin when no argument is given", async () => {
  await using server = startMockOpenAIServer({ replies: [{ text: "from stdin" }] });
  const run = await runCli(server, ["--output", "json"], { stdin: "What is piped?\n" });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(JSON.parse(run.stdout).text, "from stdin");
  const messages = server.requests[0].body.messages as Array<{ content: string }>;
  assert.equal(messages.at(-1)?.content, "What is piped?");
});

Deno.test("cli e2e: every output mode", async () => {
  await using server = startMockOpenAIServer({
    replies: () => ({
      text: ["Hello ", "world"],
      usage: { prompt_tokens: 12, completion_tokens: 2 },
    }),
  });
  const text = await runCli(server, ["hi"]);
  assert.equal(text.code, 0);
  assert.equal(text.stdout, "Hello world\n");
  assert.match(text.stderr, /1 turn · 0 tool calls · 12 in \/ 2 out tokens/);

  const json = await runCli(server, ["--output", "json", "hi"]);
  const result = JSON.parse(json.stdout);
  assert.deepEqual([result.type, result.status, result.text], ["result", "success", "Hello world"]);
  assert.deepEqual(result.usage, { inputTokens: 12, outputTokens: 2 });

  const stream = await runCli(server, ["--output", "stream-json", "hi"]);
  const lines = stream.stdout.trim().split("\n");
  assert.ok(lines.length >= 6);
  for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), line);
  assert.equal(stream.events[0].type, "start");
  assert.equal(stream.events.at(-1)?.type, "result");
  assert.deepEqual(
    stream.events.filter((e) => e.type === "text_delta").map((e) => e.text),
    ["Hello ", "world"],
  );
});

Deno.test("cli e2e: exit codes 0, 1, 2 and 3", async () => {
  const dir = await tempDir();
  await Deno.writeTextFile(join(dir, "a.txt"), "a\n".repeat(50));
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const prompt = (body.messages as Array<{ role: string; content: string }>)
        .filter((m) => m.role === "user").at(-1)?.content;
      if (prompt === "loop") {
        const reads = (body.messages as unknown[]).length;
        return {
          toolCalls: [{ name: "read", arguments: { path: "a.txt", offset: reads, limit: 1 } }],
        };
      }
      if (prompt === "denied") return { status: 401 };
      return { text: "ok" };
    },
  });
  assert.equal((await runCli(server, ["fine"])).code, 0);

  const denied = await runCli(server, ["denied"]);
  assert.equal(denied.code, 1);
  assert.match(denied.stderr, /refused the request \(401\).*OPENAI_API_KEY/);

  const noKey = await runCli(server, ["x"], { env: { OPENAI_API_KEY: "", OPENAI_BASE_URL: "" } });
  assert.equal(noKey.code, 1);
  assert.match(noKey.stderr, /No API key for openai: set OPENAI_API_KEY/);

  const badFlag = await runCli(server, ["--no-such-flag", "x"]);
  assert.equal(badFlag.code, 2);
  assert.match(badFlag.stderr, /Unknown option --no-such-flag \(see --help\)/);
  const badModel = await runCli(server, ["-m", "gpt-4", "x"]);
  assert.equal(badModel.code, 2);
  assert.match(badModel.stderr, /names no provider: write provider\/model/);
  const badTool = await runCli(server, ["--tools", "read,teleport", "x"]);
  assert.equal(badTool.code, 2);
  assert.match(badTool.stderr, /Unknown tool "teleport" in --tools\. Available tools: read, write/);

  const loop = await runCli(server, ["--cwd", dir, "--max-turns", "3", "--output", "json", "loop"]);
  assert.equal(loop.code, 3, loop.stderr);
  assert.equal(JSON.parse(loop.stdout).status, "max_turns");
});

Deno.test("cli e2e: unreachable base URL and an empty model answer are clear errors", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ text: "" }) });
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closed = `http://127.0.0.1:${listener.addr.port}/v1`;
  listener.close();
  const unreachable = await runCli(server, ["--base-url", closed, "x"]);
  assert.equal(unreachable.code, 1);
  assert.match(unreachable.stderr, /Could not reach openai at .*: .*Is the server running/);

  const empty = await runCli(server, ["x"]);
  assert.equal(empty.code, 1);
  assert.match(empty.stderr, /openai\/test returned an empty answer/);
});

Deno.test("cli e2e: --help shows what Deno grants and the tools offered", async () => {
  await using server = startMockOpenAIServer({ replies: [] });
  const dir = await tempDir();
  const run = await runCli(server, ["--cwd", dir, "--help"], { permissions: readOnly(dir) });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /read: granted, write: prompt, run: prompt, net: prompt, env: granted/);
  assert.match(run.stdout, /tools offered: read, ls, glob, grep, todo/);
  assert.match(
    run.stdout,
    /not offered: +write, edit \(grant with --allow-write\); bash \(grant with --allow-run\)/,
  );
});

Deno.test("cli e2e: --verbose prints each request's size, timing and tokens", async () => {
  await using server = startMockOpenAIServer({
    replies: [{ text: "ok", usage: { prompt_tokens: 30, completion_tokens: 1 } }],
  });
  const run = await runCli(server, ["-v", "hi"]);
  assert.equal(run.code, 0);
  assert.match(run.stderr, /\[request 1\] openai\/test: \d+ messages?, \d+ tools, [\d.]+ KiB/);
  assert.match(
    run.stderr,
    /\[response 1\] stop after \d+ ms \(first event \d+ ms\): 30 in \/ 1 out tokens/,
  );
});

Deno.test("cli e2e: the system prompt carries the environment and AGENTS.md up to the repo root", async () => {
  const repo = await tempDir();
  await Deno.mkdir(join(repo, ".git"));
  await Deno.mkdir(join(repo, "pkg"));
  await Deno.writeTextFile(join(repo, "AGENTS.md"), "Use tabs.");
  await Deno.writeTextFile(join(repo, "pkg", "CLAUDE.md"), "Run deno task test.");
  await using server = startMockOpenAIServer({ replies: [{ text: "ok" }] });
  await runCli(server, ["--cwd", join(repo, "pkg"), "hi"]);
  const system = (server.requests[0].body.messages as Array<{ role: string; content: string }>)[0];
  assert.equal(system.role, "system");
  assert.match(system.content, new RegExp(`Working directory: ${join(repo, "pkg")}`));
  assert.match(system.content, /Capabilities granted by the runtime: read, write, run, net, env/);
  assert.match(system.content, /Tools: read, write, edit, ls, glob, grep, bash, fetch, todo/);
  assert.match(
    system.content,
    /## \.\.\/AGENTS\.md\nUse tabs\.\n\n## CLAUDE\.md\nRun deno task test\./,
  );
});
