/**
 * The interactive session in a real terminal: tmux runs the CLI against the loopback mock
 * server, the test types into it and reads the screen.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { memoryPath } from "../lib/cli/memory.ts";
import { type MockReply, type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { childEnv, MOD, tempDir, Terminal } from "./terminal_support.ts";

/** Waits until `pattern` shows `count` times on the terminal's screen. */
async function waitForCount(terminal: Terminal, pattern: RegExp, count: number): Promise<string> {
  const global = new RegExp(pattern.source, `${pattern.flags.replace("g", "")}g`);
  return await terminal.waitFor({
    test: (screen: string) => (screen.match(global)?.length ?? 0) >= count,
    toString: () => `${count} × ${pattern}`,
  } as RegExp);
}

/** The system prompt of the run loop router's model call. */
const ROUTER = "You route messages to tasks";

/** The requests the run loop router made: a terminal session, with one conversation, makes none. */
function routerRequests(server: MockServer): MockServer["requests"] {
  return server.requests.filter((request) => {
    const system = (request.body.messages as Array<{ content: string }>)[0]?.content ?? "";
    return system.startsWith(ROUTER);
  });
}

/** The text of the last user message of a request. */
function lastUser(server: MockServer, index: number): string {
  const messages = server.requests[index].body.messages as Array<
    { role: string; content: string }
  >;
  return messages.filter((m) => m.role === "user").at(-1)!.content;
}

/** Starts the CLI in a terminal of its own, against the mock server, and waits for its prompt. */
async function start(
  server: MockServer,
  cwd: string,
  options: { permissions?: string[]; data?: string; color?: boolean; args?: string[] } = {},
): Promise<Terminal> {
  const env = await childEnv({
    OPENAI_API_KEY: "sk-test",
    OPENAI_BASE_URL: server.url,
    ...(options.data ? { AGENT_DATA_DIR: options.data } : {}),
  });
  if (options.color) delete env.NO_COLOR;
  const terminal = await Terminal.start(
    [
      Deno.execPath(),
      "run",
      ...(options.permissions ?? ["-A"]),
      MOD,
      "-m",
      "openai/test",
      ...(options.args ?? []),
    ],
    env,
    cwd,
  );
  // The first start compiles the CLI: give it time.
  await terminal.waitFor(/\/help for commands/, 60_000);
  return terminal;
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
  await using server = startMockOpenAIServer({ replies });
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
  const history = server.requests[2].body.messages as Array<
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
  // The hint names the command that started the session, which works when typed again.
  assert.ok(
    new RegExp(`Session [0-9a-f]{8} saved\\. Resume it with: deno run -A ${MOD} -r [0-9a-f]{8}`)
      .test(end),
    end,
  );
});

Deno.test("interactive: Deno asks at a tool's first use, and typed-ahead input reaches the next turn", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  await using server = startMockOpenAIServer({
    replies: (body) => {
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
    },
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
  // Deno asks, naming the file: the session does not ask the same thing first.
  const asked = await terminal.waitFor(/Deno requests write access to .*hello\.txt/);
  assert.doesNotMatch(asked, /Allow\? \[y\]es \/ \[n\]o \/ \[a\]lways/);
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
  const queued = server.requests.at(-1)!.body.messages as Array<
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
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      if (!body.tools) {
        return { text: "## Goal\nRemember the colour.\n## Discoveries\nIt is teal." };
      }
      const last = messages.at(-1)!.content;
      return { text: `ok: ${last.slice(0, 60)}` };
    },
  });
  await using terminal = await start(server, cwd, { data });
  await terminal.waitFor(/agent · openai\/test/);
  await terminal.type("the colour is teal");
  await terminal.keys("Enter");
  await terminal.waitFor(/ok: the colour is teal/);

  await terminal.type("/compact keep the colour");
  await terminal.keys("Enter");
  await terminal.waitFor(/Compacted: \d+ → \d+ tokens\./);
  const summaryRequest = server.requests.at(-1)!.body;
  assert.equal(summaryRequest.tools, undefined, "the summary call offers no tools");
  assert.match(JSON.stringify(summaryRequest.messages), /keep the colour/);
  await terminal.type("what colour?");
  await terminal.keys("Enter");
  await terminal.waitFor(/ok: what colour\?/);
  const afterCompact = server.requests.at(-1)!.body.messages as Array<
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
  assert.equal(server.requests.at(-1)!.body.model, "other-model");

  await terminal.type("/clear");
  await terminal.keys("Enter");
  await terminal.waitFor(/Started a new conversation\./);
  await terminal.type("fresh start");
  await terminal.keys("Enter");
  await terminal.waitFor(/ok: fresh start/);
  assert.equal(
    (server.requests.at(-1)!.body.messages as unknown[]).length,
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
  const resumed = server.requests.at(-1)!.body.messages as Array<
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
  await using again = await start(server, cwd, { data, args: ["-c"] });
  await again.waitFor(/Resumed session [0-9a-f]{8} \(\d+ messages\)\./);
  // The input history was kept across runs: ↑ brings back the last input.
  await again.keys("Up");
  await again.waitFor(/› still there\?/);
});

