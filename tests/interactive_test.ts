/**
 * The interactive session in a real terminal: tmux runs the CLI against the loopback mock
 * server, the test types into it and reads the screen.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type MockReply, type MockServer, startMockOpenAIServer } from "../testing.ts";

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));

/** A terminal running the CLI. */
class Terminal implements AsyncDisposable {
  readonly name = `agent-test-${crypto.randomUUID().slice(0, 8)}`;

  static async start(
    command: string[],
    env: Record<string, string>,
    cwd: string,
  ): Promise<Terminal> {
    const terminal = new Terminal();
    const vars = Object.entries(env).flatMap(([key, value]) => ["-e", `${key}=${value}`]);
    // The shell reports the exit code and keeps the pane open to read it.
    const script = `${command.map(_quote).join(" ")}; echo "[exit $?]"; sleep 60`;
    await _tmux(
      "new-session",
      "-d",
      "-s",
      terminal.name,
      "-x",
      "110",
      "-y",
      "40",
      "-c",
      cwd,
      ...vars,
      "sh",
      "-c",
      script,
    );
    return terminal;
  }

  async type(text: string): Promise<void> {
    await _tmux("send-keys", "-t", this.name, "-l", text);
  }

  async keys(...keys: string[]): Promise<void> {
    await _tmux("send-keys", "-t", this.name, ...keys);
  }

  async screen(): Promise<string> {
    return await _tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", this.name);
  }

  /** Waits until the screen matches `pattern`, and gives the screen. */
  async waitFor(pattern: RegExp, timeoutMs = 15_000): Promise<string> {
    const until = Date.now() + timeoutMs;
    let screen = "";
    while (Date.now() < until) {
      screen = await this.screen();
      if (pattern.test(screen)) return screen;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`the screen never showed ${pattern}:\n${screen}`);
  }

  /** Waits until `pattern` shows `count` times on the screen. */
  async waitForCount(pattern: RegExp, count: number): Promise<string> {
    const global = new RegExp(pattern.source, `${pattern.flags.replace("g", "")}g`);
    return await this.waitFor({
      test: (screen: string) => (screen.match(global)?.length ?? 0) >= count,
      toString: () => `${count} × ${pattern}`,
    } as RegExp);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await _tmux("kill-session", "-t", this.name).catch(() => {});
  }
}

async function _tmux(...args: string[]): Promise<string> {
  const output = await new Deno.Command("tmux", { args, stdout: "piped", stderr: "piped" })
    .output();
  if (!output.success) {
    throw new Error(`tmux ${args[0]}: ${new TextDecoder().decode(output.stderr)}`);
  }
  return new TextDecoder().decode(output.stdout);
}

