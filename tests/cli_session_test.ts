/**
 * Sessions through the real CLI: saved as the run goes, listed, continued and resumed, intact
 * after the process is killed, and without secrets.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type MockServer, startMockOpenAIServer } from "../testing.ts";

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