Deno.test("interactive: asks before commands (no, always), and /mode switches the permission mode", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      // In plan mode every request ends with a note saying so: look past it.
      const last = messages.filter((m) => !m.content?.startsWith("[Plan mode]")).at(-1)!;
      if (last.role === "tool") return { text: `result: ${last.content.split("\n")[0]}` };
      const match = /^run (.*)$/.exec(last.content);
      return match
        ? { toolCalls: [{ name: "bash", arguments: { command: match[1] } }] }
        : { toolCalls: [{ name: "write", arguments: { path: "plan.txt", content: "x" } }] };
    },
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
  await waitForCount(terminal, /Allow\? \[y\]es \/ \[n\]o \/ \[a\]lways › /, 2);
  await terminal.type("a");
  await terminal.keys("Enter");
  // What "always" allows from now on is said.
  await terminal.waitFor(
    /\(Always allowed from now on in this session: bash\(echo hi\)\)\n[\s\S]*result: hi/,
  );
  // "always": the same command goes through without a question now.
  await terminal.type("run echo hi");
  await terminal.keys("Enter");
  const screen = await waitForCount(terminal, /result: hi/, 2);
  assert.equal(screen.match(/Allow\?/g)?.length, 2);
  await waitForCount(terminal, /^› $/m, 1);

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

/** A mock server that answers each message with `prefix` and the message, at fixed usage. */
function echoServer(prefix = "ok: "): MockServer {
  return startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      return {
        text: `${prefix}${messages.at(-1)!.content}`,
        usage: { prompt_tokens: 100, completion_tokens: 7 },
      };
    },
  });
}

Deno.test("interactive: one conversation makes no routing call; /cost counts every call; /clear starts afresh", async () => {
  for (const args of [[], ["--no-memory"]]) {
    const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
    await using server = echoServer();
    await using terminal = await start(server, cwd, { args });
    await terminal.type("fix the login bug");
    await terminal.keys("Enter");
    await terminal.waitFor(/ok: fix the login bug/);
    await terminal.type("and add a test for it");
    await terminal.keys("Enter");
    await terminal.waitFor(/ok: and add a test for it/);
    await terminal.type("/cost");
    await terminal.keys("Enter");
    await terminal.waitFor(/200 input and 14 output tokens/);

    await terminal.type("/clear");
    await terminal.keys("Enter");
    await terminal.waitFor(/Started a new conversation\./);
    await terminal.type("write the release notes");
    await terminal.keys("Enter");
    await terminal.waitFor(/ok: write the release notes/);
    await terminal.type("/cost");
    await terminal.keys("Enter");
    await terminal.waitFor(/100 input and 7 output tokens/);

    assert.deepEqual(routerRequests(server), [], `no routing call (${args.join(" ")})`);
    assert.equal(server.requests.length, 3, "one model call per message, none hidden");
    assert.equal(lastUser(server, 2), "write the release notes");
    assert.equal((server.requests[2].body.messages as unknown[]).length, 2, "system + message");
    await terminal.keys("C-c");
    await terminal.waitFor(/\[exit 0\]/);
  }
});