function _quote(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * Replies to the agent's requests, with the run loop router's small requests answered apart
 * (an unusable answer: the deterministic rule routes) and left out of the requests the tests
 * look at.
 */
function routed(
  replies: MockReply[] | ((body: Record<string, unknown>, index: number) => MockReply),
): (body: Record<string, unknown>, index: number) => MockReply {
  let next = 0;
  return (body) => {
    const system = (body.messages as Array<{ content: string }>)[0]?.content ?? "";
    if (system.startsWith("You route messages to tasks")) return { text: "{}" };
    const index = next++;
    return typeof replies === "function" ? replies(body, index) : replies[index];
  };
}

/** The requests of the agent, without the router's. */
function agentRequests(server: MockServer): MockServer["requests"] {
  return server.requests.filter((request) => {
    const system = (request.body.messages as Array<{ content: string }>)[0]?.content ?? "";
    return !system.startsWith("You route messages to tasks");
  });
}

/** The text of the last user message of a request. */
function lastUser(server: MockServer, index: number): string {
  const messages = agentRequests(server)[index].body.messages as Array<
    { role: string; content: string }
  >;
  return messages.filter((m) => m.role === "user").at(-1)!.content;
}

async function start(
  server: MockServer,
  cwd: string,
  options: { permissions?: string[]; data?: string; color?: boolean } = {},
): Promise<Terminal> {
  const data = options.data ?? await Deno.makeTempDir({ prefix: "agent_data_" });
  // The terminal's environment comes from the tmux server: NO_COLOR is set or unset here.
  const color = options.color ? ["env", "-u", "NO_COLOR"] : ["env", "NO_COLOR=1"];
  return await Terminal.start(
    [
      ...color,
      Deno.execPath(),
      "run",
      ...(options.permissions ?? ["-A"]),
      MOD,
      "-m",
      "openai/test",
    ],
    {
      OPENAI_API_KEY: "sk-test",
      OPENAI_BASE_URL: server.url,
      AGENT_DATA_DIR: data,
      TERM: "xterm-256color",
    },
    cwd,
  );
}

Deno.test("interactive: streams answers, stops one with Ctrl+C, runs commands, and exits", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  await Deno.writeTextFile(join(cwd, "notes.md"), "The meeting is on Friday.");
  const replies: MockReply[] = [
    { text: ["Hello", " from", " the", " **agent**."], eventDelayMs: 20 },
    { text: Array.from({ length: 300 }, (_, i) => `word${i} `), eventDelayMs: 25 },
    { text: "The meeting is on Friday." },
    { text: "Two lines received." },
  ];
  await using server = startMockOpenAIServer({ replies: routed(replies) });
  await using terminal = await start(server, cwd);
  await terminal.waitFor(/agent · openai\/test/);

  // A task: the answer streams in, then the summary line.
  await terminal.type("hello there");
  await terminal.keys("Enter");
  // NO_COLOR: the markdown stays as written.
  await terminal.waitFor(/Hello from the \*\*agent\*\*\.[\s\S]*out tokens/);
  assert.equal(lastUser(server, 0), "hello there");

  // Ctrl+C in the middle of an answer stops it; the session goes on.
  await terminal.type("tell me a long story");
  await terminal.keys("Enter");
  await terminal.waitFor(/word5 /);
  await terminal.keys("C-c");
  const stopped = await terminal.waitFor(/interrupted/);
  assert.ok(!stopped.includes("word299"), "the answer was stopped before its end");

  // @path attaches the file.
  await terminal.type("what does @notes.md say?");
  await terminal.keys("Enter");
  await terminal.waitFor(/The meeting is on Friday\.\n[\s\S]*out tokens[\s\S]*›/);
  assert.match(
    lastUser(server, 2),
    /<file path="notes\.md">\nThe meeting is on Friday\.\n<\/file>/,
  );
  // The interrupted answer stayed in the history, whole calls and all.
  const history = agentRequests(server)[2].body.messages as Array<
    { role: string; content: string }
  >;
  assert.equal(history[4].role, "assistant");
  assert.match(history[4].content, /^word0 word1 /);

  // A line ending in "\" goes on on the next one.
  await terminal.type("first line\\");
  await terminal.keys("Enter");
  await terminal.type("second line");
  await terminal.keys("Enter");
  await terminal.waitFor(/Two lines received\./);
  assert.equal(lastUser(server, 3), "first line\nsecond line");

  // Slash commands.
  await terminal.type("/cost");
  await terminal.keys("Enter");
  await terminal.waitFor(/\d+ input and \d+ output tokens · cost unknown for this model/);
  await terminal.type("/tools");
  await terminal.keys("Enter");
  await terminal.waitFor(/Tools: read, write, edit, ls, glob, grep, bash, fetch, todo/);
  await terminal.type("/sessions");
  await terminal.keys("Enter");
  await terminal.waitFor(/\d+ messages {2}hello there \(current\)/);

  // Ctrl+C on an empty prompt leaves; the session is saved.
  await terminal.keys("C-c");
  const end = await terminal.waitFor(/\[exit 0\]/);
  assert.match(end, /Session [0-9a-f]{8} saved\. Resume it with: agent -r [0-9a-f]{8}/);
});

