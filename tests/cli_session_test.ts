/**
 * Sessions through the real CLI: saved as the run goes, listed, continued and resumed, intact
 * after the process is killed, and without secrets.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { startServe } from "./serve_support.ts";

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));
const KEY = "sk-test-secret-4f9a2c7e1b";

interface Dirs {
  cwd: string;
  data: string;
}

async function dirs(): Promise<Dirs> {
  return {
    cwd: await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_cwd_" })),
    data: await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_data_" })),
  };
}

function command(
  server: MockServer,
  where: Dirs,
  args: string[],
  permissions = ["-A"],
): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    // Memories would join the history; these tests look at sessions alone.
    args: [
      "run",
      ...permissions,
      MOD,
      "-m",
      "openai/test",
      "--cwd",
      where.cwd,
      "--no-memory",
      ...args,
    ],
    env: {
      OPENAI_API_KEY: KEY,
      OPENAI_BASE_URL: server.url,
      AGENT_DATA_DIR: where.data,
      NO_COLOR: "1",
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}

async function run(server: MockServer, where: Dirs, args: string[], permissions?: string[]) {
  const output = await command(server, where, args, permissions).output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

/** The session files under the data directory. */
async function sessionFiles(data: string): Promise<string[]> {
  const files: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (entry.name.endsWith(".jsonl")) files.push(path);
    }
  };
  await walk(data).catch(() => {});
  return files;
}

function sent(server: MockServer, index: number): Array<{ role: string; content: string | null }> {
  return server.requests[index].body.messages as Array<{ role: string; content: string | null }>;
}

Deno.test("cli sessions: a run is saved, listed, continued with -c and resumed with -r", async () => {
  const where = await dirs();
  await using server = startMockOpenAIServer({
    replies: (body) => ({ text: `answer ${(body.messages as unknown[]).length}` }),
  });
  const first = await run(server, where, ["remember the number 42"]);
  assert.equal(first.code, 0, first.stderr);
  // The hint names the command that was run, which works when typed again.
  assert.match(first.stderr, /session [0-9a-f]{8} \(go on with: (.*) -c\)/);
  assert.equal(first.stderr.match(/go on with: (.*) -c\)/)![1], `deno run -A ${MOD}`);
  const [file] = await sessionFiles(where.data);
  const lines = (await Deno.readTextFile(file)).trim().split("\n").map((line) => JSON.parse(line));
  assert.deepEqual(
    [lines[0].type, lines[0].version, lines[0].cwd, lines[0].model],
    ["session", 1, where.cwd, "openai/test"],
  );
  assert.deepEqual(lines.slice(1).map((line) => line.message.role), ["user", "assistant"]);

  const listed = await run(server, where, ["--sessions"]);
  assert.equal(listed.code, 0);
  assert.match(
    listed.stdout,
    new RegExp(`^${lines[0].id}  .* 2 messages  openai/test  remember the number 42\n$`),
  );

  const again = await run(server, where, ["-c", "what was the number?"]);
  assert.equal(again.code, 0, again.stderr);
  const history = sent(server, 1).slice(1).map((m) => m.content);
  assert.deepEqual(history, ["remember the number 42", "answer 2", "what was the number?"]);
  assert.equal((await sessionFiles(where.data)).length, 1, "-c appends to the same session");

  // A new session, then -r picks the first one by its id's first characters.
  await run(server, where, ["something else"]);
  const resumed = await run(server, where, ["-r", lines[0].id.slice(0, 6), "and again?"]);
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.equal(sent(server, 3).length, 1 + 5);
  assert.equal(sent(server, 3)[1].content, "remember the number 42");
});

Deno.test("cli sessions: --no-session saves nothing; -c without a session is a clear error", async () => {
  const where = await dirs();
  await using server = startMockOpenAIServer({ replies: () => ({ text: "ok" }) });
  const quiet = await run(server, where, ["--no-session", "hi"]);
  assert.equal(quiet.code, 0);
  assert.deepEqual(await sessionFiles(where.data), []);
  const none = await run(server, where, ["-c", "go on"]);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /No saved session in .* to continue/);
  const unknown = await run(server, where, ["-r", "ffffffff", "go on"]);
  assert.equal(unknown.code, 1);
  assert.ok(unknown.stderr.includes(`List them with: deno run -A ${MOD} --sessions`));
});