Deno.test("interactive: the summary call of /compact is shown and counted in /cost", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  await using server = echoServer();
  await using terminal = await start(server, cwd);
  await terminal.type("the colour is teal");
  await terminal.keys("Enter");
  await terminal.waitFor(/ok: the colour is teal/);
  await terminal.type("/compact");
  await terminal.keys("Enter");
  await terminal.waitFor(/Compacted: \d+ → \d+ tokens\. The summary took 100 in \/ 7 out tokens\./);
  await terminal.type("/cost");
  await terminal.keys("Enter");
  await terminal.waitFor(/200 input and 14 output tokens/);
  assert.equal(server.requests.length, 2);
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});

Deno.test("interactive: text typed while the agent works stays editable, the cursor at its end", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const last = (body.messages as Array<{ content: string }>).at(-1)!.content;
      if (last.startsWith("slow")) {
        return { text: Array.from({ length: 40 }, (_, i) => `step${i} `), eventDelayMs: 50 };
      }
      return { text: `got: ${last}` };
    },
  });
  await using terminal = await start(server, cwd);
  await terminal.type("slow one");
  await terminal.keys("Enter");
  await terminal.waitFor(/step2 /);
  await terminal.type("/clea");
  // Once the run is done, the typed text is on the prompt, and typing goes on after it.
  await terminal.waitFor(/step39[\s\S]*out tokens[^\n]*\n› \/clea\s*$/);
  await terminal.type("r");
  await terminal.keys("Enter");
  await terminal.waitFor(/Started a new conversation\./);

  // Edited like any input: Backspace takes the last character typed.
  await terminal.type("slow two");
  await terminal.keys("Enter");
  await waitForCount(terminal, /step2 /, 2);
  await terminal.type("abc");
  await terminal.waitFor(/out tokens[^\n]*\n› abc\s*$/);
  await terminal.keys("BSpace");
  await terminal.type("d");
  await terminal.keys("Enter");
  await terminal.waitFor(/got: abd/);
  assert.equal(lastUser(server, server.requests.length - 1), "abd");
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});

Deno.test("interactive: a spinner shows while a tool the user approved runs", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      return messages.at(-1)!.role === "tool"
        ? { text: "Slept well." }
        : { toolCalls: [{ name: "bash", arguments: { command: "sleep 3" } }] };
    },
  });
  await using terminal = await start(server, cwd);
  await terminal.type("take a nap");
  await terminal.keys("Enter");
  await terminal.waitFor(/\? run `sleep 3` \("bash" changes things\)\. Allow\?/);
  await terminal.type("y");
  await terminal.keys("Enter");
  const running = await terminal.waitFor(/running bash \d+\.\ds/);
  assert.doesNotMatch(running, /✓ bash/, "shown while the tool runs");
  await terminal.waitFor(/✓ bash[\s\S]*Slept well\./);
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});

Deno.test("interactive: resuming shows the last exchanges (-c, -r and /resume)", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  const data = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_data_" }));
  await using server = echoServer("answer to ");
  {
    await using terminal = await start(server, cwd, { data });
    for (const question of ["first question", "second question", "third question", "last one"]) {
      await terminal.type(question);
      await terminal.keys("Enter");
      await terminal.waitFor(new RegExp(`answer to ${question}`));
    }
    await terminal.keys("C-c");
    await terminal.waitFor(/\[exit 0\]/);
  }
  const id = (await Array.fromAsync(Deno.readDir(join(data, "sessions")), async (folder) => {
    if (!folder.isDirectory) return []; // the sessions' index
    const files = await Array.fromAsync(Deno.readDir(join(data, "sessions", folder.name)));
    return files.map((file) => file.name.slice(0, 8));
  })).flat()[0];
  const recap = (screen: string) => {
    assert.match(
      screen,
      /› second question\n {2}answer to second question\n› third question\n {2}answer to third question\n› last one\n {2}answer to last one\n/,
    );
    assert.match(screen, /1 earlier exchange/);
    assert.doesNotMatch(screen, /› first question/);
  };

  {
    await using terminal = await start(server, cwd, { data, args: ["-c"] });
    recap(await terminal.waitFor(/Resumed session [0-9a-f]{8} \(8 messages\)[\s\S]*\n› $/m));
    await terminal.type("/clear");
    await terminal.keys("Enter");
    await terminal.waitFor(/Started a new conversation\./);
    await terminal.type(`/resume ${id}`);
    await terminal.keys("Enter");
    const screen = await terminal.waitFor(
      new RegExp(`Resumed ${id}: 8 messages\\.[\\s\\S]*\\n› \\s*$`),
    );
    recap(screen.slice(screen.indexOf(`Resumed ${id}:`)));
    await terminal.keys("C-c");
    await terminal.waitFor(/\[exit 0\]/);
  }
  {
    await using terminal = await start(server, cwd, { data, args: ["-r", id] });
    recap(await terminal.waitFor(/Resumed session [0-9a-f]{8} \(8 messages\)[\s\S]*\n› $/m));
    await terminal.keys("C-c");
    await terminal.waitFor(/\[exit 0\]/);
  }
});