Deno.test("interactive: Deno asks at a tool's first use, and typed-ahead input reaches the next turn", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  await using server = startMockOpenAIServer({
    replies: routed((body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      const users = messages.filter((m) => m.role === "user").map((m) => m.content);
      if (messages.at(-1)?.role === "tool") {
        return { text: Array.from({ length: 40 }, (_, i) => `step${i} `), eventDelayMs: 40 };
      }
      if (users.at(-1) === "write the file") {
        return {
          toolCalls: [{ name: "write", arguments: { path: "hello.txt", content: "hi\n" } }],
        };
      }
      return { text: `**Noted**: ${users.at(-1)}` };
    }),
  });
  // Writing is not granted: in an interactive session the write tool is offered anyway, and
  // Deno itself asks when it is first used.
  const data = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_data_" }));
  await using terminal = await start(server, cwd, {
    permissions: [
      `--allow-read=${cwd},${data}`,
      `--allow-write=${data}`,
      "--allow-net=127.0.0.1",
      "--allow-env",
    ],
    data,
    color: true,
  });
  await terminal.waitFor(/agent · openai\/test/);
  await terminal.type("write the file");
  await terminal.keys("Enter");
  // The agent asks first (default mode asks before changing anything), then Deno asks.
  await terminal.waitFor(
    /\? write hello\.txt \("write" changes things\)\. Allow\? \[y\]es \/ \[n\]o \/ \[a\]lways/,
  );
  await terminal.type("y");
  await terminal.keys("Enter");
  await terminal.waitFor(/Deno requests write access to .*hello\.txt/);
  // Deno clears what was typed before its question was shown; answer as a person would.
  await new Promise((resolve) => setTimeout(resolve, 300));
  await terminal.type("y");
  await terminal.keys("Enter");
  await terminal.waitFor(/✓ write/);
  assert.equal(await Deno.readTextFile(join(cwd, "hello.txt")), "hi\n");

  // Typed while the answer streams: queued, then given to the model.
  await terminal.waitFor(/step2 /);
  await terminal.type("also add a README");
  await terminal.keys("Enter");
  await terminal.waitFor(/\(queued for the agent's next step: also add a README\)/);
  // Colours on: the markdown is rendered, the asterisks gone.
  await terminal.waitFor(/^Noted: also add a README/m);
  const queued = agentRequests(server).at(-1)!.body.messages as Array<
    { role: string; content: string }
  >;
  assert.equal(queued.at(-1)?.content, "also add a README");
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});

Deno.test("interactive: /compact, /model, /clear and /resume, then -c goes on with the session", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  const data = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_data_" }));
  await using server = startMockOpenAIServer({
    replies: routed((body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      if (!body.tools) {
        return { text: "## Goal\nRemember the colour.\n## Discoveries\nIt is teal." };
      }
      const last = messages.at(-1)!.content;
      return { text: `ok: ${last.slice(0, 60)}` };
    }),
  });
  await using terminal = await start(server, cwd, { data });
  await terminal.waitFor(/agent · openai\/test/);
  await terminal.type("the colour is teal");
  await terminal.keys("Enter");
  await terminal.waitFor(/ok: the colour is teal/);

  await terminal.type("/compact keep the colour");
  await terminal.keys("Enter");
  await terminal.waitFor(/Compacted: \d+ → \d+ tokens\./);
  const summaryRequest = agentRequests(server).at(-1)!.body;
  assert.equal(summaryRequest.tools, undefined, "the summary call offers no tools");
  assert.match(JSON.stringify(summaryRequest.messages), /keep the colour/);
  await terminal.type("what colour?");
  await terminal.keys("Enter");
  await terminal.waitFor(/ok: what colour\?/);
  const afterCompact = agentRequests(server).at(-1)!.body.messages as Array<
    { role: string; content: string }
  >;
  assert.match(
    afterCompact[1].content,
    /^\[Summary of the earlier conversation\][\s\S]*It is teal\./,
  );

  await terminal.type("/model openai/other-model");
  await terminal.keys("Enter");
  await terminal.waitFor(/Model: openai\/other-model/);
  await terminal.type("/model nope");
  await terminal.keys("Enter");
  await terminal.waitFor(/\/model: Model "nope" names no provider/);
  await terminal.type("hello again");
  await terminal.keys("Enter");
  await terminal.waitFor(/ok: hello again/);
  assert.equal(agentRequests(server).at(-1)!.body.model, "other-model");

  await terminal.type("/clear");
  await terminal.keys("Enter");
  await terminal.waitFor(/Started a new conversation\./);
  await terminal.type("fresh start");
  await terminal.keys("Enter");
  await terminal.waitFor(/ok: fresh start/);
  assert.equal(
    (agentRequests(server).at(-1)!.body.messages as unknown[]).length,
    2,
    "system + the new message",
  );

  await terminal.type("/sessions");
  await terminal.keys("Enter");
  const listing = await terminal.waitFor(/([0-9a-f]{8}) .* the colour is teal/);
  const id = /([0-9a-f]{8}) .* the colour is teal/.exec(listing)![1];
  await terminal.type(`/resume ${id}`);
  await terminal.keys("Enter");
  await terminal.waitFor(new RegExp(`Resumed ${id}: \\d+ messages\\.`));
  await terminal.type("still there?");
  await terminal.keys("Enter");
  await terminal.waitFor(/ok: still there\?/);
  const resumed = agentRequests(server).at(-1)!.body.messages as Array<
    { role: string; content: string }
  >;
  assert.match(
    resumed[1].content,
    /Summary of the earlier conversation/,
    "the compaction was kept too",
  );
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);

  // -c on a terminal opens the latest session of the directory in the interactive session.
  await using again = await Terminal.start(
    ["env", "NO_COLOR=1", Deno.execPath(), "run", "-A", MOD, "-m", "openai/test", "-c"],
    { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url, AGENT_DATA_DIR: data },
    cwd,
  );
  await again.waitFor(/Resumed session [0-9a-f]{8} \(\d+ messages\)\./);
  // The input history was kept across runs: ↑ brings back the last input.
  await again.keys("Up");
  await again.waitFor(/› still there\?/);
});