Deno.test("cli sessions: without write access to the data directory, the run warns and goes on", async () => {
  const where = await dirs();
  await using server = startMockOpenAIServer({ replies: () => ({ text: "fine" }) });
  const result = await run(server, where, ["--output", "json", "hi"], [
    `--allow-read=${where.cwd}`,
    "--allow-net=127.0.0.1",
    "--allow-env",
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stderr,
    /sessions are not saved: Deno does not grant writing to .*--allow-write=/,
  );
  assert.equal(JSON.parse(result.stdout).text, "fine");
  assert.deepEqual(await sessionFiles(where.data), []);
});

Deno.test("cli sessions: a run killed with SIGKILL resumes with its history intact", async () => {
  const where = await dirs();
  await Deno.writeTextFile(join(where.cwd, "a.txt"), "alpha\n");
  let slow = true;
  await using server = startMockOpenAIServer({
    replies: (_body, index) => {
      if (index === 0) return { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] };
      if (index === 1) {
        return { toolCalls: [{ name: "bash", arguments: { command: "echo beta" } }] };
      }
      // The third answer never comes in time: the process is killed while it waits.
      if (index === 2 && slow) return { text: "never", delayMs: 60_000 };
      return { text: "resumed fine" };
    },
  });
  const child = command(server, where, ["--output", "stream-json", "read then run"]).spawn();
  const until = Date.now() + 20_000;
  while (server.requests.length < 3 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal(server.requests.length, 3, "the run reached its third model call");
  child.kill("SIGKILL");
  const status = await child.status;
  assert.equal(status.signal, "SIGKILL");
  await child.stdout.cancel();
  await child.stderr.cancel();
  slow = false;

  const resumed = await run(server, where, ["-c", "go on"]);
  assert.equal(resumed.code, 0, resumed.stderr);
  const history = sent(server, 3);
  assert.deepEqual(history.map((m) => m.role), [
    "system",
    "user",
    "assistant",
    "tool",
    "assistant",
    "tool",
    "user",
  ]);
  assert.match(history[3].content ?? "", /alpha/);
  assert.match(history[5].content ?? "", /^beta\n\[exit code 0\]/);
  assert.equal(history[6].content, "go on");
});

Deno.test("cli sessions: API keys never reach the session file", async () => {
  const where = await dirs();
  await using server = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ name: "bash", arguments: { command: "echo key=$OPENAI_API_KEY" } }] },
      { text: "done" },
    ],
  });
  // Off: in the sandbox the command would not see the key at all.
  const result = await run(server, where, [
    "--sandbox",
    "off",
    "--output",
    "json",
    `my key is ${KEY}`,
  ]);
  assert.equal(result.code, 0, result.stderr);
  const [file] = await sessionFiles(where.data);
  const text = await Deno.readTextFile(file);
  assert.ok(!text.includes(KEY), "the key is not in the file");
  assert.match(text, /my key is \[redacted\]/);
  assert.match(text, /key=\[redacted\]/);
  // What the model saw was not redacted: only what is written.
  assert.match(JSON.stringify(server.requests[1].body), new RegExp(KEY));
});

/** The last user message of a request, as the mock server got it. */
function lastUserText(body: Record<string, unknown>): string {
  const messages = body.messages as Array<{ role: string; content: unknown }>;
  const last = messages.findLast((message) => message.role === "user");
  return typeof last?.content === "string" ? last.content : "";
}

// deno-lint-ignore no-explicit-any
type Line = Record<string, any>;

/** A session file's entry lines, parsed (the header left out). */
async function entryLines(path: string): Promise<Line[]> {
  const lines = (await Deno.readTextFile(path)).split("\n").filter(Boolean);
  return lines.slice(1).map((line) => JSON.parse(line));
}