/** An answer with a table, streamed in small pieces. */
const TABLE_ANSWER = [
  "Here are the sizes:\n\n",
  "| File | Size | Note |\n",
  "|:-----|-----:|------|\n",
  "| a.txt | 12 | small |\n",
  "| big-file.bin | 123456 | `large` |\n",
  "\nDone.",
].join("").match(/[\s\S]{1,4}/g)!;

Deno.test("interactive: markdown tables are drawn as tables, plain with NO_COLOR, boxed with colours", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  const long = "a note long enough that it cannot fit on one line of the terminal, " +
    "so that the table has to wrap it inside its own column";
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const last = (body.messages as Array<{ content: string }>).at(-1)!.content;
      if (last === "wide") {
        return {
          text: `| Key | Value | Comment |\n|---|---|---|\n| one | ${long} | ${long} |\n\nEnd.`,
        };
      }
      return { text: TABLE_ANSWER, eventDelayMs: 5 };
    },
  });
  {
    await using terminal = await start(server, cwd);
    await terminal.type("sizes?");
    await terminal.keys("Enter");
    const screen = await terminal.waitFor(/Done\.\n[\s\S]*out tokens/);
    assert.match(
      screen,
      new RegExp(
        [
          "Here are the sizes:",
          "",
          "\\| File         \\|   Size \\| Note    \\|",
          "\\|--------------\\|--------\\|---------\\|",
          "\\| a\\.txt        \\|     12 \\| small   \\|",
          "\\| big-file\\.bin \\| 123456 \\| `large` \\|",
          "",
          "Done\\.",
        ].join("\n"),
      ),
    );
    await terminal.type("wide");
    await terminal.keys("Enter");
    const wide = await terminal.waitFor(/End\.\n[\s\S]*out tokens/);
    const rows = wide.slice(wide.indexOf("› wide"), wide.indexOf("End.")).split("\n").slice(1, -2);
    assert.ok(rows.length > 3, "the long cells wrap");
    for (const row of rows) {
      assert.ok(row.length <= 110, `fits the terminal: ${row}`);
      assert.match(row, /^\|.*\|$/);
    }
    assert.match(wide, /\| one +\| a note long/);
    await terminal.keys("C-c");
    await terminal.waitFor(/\[exit 0\]/);
  }
  {
    await using terminal = await start(server, cwd, { color: true });
    await terminal.type("sizes?");
    await terminal.keys("Enter");
    const screen = await terminal.waitFor(/Done\.\n[\s\S]*out tokens/);
    assert.match(
      screen,
      new RegExp(
        [
          "┌──────────────┬────────┬───────┐",
          "│ File         │   Size │ Note  │",
          "├──────────────┼────────┼───────┤",
          "│ a\\.txt        │     12 │ small │",
          "│ big-file\\.bin │ 123456 │ large │",
          "└──────────────┴────────┴───────┘",
        ].join("\n"),
      ),
    );
    await terminal.keys("C-c");
    await terminal.waitFor(/\[exit 0\]/);
  }
});