Deno.test("interactive: asks before commands (no, always), and /mode switches the permission mode", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  await using server = startMockOpenAIServer({
    replies: routed((body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      // In plan mode every request ends with a note saying so: look past it.
      const last = messages.filter((m) => !m.content?.startsWith("[Plan mode]")).at(-1)!;
      if (last.role === "tool") return { text: `result: ${last.content.split("\n")[0]}` };
      const match = /^run (.*)$/.exec(last.content);
      return match
        ? { toolCalls: [{ name: "bash", arguments: { command: match[1] } }] }
        : { toolCalls: [{ name: "write", arguments: { path: "plan.txt", content: "x" } }] };
    }),
  });
  await using terminal = await start(server, cwd);
  await terminal.waitFor(/agent · openai\/test/);

  await terminal.type("run touch no.txt");
  await terminal.keys("Enter");
  await terminal.waitFor(
    /\? run `touch no\.txt` \("bash" changes things\)\. Allow\? \[y\]es \/ \[n\]o \/ \[a\]lways › /,
  );
  await terminal.type("n");
  await terminal.keys("Enter");
  await terminal.waitFor(/result: Error: permission denied: the user said no/);
  await assert.rejects(() => Deno.stat(join(cwd, "no.txt")));

  await terminal.type("run echo hi");
  await terminal.keys("Enter");
  await terminal.waitForCount(/Allow\? \[y\]es \/ \[n\]o \/ \[a\]lways › /, 2);
  await terminal.type("a");
  await terminal.keys("Enter");
  await terminal.waitFor(/result: hi/);
  // "always": the same command goes through without a question now.
  await terminal.type("run echo hi");
  await terminal.keys("Enter");
  const screen = await terminal.waitForCount(/result: hi/, 2);
  assert.equal(screen.match(/Allow\?/g)?.length, 2);
  await terminal.waitForCount(/^› $/m, 1);

  await terminal.type("/mode plan");
  await terminal.keys("Enter");
  await terminal.waitFor(
    /Permission mode: plan \(the agent only looks and proposes; changes are refused\)/,
  );
  await terminal.type("write a plan");
  await terminal.keys("Enter");
  await terminal.waitFor(/result: Error: permission denied: plan mode only looks/);
  await terminal.type("/mode accept-edits");
  await terminal.keys("Enter");
  await terminal.waitFor(/Permission mode: accept-edits/);
  await terminal.type("write it now");
  await terminal.keys("Enter");
  await terminal.waitFor(/result: Created plan\.txt/);
  assert.equal(await Deno.readTextFile(join(cwd, "plan.txt")), "x");
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});