/** What each message line holds, in a few words: `role:text` or `assistant:call:<id>`. */
function summary(lines: Line[]): string[] {
  return lines.map(({ message }) => {
    if (message.role === "tool") {
      return `tool:${message.toolCallId}:${message.content.split("\n")[0]}`;
    }
    if (message.role === "user") return `user:${message.content}`;
    const call = message.content.find((part: { type: string }) => part.type === "tool_call");
    return call ? `assistant:call:${call.id}` : `assistant:${message.content[0]?.text}`;
  });
}

Deno.test("cli sessions: a second process resuming a session another runs goes on in a copy; the lines never interleave", async () => {
  const where = await dirs();
  // Run A's command waits in the middle of its turn until the test lets it go.
  const held = "touch waiting; while [ ! -f go ]; do sleep 0.02; done; echo a-done";
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string }>;
      const task = lastUserText(body);
      if (task === "task A" && messages.at(-1)?.role === "user") {
        return { toolCalls: [{ id: "call_a", name: "bash", arguments: { command: held } }] };
      }
      return { text: `${task} answered` };
    },
  });
  try {
    const first = await run(server, where, ["start"]);
    assert.equal(first.code, 0, first.stderr);
    const [original] = await sessionFiles(where.data);
    const id = JSON.parse((await Deno.readTextFile(original)).split("\n")[0]).id as string;

    const a = command(server, where, ["--sandbox", "off", "-c", "task A"]).spawn();
    const until = Date.now() + 30_000;
    while (!await Deno.stat(join(where.cwd, "waiting")).then(() => true, () => false)) {
      assert.ok(Date.now() < until, "run A reached its command");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }

    // Run B, while A is in the middle of its turn.
    const b = await run(server, where, ["--sandbox", "off", "-c", "task B"]);
    assert.equal(b.code, 0, b.stderr);
    const notice = new RegExp(
      `agent: session ${id.slice(0, 8)} is being written by another process \\(pid ${a.pid}\\): ` +
        `this run goes on in a new session, ([0-9a-f]{8}), that starts with a ` +
        `copy of its history, so that the two never interleave\n`,
    );
    assert.match(b.stderr, notice);
    const forkId = b.stderr.match(notice)![1];
    assert.match(b.stderr, new RegExp(`session ${forkId} \\(go on with: .* -c\\)`));

    await Deno.writeTextFile(join(where.cwd, "go"), "");
    const aDone = await a.output();
    assert.equal(aDone.code, 0, new TextDecoder().decode(aDone.stderr));

    // The original holds A's lines alone, each result right after its call.
    assert.deepEqual(summary(await entryLines(original)), [
      "user:start",
      "assistant:start answered",
      "user:task A",
      "assistant:call:call_a",
      "tool:call_a:a-done",
      "assistant:task A answered",
    ]);
    // B's are in the copy, after A's history as it stood, A's running call answered as such.
    const files = await sessionFiles(where.data);
    assert.equal(files.length, 2);
    const fork = files.find((file) => file !== original)!;
    assert.ok(fork.endsWith(".jsonl") && fork.includes(forkId));
    assert.deepEqual(summary(await entryLines(fork)), [
      "user:start",
      "assistant:start answered",
      "user:task A",
      "assistant:call:call_a",
      "tool:call_a:No result: the call was still running in another process when this session was copied from the one that process writes.",
      "user:task B",
      "assistant:task B answered",
    ]);
    const bRequest = server.requests.find((request) => lastUserText(request.body) === "task B")!;
    assert.deepEqual(
      (bRequest.body.messages as Array<{ role: string }>).map((message) => message.role),
      ["system", "user", "assistant", "user", "assistant", "tool", "user"],
    );
    // Both writers are gone: the session is free, and nothing of theirs is left but sessions.
    const again = await run(server, where, ["-r", id.slice(0, 8), "and again"]);
    assert.equal(again.code, 0, again.stderr);
    assert.doesNotMatch(again.stderr, /being written/);
    const notes = [...Deno.readDirSync(dirname(original))].filter((e) =>
      !e.name.endsWith(".jsonl")
    );
    assert.deepEqual(notes, []);
  } finally {
    await Deno.remove(where.cwd, { recursive: true });
    await Deno.remove(where.data, { recursive: true });
  }
});