Deno.test("interactive: streamed text wraps at word boundaries while it streams", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  const words = Array.from({ length: 90 }, (_, i) => `w${i}${"x".repeat((i * 7) % 9)}`);
  const text = words.join(" ");
  await using server = startMockOpenAIServer({
    // Pieces of three characters: words arrive cut in two.
    replies: [{ text: text.match(/[\s\S]{1,3}/g)!, eventDelayMs: 20 }],
  });
  await using terminal = await start(server, cwd);
  await terminal.type("tell me");
  await terminal.keys("Enter");
  const check = (screen: string) => {
    const lines = screen.slice(screen.indexOf("› tell me\n") + 10).split("\n");
    const answer = lines.slice(0, lines.findIndex((line) => !line.startsWith("w")));
    assert.ok(answer.length > 1, "the answer took several lines");
    for (const line of answer) assert.ok(line.length <= 110, `fits the terminal: ${line}`);
    const joined = answer.map((line) => line.trimEnd()).join(" ");
    assert.ok(text.startsWith(joined), `whole words:\n${answer.join("\n")}`);
  };
  // While it streams.
  const streaming = await terminal.waitFor(/w50x/);
  assert.doesNotMatch(streaming, /out tokens/);
  check(streaming);
  check(await terminal.waitFor(/out tokens/));
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});

Deno.test("interactive: /help puts a space between each command and what it does", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  await using server = echoServer();
  await using terminal = await start(server, cwd);
  await terminal.type("/help");
  await terminal.keys("Enter");
  const screen = await terminal.waitFor(/\/exit +leave/);
  const rows = screen.split("\n").filter((line) => /^ {2}\//.test(line));
  assert.equal(rows.length, 10);
  for (const row of rows) assert.match(row, /^ {2}\/\S.*?\S {2,}[a-z]/, row);
  assert.match(
    screen,
    /\/mode \[plan\|default\|accept-edits\] +show or switch the permission mode/,
  );
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});

Deno.test("interactive: an answer cut off and retried is marked as discarded", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  await using server = startMockOpenAIServer({
    replies: [
      { text: ["Partial ", "answ", "er."], resetAfter: 2 },
      { text: ["Whole ", "answer."] },
    ],
  });
  await using terminal = await start(server, cwd);
  await terminal.type("go");
  await terminal.keys("Enter");
  const screen = await terminal.waitFor(/Whole answer\.[\s\S]*out tokens/);
  // Worded as the headless run words it.
  assert.match(
    screen,
    /Partial.*\n↻ retry 1 in \d+\.\d s: .+ \(the answer above was cut off: discarded\)\n/,
  );
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});

Deno.test("interactive: /resume hints /sessions, the command of the session", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  await using server = echoServer();
  await using terminal = await start(server, cwd);
  await terminal.type("/resume");
  await terminal.keys("Enter");
  await terminal.waitFor(/Usage: \/resume <id> \(see \/sessions\)/);
  await terminal.type("/resume nope");
  await terminal.keys("Enter");
  const screen = await terminal.waitFor(/\/resume: No session matches "nope"[^\n]*\n/);
  assert.match(screen, /No session matches "nope"[^\n]*\/sessions/);
  assert.doesNotMatch(screen, /agent --sessions/);
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});

Deno.test("interactive: text typed ahead stays out of the answer to a question, and comes back after", async () => {
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_tty_" }));
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      const last = messages.at(-1)!;
      if (last.role === "tool") return { text: `result: ${last.content.split("\n")[0]}` };
      return {
        text: Array.from({ length: 20 }, (_, i) => `step${i} `),
        eventDelayMs: 50,
        toolCalls: [{ name: "bash", arguments: { command: "touch typed.txt" } }],
      };
    },
  });
  await using terminal = await start(server, cwd);
  await terminal.type("make the file");
  await terminal.keys("Enter");
  await terminal.waitFor(/step2 /);
  // "abc" and then "n": a "no", not "abcn" read as "always".
  await terminal.type("abc");
  await terminal.waitFor(/Allow\? \[y\]es \/ \[n\]o \/ \[a\]lways › $/m);
  await terminal.type("n");
  await terminal.keys("Enter");
  await terminal.waitFor(/result: Error: permission denied: the user said no/);
  await assert.rejects(() => Deno.stat(join(cwd, "typed.txt")));
  await terminal.waitFor(/out tokens[^\n]*\n› abc\s*$/);
  // Ctrl+C drops it; on the empty prompt, Ctrl+C leaves.
  await terminal.keys("C-c");
  await terminal.waitFor(/› abc\^C\n› \s*$/);
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});

