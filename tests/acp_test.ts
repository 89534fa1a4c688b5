/**
 * `agent acp` as an editor drives it: a real child process on stdio, the ACP SDK's client side
 * playing the editor (its buffers as the file system, real processes as its terminals, a queue of
 * answers to permission questions), the loopback mock model through the real OpenAI SDK. Every
 * message is checked against the protocol's schema (see acp_support.ts).
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { detectSandbox } from "../lib/sandbox/detect.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { answerText, schemaProblems, startAcp, updatesOf } from "./acp_support.ts";
import { wireMessages } from "./openai_support.ts";
import { EVERYTHING_RUN } from "./mcp_support.ts";
import { MAX_ACP_SESSIONS } from "../lib/cli/acp/agent.ts";

Deno.test("agent acp: initialize, a new session with its modes and commands, nothing but protocol on stdout", async () => {
  await using model = startMockOpenAIServer({ replies: [{ text: "Hello from the agent." }] });
  await using editor = await startAcp({ model });
  const { initialized } = editor;
  assert.equal(initialized.protocolVersion, 1);
  assert.equal(initialized.agentCapabilities?.loadSession, true);
  assert.equal(initialized.agentCapabilities?.promptCapabilities?.embeddedContext, true);
  assert.equal(initialized.agentInfo?.name, "agent");
  assert.deepEqual(initialized.authMethods, []);

  const session = await editor.agent.request("session/new", { cwd: editor.cwd, mcpServers: [] });
  assert.equal(session.modes?.currentModeId, "default");
  assert.deepEqual(session.modes?.availableModes.map((mode) => mode.id), [
    "plan",
    "default",
    "accept-edits",
  ]);
  const commands = await editor.nextUpdate((update) =>
    update.sessionUpdate === "available_commands_update"
  );
  assert.ok(commands.sessionUpdate === "available_commands_update");
  assert.deepEqual(
    commands.availableCommands.map((command) => command.name),
    ["compact", "model", "mode", "tools", "cost"],
  );

  const done = await editor.agent.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "Say hello" }],
  });
  assert.equal(done.stopReason, "end_turn");
  assert.equal(answerText(editor, session.sessionId), "Hello from the agent.");

  // A slash command switches the mode, and the editor hears of it.
  await editor.agent.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "/mode plan" }],
  });
  const mode = updatesOf(editor, "current_mode_update", session.sessionId);
  assert.equal(mode.at(-1)?.currentModeId, "plan");
  assert.equal(model.requests.length, 1, "a slash command is not sent to the model");
  assert.equal(await editor.close(), 0);
  assert.deepEqual(editor.problems, []);
});

Deno.test("agent acp: no key, so initialize offers a way to authenticate and a session needs it", async () => {
  await using model = startMockOpenAIServer({ replies: [] });
  await using editor = await startAcp({ model, env: { OPENAI_API_KEY: "", OPENAI_BASE_URL: "" } });
  assert.equal(editor.initialized.authMethods?.length, 1);
  assert.match(editor.initialized.authMethods![0].description ?? "", /OPENAI_API_KEY/);
  await assert.rejects(
    editor.agent.request("session/new", { cwd: editor.cwd, mcpServers: [] }),
    (error: { code?: number; message?: string }) => {
      assert.equal(error.code, -32000);
      return true;
    },
  );
  assert.deepEqual(editor.problems, []);
});

Deno.test("agent acp: reads the editor's buffer, edits through it, runs a command in its terminal, asks before each change", async () => {
  const script = [
    { toolCalls: [{ id: "r1", name: "read", arguments: { path: "notes.txt" } }] },
    {
      toolCalls: [{
        id: "e1",
        name: "edit",
        arguments: { path: "notes.txt", old_string: "unsaved", new_string: "edited" },
      }],
    },
    {
      toolCalls: [{
        id: "e2",
        name: "edit",
        arguments: { path: "notes.txt", old_string: "unsaved", new_string: "edited" },
      }],
    },
    {
      toolCalls: [
        { id: "b1", name: "bash", arguments: { command: "echo from-the-terminal; exit 3" } },
        {
          id: "t1",
          name: "todo",
          arguments: {
            todos: [{ content: "Edit notes", status: "done" }, {
              content: "Check",
              status: "in_progress",
            }],
          },
        },
      ],
    },
    {
      toolCalls: [{
        id: "e3",
        name: "edit",
        arguments: { path: "notes.txt", old_string: "edited", new_string: "edited twice" },
      }],
    },
    { text: "All done." },
  ];
  await using model = startMockOpenAIServer({ replies: script });
  await using editor = await startAcp({ model, args: ["--sandbox", "off"] });
  const file = join(editor.cwd, "notes.txt");
  await Deno.writeTextFile(file, "saved text\n");
  // The editor holds an unsaved change: the agent must see it, not the disk.
  editor.buffers.set(file, "unsaved text\n");
  editor.answers.push("reject_once", "allow_always", "allow_once");

  const { sessionId } = await editor.agent.request("session/new", {
    cwd: editor.cwd,
    mcpServers: [],
  });
  const done = await editor.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Tidy notes.txt" }],
  });
  assert.equal(done.stopReason, "end_turn", editor.stderr());
  assert.equal(answerText(editor, sessionId), "All done.");

  // The read went through the editor and saw its buffer.
  assert.ok(editor.reads.some((read) => read.path === file));
  const afterRead = wireMessages(model.requests[1]).find((message) => message.role === "tool");
  assert.match(String(afterRead?.content), /unsaved text/);

  // The first edit was refused once, the second allowed always, the last not asked about.
  assert.equal(editor.questions.length, 3, JSON.stringify(editor.questions));
  assert.deepEqual(editor.questions.map((question) => question.toolCall.toolCallId), [
    "e1",
    "e2",
    "b1",
  ]);
  for (const question of editor.questions) {
    assert.deepEqual(question.options.map((option) => option.kind), [
      "allow_once",
      "allow_always",
      "reject_once",
      "reject_always",
    ]);
  }
  const refused = wireMessages(model.requests[2]).filter((message) => message.role === "tool")
    .at(-1);
  assert.match(String(refused?.content), /said no/);

  // Edits land in the editor, never on the disk behind its back.
  assert.deepEqual(editor.writes.map((write) => write.content), [
    "edited text\n",
    "edited twice text\n",
  ]);
  assert.equal(editor.buffers.get(file), "edited twice text\n");
  assert.equal(await Deno.readTextFile(file), "saved text\n");

  // The command ran in the editor's terminal, which the call shows; it was released.
  assert.equal(editor.terminals.length, 1);
  const terminal = editor.terminals[0];
  assert.equal(terminal.request.cwd, editor.cwd);
  assert.ok(terminal.released());
  const afterBash = wireMessages(model.requests[4]).find((message) =>
    message.tool_call_id === "b1"
  );
  assert.match(String(afterBash?.content), /from-the-terminal[\s\S]*exit code 3/);

  const calls = updatesOf(editor, "tool_call", sessionId);
  assert.deepEqual(calls.map((call) => [call.toolCallId, call.kind]), [
    ["r1", "read"],
    ["e1", "edit"],
    ["e2", "edit"],
    ["b1", "execute"],
    ["t1", "think"],
    ["e3", "edit"],
  ]);
  assert.deepEqual(calls[0].locations, [{ path: file }]);
  const results = updatesOf(editor, "tool_call_update", sessionId);
  const status = (id: string) =>
    results.filter((update) => update.toolCallId === id && update.status).at(-1)?.status;
  assert.equal(status("r1"), "completed");
  assert.equal(status("e1"), "failed");
  assert.equal(status("e2"), "completed");
  assert.equal(status("b1"), "failed", "exit code 3 is a failure");
  const diff = results.find((update) => update.toolCallId === "e2" && update.status)
    ?.content?.[0];
  assert.deepEqual(diff, { type: "diff", path: file, oldText: "unsaved", newText: "edited" });
  assert.ok(
    results.some((update) =>
      update.toolCallId === "b1" &&
      update.content?.some((part) => part.type === "terminal" && part.terminalId === terminal.id)
    ),
  );
  const plan = updatesOf(editor, "plan", sessionId).at(-1);
  assert.deepEqual(plan?.entries.map((entry) => [entry.content, entry.status]), [
    ["Edit notes", "completed"],
    ["Check", "in_progress"],
  ]);
  assert.deepEqual(editor.problems, []);
});

Deno.test("agent acp: reject always is remembered for the session", async () => {
  const edit = (id: string) => ({
    toolCalls: [{ id, name: "write", arguments: { path: "a.txt", content: "x" } }],
  });
  await using model = startMockOpenAIServer({
    replies: [edit("w1"), edit("w2"), { text: "Gave up." }],
  });
  await using editor = await startAcp({ model, args: ["--sandbox", "off"] });
  editor.answers.push("reject_always");
  const { sessionId } = await editor.agent.request("session/new", {
    cwd: editor.cwd,
    mcpServers: [],
  });
  const done = await editor.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Write a.txt" }],
  });
  assert.equal(done.stopReason, "end_turn");
  assert.equal(editor.questions.length, 1, "asked once, not again");
  assert.equal(editor.writes.length, 0);
  const second = wireMessages(model.requests[2]).filter((message) => message.role === "tool")
    .at(-1);
  assert.match(String(second?.content), /deny|denied|refused|rule/i);
  assert.deepEqual(editor.problems, []);
});

Deno.test("agent acp: cancel stops the turn as cancelled, and the session goes on", async () => {
  const long = Array.from({ length: 400 }, (_, i) => `${i} `);
  await using model = startMockOpenAIServer({
    replies: [{ text: long, eventDelayMs: 20 }, { text: "Still here." }],
  });
  await using editor = await startAcp({ model });
  const { sessionId } = await editor.agent.request("session/new", {
    cwd: editor.cwd,
    mcpServers: [],
  });
  const prompt = editor.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Count to 400" }],
  });
  await editor.nextUpdate((update) => update.sessionUpdate === "agent_message_chunk");
  await editor.agent.notify("session/cancel", { sessionId });
  assert.equal((await prompt).stopReason, "cancelled");
  assert.ok(answerText(editor, sessionId).length < long.join("").length, "the answer was cut");

  const next = await editor.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Are you there?" }],
  });
  assert.equal(next.stopReason, "end_turn");
  const history = wireMessages(model.requests[1]).map((message) => message.content ?? "");
  assert.ok(history.includes("Count to 400"), "the cancelled turn stays in the conversation");
  assert.deepEqual(editor.problems, []);
});

Deno.test("agent acp: a saved session loads in a new process, replayed as updates, and goes on", async () => {
  await using model = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ id: "l1", name: "ls", arguments: {} }] },
      { text: "There is one file." },
      { text: "Yes, I remember." },
    ],
  });
  const dataDir = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_acp_data_" }));
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_acp_cwd_" }));
  try {
    await Deno.writeTextFile(join(cwd, "one.txt"), "1");
    let sessionId: string;
    {
      await using first = await startAcp({ model, dataDir, cwd });
      sessionId = (await first.agent.request("session/new", { cwd, mcpServers: [] })).sessionId;
      await first.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "What is here?" }],
      });
      assert.equal(await first.close(), 0);
    }
    await using second = await startAcp({ model, dataDir, cwd });
    const loaded = await second.agent.request("session/load", { sessionId, cwd, mcpServers: [] });
    assert.equal(loaded.modes?.currentModeId, "default");
    const kinds = second.updates.filter((note) => note.sessionId === sessionId)
      .map((note) => note.update.sessionUpdate)
      .filter((kind) => kind !== "available_commands_update");
    assert.deepEqual(kinds, [
      "user_message_chunk",
      "tool_call",
      "tool_call_update",
      "agent_message_chunk",
    ]);
    assert.equal(answerText(second, sessionId), "There is one file.");
    const user = updatesOf(second, "user_message_chunk", sessionId)[0];
    assert.deepEqual(user.content, { type: "text", text: "What is here?" });

    const next = await second.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "Do you remember?" }],
    });
    assert.equal(next.stopReason, "end_turn");
    const history = wireMessages(model.requests[2]).map((message) => message.content ?? "");
    assert.ok(history.includes("What is here?") && history.includes("There is one file."));

    // A session that is not there is said to be missing.
    await assert.rejects(
      second.agent.request("session/load", {
        sessionId: "00000000-0000-4000-8000-000000000000",
        cwd,
        mcpServers: [],
      }),
      (error: { code?: number }) => error.code === -32002,
    );
    assert.deepEqual(second.problems, []);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
    await Deno.remove(cwd, { recursive: true });
  }
});

Deno.test("agent acp: an MCP server the editor gives is used", async () => {
  await using model = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ id: "m1", name: "mcp__everything__echo", arguments: { message: "ping" } }] },
      { text: "It echoed." },
    ],
  });
  await using editor = await startAcp({ model });
  const { sessionId } = await editor.agent.request("session/new", {
    cwd: editor.cwd,
    mcpServers: [{
      name: "everything",
      command: Deno.execPath(),
      args: [...EVERYTHING_RUN, "stdio"],
      env: [],
    }],
  });
  // An MCP tool may change things: the editor's user is asked first.
  editor.answers.push("allow_once");
  const done = await editor.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Echo ping" }],
  });
  assert.equal(done.stopReason, "end_turn", editor.stderr());
  const result = wireMessages(model.requests[1]).find((message) => message.tool_call_id === "m1");
  assert.match(String(result?.content), /ping/);
  const tools = (model.requests[0].body.tools as { function: { name: string } }[])
    .map((tool) => tool.function.name);
  assert.ok(tools.includes("mcp__everything__echo"));
  assert.equal(editor.questions[0]?.toolCall.toolCallId, "m1");
  assert.deepEqual(editor.problems, []);
});

Deno.test("agent acp: plan mode set by the editor refuses changes without asking; an attached file reaches the model", async () => {
  await using model = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ id: "w1", name: "write", arguments: { path: "x.txt", content: "x" } }] },
      { text: "I would write x.txt." },
    ],
  });
  await using editor = await startAcp({ model });
  const { sessionId } = await editor.agent.request("session/new", {
    cwd: editor.cwd,
    mcpServers: [],
  });
  await editor.agent.request("session/set_mode", { sessionId, modeId: "plan" });
  await assert.rejects(
    editor.agent.request("session/set_mode", { sessionId, modeId: "yolo" }),
    (error: { code?: number }) => error.code === -32602,
  );
  const file = join(editor.cwd, "spec.md");
  const done = await editor.agent.request("session/prompt", {
    sessionId,
    prompt: [
      { type: "text", text: "Follow" },
      {
        type: "resource",
        resource: {
          uri: `file://${file}`,
          text: "# The spec\nWrite x.txt",
          mimeType: "text/markdown",
        },
      },
      { type: "resource_link", uri: `file://${join(editor.cwd, "other.md")}`, name: "other.md" },
    ],
  });
  assert.equal(done.stopReason, "end_turn");
  assert.equal(editor.questions.length, 0, "plan mode does not ask: it refuses");
  assert.equal(editor.writes.length, 0);
  const sent = String(wireMessages(model.requests[0]).find((m) => m.role === "user")?.content);
  assert.match(sent, /<file path="[^"]*spec\.md">\n# The spec\nWrite x\.txt\n<\/file>/);
  assert.match(sent, /@\/.*other\.md/);
  const refused = wireMessages(model.requests[1]).find((message) => message.tool_call_id === "w1");
  assert.match(String(refused?.content), /plan mode/);
  assert.deepEqual(editor.problems, []);
});

Deno.test("agent acp: the schema check refuses what breaks the protocol", () => {
  const update = (update: unknown) => ({
    jsonrpc: "2.0",
    method: "session/update",
    params: { sessionId: "s", update },
  });
  assert.deepEqual(
    schemaProblems("agent", update({ sessionUpdate: "tool_call", toolCallId: "1", title: "ls" })),
    [],
  );
  assert.equal(
    schemaProblems("agent", update({ sessionUpdate: "tool_call", toolCallId: "1", kind: "ls" }))
      .length,
    1,
  );
  assert.equal(
    schemaProblems(
      "agent",
      { jsonrpc: "2.0", id: 1, result: { stopReason: "done" } },
      "session/prompt",
    )
      .length,
    1,
  );
  assert.deepEqual(
    schemaProblems(
      "agent",
      { jsonrpc: "2.0", id: 1, result: { stopReason: "cancelled" } },
      "session/prompt",
    ),
    [],
  );
});

Deno.test("agent acp: no secret the run knows reaches the editor", async () => {
  const key = "sk-acp-test-key-000000000000";
  await using model = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ id: "r1", name: "read", arguments: { path: "leak.txt" } }] },
      { text: ["The key is sk-acp-", "test-key-000000000000, ", "done."] },
    ],
  });
  await using editor = await startAcp({ model, clientCapabilities: {} });
  await Deno.writeTextFile(join(editor.cwd, "leak.txt"), `OPENAI_API_KEY=${key}\n`);
  const { sessionId } = await editor.agent.request("session/new", {
    cwd: editor.cwd,
    mcpServers: [],
  });
  await editor.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Read leak.txt" }],
  });
  const sent = JSON.stringify(editor.updates);
  assert.ok(!sent.includes(key), "the key reached the editor");
  assert.match(answerText(editor, sessionId), /The key is .*done\./);
  assert.match(sent, /\[redacted\]/);
  assert.deepEqual(editor.problems, []);
});

Deno.test("agent acp: an editor without file system or terminal gets the agent's own tools; Deno's grants bound what is offered", async () => {
  await using model = startMockOpenAIServer({
    replies: [
      {
        toolCalls: [{
          id: "w1",
          name: "write",
          arguments: { path: "out.txt", content: "on disk" },
        }],
      },
      { text: "Written." },
    ],
  });
  await using editor = await startAcp({
    model,
    clientCapabilities: {},
    args: ["--sandbox", "off"],
  });
  editor.answers.push("allow_once");
  const { sessionId } = await editor.agent.request("session/new", {
    cwd: editor.cwd,
    mcpServers: [],
  });
  await editor.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Write out.txt" }],
  });
  assert.equal(await Deno.readTextFile(join(editor.cwd, "out.txt")), "on disk");
  assert.equal(editor.writes.length + editor.reads.length, 0);
  const edit = updatesOf(editor, "tool_call_update", sessionId).find((update) => update.status);
  assert.deepEqual(edit?.content?.[0], {
    type: "diff",
    path: join(editor.cwd, "out.txt"),
    oldText: null,
    newText: "on disk",
  });
  assert.deepEqual(editor.problems, []);

  // Without --allow-run, no shell, whatever the editor offers.
  await using limited = await startAcp({
    model: startMockOpenAIServer({ replies: [{ text: "ok" }] }),
    permissions: ["--allow-read", "--allow-write", "--allow-env", "--allow-net", "--allow-sys"],
  });
  const other = await limited.agent.request("session/new", { cwd: limited.cwd, mcpServers: [] });
  await limited.agent.request("session/prompt", {
    sessionId: other.sessionId,
    prompt: [{ type: "text", text: "/tools" }],
  });
  const said = answerText(limited, other.sessionId);
  assert.match(said, /Tools offered: read/);
  assert.match(said, /Not offered: bash/);
  assert.deepEqual(limited.problems, []);
});

Deno.test("agent acp: an untrusted project's MCP servers do not start; what it says goes to stderr", async () => {
  await using model = startMockOpenAIServer({ replies: [{ text: "Hi." }] });
  await using editor = await startAcp({ model });
  const marker = join(editor.cwd, "ran");
  await Deno.writeTextFile(
    join(editor.cwd, ".mcp.json"),
    JSON.stringify({ mcpServers: { evil: { command: "sh", args: ["-c", `touch ${marker}`] } } }),
  );
  const { sessionId } = await editor.agent.request("session/new", {
    cwd: editor.cwd,
    mcpServers: [],
  });
  await editor.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Hello" }],
  });
  await assert.rejects(Deno.stat(marker), Deno.errors.NotFound);
  assert.match(editor.stderr(), /not trusted/);
  assert.deepEqual(editor.problems, []);
});

Deno.test("agent acp: a failed run answers the prompt with its error, and the next prompt works", async () => {
  await using model = startMockOpenAIServer({
    replies: [
      {
        status: 400,
        errorBody: { error: { message: "context too long", type: "invalid_request" } },
      },
      { text: "Fine now." },
    ],
  });
  await using editor = await startAcp({ model });
  const { sessionId } = await editor.agent.request("session/new", {
    cwd: editor.cwd,
    mcpServers: [],
  });
  await assert.rejects(
    editor.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Hi" }] }),
    (error: { code?: number; message?: string }) =>
      error.code === -32603 && /context too long/.test(error.message ?? ""),
  );
  const next = await editor.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Again" }],
  });
  assert.equal(next.stopReason, "end_turn");
  assert.equal(answerText(editor, sessionId), "Fine now.");
  assert.deepEqual(editor.problems, []);
});

Deno.test({
  name:
    "agent acp: a command in the editor's terminal still runs in the sandbox, without the editor's secrets",
  ignore: !(await detectSandbox()).available,
  async fn() {
    await using model = startMockOpenAIServer({
      replies: [
        {
          toolCalls: [{
            id: "b1",
            name: "bash",
            arguments: {
              command:
                'echo "secret=[$ACP_EDITOR_SECRET_TOKEN]"; touch "$HOME/escaped" || echo kept-out',
            },
          }],
        },
        { text: "Ran." },
      ],
    });
    // The editor's own environment holds a secret its terminals would inherit.
    Deno.env.set("ACP_EDITOR_SECRET_TOKEN", "editor-secret-value");
    try {
      await using editor = await startAcp({ model, args: ["--sandbox", "required"] });
      editor.answers.push("allow_once");
      const { sessionId } = await editor.agent.request("session/new", {
        cwd: editor.cwd,
        mcpServers: [],
      });
      await editor.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "Run it" }],
      });
      assert.equal(editor.terminals.length, 1);
      const { request } = editor.terminals[0];
      assert.match(request.command, /bwrap$/);
      assert.ok(request.args?.includes("--clearenv"));
      const result = wireMessages(model.requests[1]).find((message) =>
        message.tool_call_id === "b1"
      );
      assert.match(String(result?.content), /secret=\[\]/);
      assert.match(String(result?.content), /kept-out/);
      assert.deepEqual(editor.problems, []);
    } finally {
      Deno.env.delete("ACP_EDITOR_SECRET_TOKEN");
    }
  },
});

Deno.test("agent acp: a session is loaded by its whole id, and one another process writes is refused, not copied", async () => {
  await using model = startMockOpenAIServer({
    replies: [{ text: "First." }, { text: "Second." }],
  });
  const dataDir = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_acp_data_" }));
  const cwd = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_acp_cwd_" }));
  try {
    await using first = await startAcp({ model, dataDir, cwd });
    const { sessionId } = await first.agent.request("session/new", { cwd, mcpServers: [] });
    await first.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "Hello" }],
    });
    await using second = await startAcp({ model, dataDir, cwd });
    for (const id of [sessionId.slice(0, 8), "", "../../etc/passwd"]) {
      await assert.rejects(
        second.agent.request("session/load", { sessionId: id, cwd, mcpServers: [] }),
        (error: { code?: number }) => error.code === -32002,
        `"${id}" is no session id`,
      );
    }
    // The first process still writes it: the second may not go on in a copy the editor
    // would never see again.
    await assert.rejects(
      second.agent.request("session/load", { sessionId, cwd, mcpServers: [] }),
      (error: { code?: number; message?: string }) =>
        error.code === -32600 && /close it there first/.test(error.message ?? ""),
    );
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of Deno.readDirSync(dir)) {
        if (entry.isDirectory) walk(join(dir, entry.name));
        else if (entry.name.endsWith(".jsonl")) files.push(entry.name);
      }
    };
    walk(join(dataDir, "sessions"));
    assert.deepEqual(files, [`${sessionId}.jsonl`], "no copy was made");
    assert.deepEqual(second.problems, []);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
    await Deno.remove(cwd, { recursive: true });
  }
});

Deno.test("agent acp: closing a session mid-prompt answers the prompt cancelled", async () => {
  const long = Array.from({ length: 400 }, (_, i) => `${i} `);
  await using model = startMockOpenAIServer({ replies: [{ text: long, eventDelayMs: 20 }] });
  await using editor = await startAcp({ model });
  const { sessionId } = await editor.agent.request("session/new", {
    cwd: editor.cwd,
    mcpServers: [],
  });
  const prompt = editor.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Count" }],
  });
  await editor.nextUpdate((update) => update.sessionUpdate === "agent_message_chunk");
  await editor.agent.request("session/close", { sessionId });
  assert.equal((await prompt).stopReason, "cancelled");
  await assert.rejects(
    editor.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "x" }] }),
    (error: { code?: number }) => error.code === -32002,
  );
  assert.deepEqual(editor.problems, []);
});

Deno.test("agent acp: past the sessions kept open, the one unused the longest closes and opens again when used", async () => {
  await using model = startMockOpenAIServer({
    replies: (_body, index) => ({ text: `Answer ${index}.` }),
  });
  await using editor = await startAcp({ model });
  /**
   * What the agent holds open of its data directory: each session's memory database (not the
   * sessions index, which the session store opens once, when it first needs it, for all).
   */
  const held = async () => {
    let count = 0;
    for (const entry of Deno.readDirSync(`/proc/${editor.pid}/fd`)) {
      const target = await Deno.readLink(`/proc/${editor.pid}/fd/${entry.name}`).catch(() => "");
      if (target.startsWith(editor.dataDir) && !target.includes("/index.v2.sqlite")) count++;
    }
    return count;
  };
  const open = async () =>
    (await editor.agent.request("session/new", { cwd: editor.cwd, mcpServers: [] })).sessionId;
  const ids = [await open()];
  await editor.agent.request("session/set_mode", { sessionId: ids[0], modeId: "plan" });
  await editor.agent.request("session/prompt", {
    sessionId: ids[0],
    prompt: [{ type: "text", text: "Remember me" }],
  });
  while (ids.length < MAX_ACP_SESSIONS) ids.push(await open());
  const full = await held();
  ids.push(await open());
  // The first session closed to make room: what it held went with it.
  assert.ok(await held() <= full, `${await held()} files held, ${full} before`);
  const before = model.requests.length;
  const again = await editor.agent.request("session/prompt", {
    sessionId: ids[0],
    prompt: [{ type: "text", text: "/mode" }],
  });
  assert.equal(again.stopReason, "end_turn");
  assert.match(answerText(editor, ids[0]), /permission mode is plan/);
  await editor.agent.request("session/prompt", {
    sessionId: ids[0],
    prompt: [{ type: "text", text: "Still there?" }],
  });
  const history = wireMessages(model.requests[before]).map((message) => message.content ?? "");
  assert.ok(history.includes("Remember me"), "the reopened session has its history");
  assert.match(editor.stderr(), /^(?!.*did not close)/s);
  assert.deepEqual(editor.problems, []);
});