Deno.test("cli sessions: a line of the wrong shape is reported and skipped; the session resumes", async () => {
  const where = await dirs();
  await using server = startMockOpenAIServer({
    replies: (body) => ({ text: `answer to ${lastUserText(body)}` }),
  });
  try {
    const first = await run(server, where, ["hello"]);
    assert.equal(first.code, 0, first.stderr);
    const [file] = await sessionFiles(where.data);
    const wrong = [
      '{"type":"message","message":{"role":"user","content":42},"n":2,"at":"x"}',
      '{"type":"message","message":{"role":"assistant","content":"hi"},"n":2,"at":"x"}',
      '{"type":"message","message":{"role":"tool","content":7},"n":2,"at":"x"}',
      '{"type":"message","message":42,"n":2,"at":"x"}',
      "[]",
    ];
    await Deno.writeTextFile(file, wrong.map((line) => line + "\n").join(""), { append: true });

    const resumed = await run(server, where, ["-c", "go on"]);
    assert.equal(resumed.code, 0, resumed.stderr);
    for (const [i, _line] of wrong.entries()) {
      assert.ok(
        resumed.stderr.includes(`agent: line ${i + 4} of ${file} is not a session entry (`),
        resumed.stderr,
      );
    }
    assert.match(
      resumed.stderr,
      /line 4 of .* \(message\.content: .*expected string.*\); it was skipped/,
    );
    assert.match(
      resumed.stderr,
      /line 5 of .* \(message\.content: .*expected array.*\); it was skipped/,
    );
    assert.deepEqual(sent(server, 1).slice(1).map((message) => message.content), [
      "hello",
      "answer to hello",
      "go on",
    ]);
    // Listed as before, and resumed again the same way.
    const listed = await run(server, where, ["--sessions"]);
    assert.ok(listed.stdout.endsWith(" 4 messages  openai/test  hello\n"), listed.stdout);
    const again = await run(server, where, ["-c", "and again"]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(sent(server, 2).length, 1 + 5);
  } finally {
    await Deno.remove(where.cwd, { recursive: true });
    await Deno.remove(where.data, { recursive: true });
  }
});

Deno.test("cli sessions: a run loop agent serve is writing is not appended to by the CLI: -r goes on in a copy", async () => {
  await using server = startMockOpenAIServer({
    replies: (body) => ({ text: `${lastUserText(body)} answered` }),
  });
  await using service = await startServe(server, {
    args: ["--no-memory"],
    sandbox: null,
    env: { OPENAI_API_KEY: KEY, AGENT_SERVE_TOKEN: "serve-session-test-token" },
  });
  const where = { cwd: service.cwd, data: service.dataDir };
  try {
    const post = async (path: string, body: unknown) => {
      const response = await service.fetch(path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      assert.equal(response.status, 200, await response.clone().text());
      return await response.json();
    };
    const first = await post("/v1/runs", { message: "from the service" });
    const loopId = first.run.runLoopId as string;
    const [original] = await sessionFiles(where.data);
    assert.ok(original.endsWith(`${loopId}.jsonl`), original);

    // The run loop is still active: the service holds its session.
    const cli = await run(server, where, ["-r", loopId.slice(0, 8), "from the CLI"]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(
      cli.stderr,
      new RegExp(
        `agent: session ${loopId.slice(0, 8)} is being written by another process \\(pid ` +
          `${service.pid}\\): this run goes on in a new session`,
      ),
    );
    await post(`/v1/run-loops/${loopId}/messages`, { message: "from the service again" });

    assert.deepEqual(summary(await entryLines(original)), [
      "user:from the service",
      "assistant:from the service answered",
      "user:from the service again",
      "assistant:from the service again answered",
    ]);
    const fork = (await sessionFiles(where.data)).find((file) => file !== original)!;
    assert.deepEqual(summary(await entryLines(fork)), [
      "user:from the service",
      "assistant:from the service answered",
      "user:from the CLI",
      "assistant:from the CLI answered",
    ]);
  } finally {
    await service.interrupt();
  }
});