Deno.test("interactive: a line typed ahead while tools run is no answer to a question: it is queued", async () => {
  const cwd = await tempDir();
  const data = await tempDir("agent_data_");
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      const last = messages.at(-1)!;
      if (last.role === "tool") return { text: "all done" };
      if (last.content === "again") {
        return { toolCalls: [{ name: "bash", arguments: { command: "touch PWNED" } }] };
      }
      if (last.content === "go") {
        // More calls than run at once: the last one waits for a sleep to end, then asks.
        const sleeps = Array.from({ length: 8 }, (_, i) => ({
          name: "bash",
          arguments: { command: `sleep 3.${i}` },
        }));
        return { toolCalls: [...sleeps, { name: "bash", arguments: { command: "touch PWNED" } }] };
      }
      return { text: `noted: ${last.content}` };
    },
  });
  // Writing is at "prompt": Deno may ask while tools run, so the terminal is in normal mode.
  await using terminal = await start(server, cwd, {
    permissions: [
      "--allow-read",
      `--allow-write=${data}`,
      "--allow-env",
      "--allow-net=127.0.0.1",
      "--allow-run",
    ],
    data,
    args: ["--allow", "bash(sleep *)", "--sandbox", "off"],
  });
  await terminal.type("go");
  await terminal.keys("Enter");
  while (server.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise((resolve) => setTimeout(resolve, 500));
  // Typed while the sleeps run, before the question is asked.
  await terminal.type("also update the docs");
  await terminal.keys("Enter");
  const question =
    /\? run `touch PWNED` \("bash" changes things\)\. Allow\? \[y\]es \/ \[n\]o \/ \[a\]lways › /;
  await terminal.waitFor(question);
  await terminal.waitFor(/\(queued for the agent's next step: also update the docs\)/);
  // The question is asked again; a word that is no answer does not answer it either.
  await waitForCount(terminal, question, 2);
  await terminal.type("yeah whatever");
  await terminal.keys("Enter");
  await waitForCount(terminal, question, 3);
  await assert.rejects(() => Deno.stat(join(cwd, "PWNED")));
  await terminal.type(" NO ");
  await terminal.keys("Enter");
  await terminal.waitFor(/noted: yeah whatever/);
  await assert.rejects(() => Deno.stat(join(cwd, "PWNED")));
  const after = server.requests.at(-1)!.body.messages as Array<{ role: string; content: string }>;
  assert.deepEqual(
    after.filter((m) => m.role === "user").map((m) => m.content),
    ["go", "also update the docs", "yeah whatever"],
  );
  assert.match(
    after.find((m) => m.role === "tool" && /touch|denied/.test(m.content))?.content ?? "",
    /permission denied: the user said no/,
  );

  // Ctrl+C at the question answers no, and stops the run; the session goes on.
  await terminal.type("again");
  await terminal.keys("Enter");
  await waitForCount(terminal, question, 4);
  await terminal.keys("C-c");
  await terminal.waitFor(/✗ bash Error: permission denied: the user said no[^\n]*\ninterrupted\n/);
  await assert.rejects(() => Deno.stat(join(cwd, "PWNED")));
  // (The terminal's Ctrl+C also reached the shell running the test's command, which ends with
  // the agent: the session is left as it is.)
  await terminal.type("still here?");
  await terminal.keys("Enter");
  await terminal.waitFor(/noted: still here\?/);
});

/** What a hostile reply could carry: set the terminal's title, clear the screen, go home. */
const HOSTILE = "\x1b]0;PWNED\x07\x1b[2J\x1b[H";
/** The same, as the terminal shows it once its control characters are gone. */
const DEFUSED = "]0;PWNED[2J[H";

Deno.test("interactive: escape sequences from the model, its tools and a saved session are shown as text", async () => {
  const cwd = await tempDir();
  const data = await tempDir("agent_data_");
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      if (messages.at(-1)!.role === "tool") return { text: `done ${HOSTILE}after the tool` };
      return {
        text: [`before ${HOSTILE}`, "after"],
        toolCalls: [{ name: "bash", arguments: { command: `echo '${HOSTILE}'` } }],
      };
    },
  });
  {
    await using terminal = await start(server, cwd, { data });
    const title = await terminal.title();
    await terminal.type("go");
    await terminal.keys("Enter");
    await terminal.waitFor(new RegExp(`run \`echo '${_escape(DEFUSED)}'\`.*Allow\\?`));
    await terminal.type("y");
    await terminal.keys("Enter");
    const screen = await terminal.waitFor(/after the tool\n[\s\S]*out tokens/);
    assert.equal(await terminal.title(), title, "the title was left alone");
    // Nothing was cleared: the banner, the message, the answer and the tool's line, in order.
    assert.match(
      screen,
      new RegExp(
        `^agent · openai/test[^\\n]*\\n› go\\nbefore ${_escape(DEFUSED)}after\\n[\\s\\S]*` +
          `✓ bash \\$ echo '${_escape(DEFUSED)}'[\\s\\S]*\\ndone ${
            _escape(DEFUSED)
          }after the tool\\n`,
      ),
    );
    await terminal.keys("C-c");
    await terminal.waitFor(/\[exit 0\]/);
  }
  {
    // The saved session's recap.
    await using terminal = await start(server, cwd, { data, args: ["-c"] });
    const screen = await terminal.waitFor(/Resumed session[\s\S]*\n› $/m);
    assert.match(screen, new RegExp(`› go\\n {2}done ${_escape(DEFUSED)}after the tool\\n`));
    assert.doesNotMatch(await terminal.title(), /PWNED/);
    await terminal.keys("C-c");
    await terminal.waitFor(/\[exit 0\]/);
  }
});

/** `text` as a regular expression that matches it literally. */
function _escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

Deno.test("interactive: leaving with nothing saved ends the prompt's line (Ctrl+C and Ctrl+D)", async () => {
  const cwd = await tempDir();
  await using server = echoServer();
  for (const key of ["C-c", "C-d"]) {
    await using terminal = await start(server, cwd, { args: ["--no-session"] });
    await terminal.keys(key);
    const screen = await terminal.waitFor(/\[exit \d+\]/);
    assert.match(screen, /\n› *\n\[exit 0\]/, key);
  }
});

Deno.test("interactive: what memory cannot archive is said at /clear and at the end, and the session is saved", async () => {
  const cwd = await tempDir();
  const data = await tempDir("agent_data_");
  await using server = echoServer();
  await using terminal = await start(server, cwd, { data });
  await terminal.type("Remember the deploy steps\n");
  await terminal.waitFor(/ok: Remember the deploy steps/);
  // Another process writes to the memory meanwhile: each archive waits its while, then fails,
  // as it does on a full disk or a damaged file.
  const memory = new DatabaseSync(memoryPath(data, cwd));
  memory.exec("BEGIN IMMEDIATE");
  const unarchived =
    /agent: the conversation so far was not archived in memory: database is locked/;
  try {
    await terminal.type("/clear\n");
    await waitForCount(terminal, unarchived, 1);
    await terminal.type("Now the release notes\n");
    await terminal.waitFor(/ok: Now the release notes/);
    await terminal.keys("C-d");
    const screen = await terminal.waitFor(/\[exit \d+\]/, 30_000);
    assert.equal(screen.match(new RegExp(unarchived, "g"))?.length, 2);
    assert.match(screen, /Session [0-9a-f]{8} saved/);
    assert.match(screen, /\[exit 0\]/);
  } finally {
    memory.exec("ROLLBACK");
    memory.close();
  }
});
