/**
 * `agent mcp`, the agent as an MCP server, driven as other agents drive it: the CLI as a child
 * process, the MCP SDK's own client on stdio and over Streamable HTTP, the model the loopback
 * mock OpenAI server. One server of each kind serves the steps of its test.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import {
  API_KEY,
  collectLog,
  mcpChild,
  mockReply,
  PROMPTS,
  requestFor,
  sessionTexts,
  startHttpServer,
  startStdioServer,
  waitFor,
} from "./agent_mcp_support.ts";
import { wireMessages } from "./openai_support.ts";
import { MAX_MCP_SESSIONS } from "../lib/cli/mcp_server_http.ts";
import { runCli } from "./terminal_support.ts";

/** The structured result of a task, as the tools declare it. */
interface TaskResult {
  sessionId: string;
  status: string;
  text: string;
  turns: number;
  toolCalls: number;
  usage: { inputTokens: number; outputTokens: number };
}

Deno.test("agent mcp on stdio: tools, tasks, follow-ups, progress, cancelling", async (t) => {
  await using model = startMockOpenAIServer({ replies: mockReply });
  await using server = await startStdioServer(model.url);
  const { client } = server;
  let first: TaskResult | undefined;

  await t.step("lists run_task and continue_task with their schemas", async () => {
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    assert.deepEqual(Object.keys(byName).sort(), ["continue_task", "run_task"]);
    const run = byName.run_task;
    assert.deepEqual(run.inputSchema.required, ["prompt"]);
    assert.deepEqual(
      Object.keys(run.inputSchema.properties ?? {}).sort(),
      ["cwd", "max_turns", "model", "permission_mode", "prompt"],
    );
    const mode = (run.inputSchema.properties as Record<string, { enum?: string[] }>)
      .permission_mode;
    assert.deepEqual(mode.enum, ["plan", "default", "accept-edits"]);
    assert.deepEqual(byName.continue_task.inputSchema.required?.sort(), ["prompt", "session_id"]);
    for (const tool of tools) {
      assert.deepEqual(
        tool.outputSchema?.required?.sort(),
        ["sessionId", "status", "text", "toolCalls", "turns", "usage"],
      );
    }
  });

  await t.step("runs a task that reads a file, with progress, and gives its session", async () => {
    const progress: string[] = [];
    const result = await client.callTool(
      { name: "run_task", arguments: { prompt: PROMPTS.read } },
      undefined,
      { onprogress: (note) => progress.push(note.message ?? "") },
    );
    assert.equal(result.isError, undefined, JSON.stringify(result));
    const content = result.content as { type: string; text: string }[];
    assert.equal(content[0].text, "The note says: buy oat milk");
    first = result.structuredContent as unknown as TaskResult;
    assert.equal(first.status, "success");
    assert.equal(first.text, "The note says: buy oat milk");
    assert.equal(first.turns, 2);
    assert.equal(first.toolCalls, 1);
    assert.ok(first.usage.inputTokens > 0);
    assert.match(first.sessionId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(progress, ["turn 1", "turn 1: read notes.txt", "turn 2"]);
    const saved = await sessionTexts(server.setup.dataDir);
    assert.ok(saved.some((text) => text.includes(first!.sessionId)), "the session is saved");
  });

  await t.step("continues that session: the model sees the earlier history", async () => {
    const result = await client.callTool({
      name: "continue_task",
      arguments: { session_id: first!.sessionId.slice(0, 8), prompt: PROMPTS.follow },
    });
    assert.equal(result.isError, undefined, JSON.stringify(result));
    const next = result.structuredContent as unknown as TaskResult;
    assert.equal(next.text, "Followed up.");
    assert.equal(next.sessionId, first!.sessionId, "the same session goes on");
    const sent = wireMessages(requestFor(model.requests, PROMPTS.follow));
    const texts = sent.map((message) => `${message.role}: ${message.content ?? ""}`);
    assert.ok(texts.some((text) => text.includes(PROMPTS.read)), texts.join("\n"));
    assert.ok(texts.some((text) => text.startsWith("tool:") && text.includes("buy oat milk")));
    assert.ok(texts.includes("assistant: The note says: buy oat milk"), texts.join("\n"));
  });

  await t.step("what a task returns and tells goes through the run's redactor", async () => {
    const progress: string[] = [];
    const result = await client.callTool(
      { name: "run_task", arguments: { prompt: PROMPTS.leak } },
      undefined,
      { onprogress: (note) => progress.push(note.message ?? "") },
    );
    const said = JSON.stringify({ result, progress });
    assert.ok(!said.includes(API_KEY), said);
    assert.equal((result.structuredContent as unknown as TaskResult).text, "The key is [redacted]");
    assert.ok(progress.includes("turn 1: read [redacted].txt"), progress.join("\n"));
  });

  await t.step("a task stopped at its turn limit is a tool error that says so", async () => {
    const result = await client.callTool({
      name: "run_task",
      arguments: { prompt: PROMPTS.read, max_turns: 1 },
    });
    assert.equal(result.isError, true);
    const stopped = result.structuredContent as unknown as TaskResult;
    assert.equal(stopped.status, "max_turns");
    assert.equal(stopped.turns, 1);
    assert.match((result.content as { text: string }[])[0].text, /limit of 1 turn .*continue_task/);
  });

  await t.step("permission_mode plan narrows: the task changes nothing", async () => {
    const result = await client.callTool({
      name: "run_task",
      arguments: { prompt: PROMPTS.write, permission_mode: "plan" },
    });
    const text = (result.structuredContent as unknown as TaskResult).text;
    assert.match(text, /plan mode only looks/);
    await assert.rejects(Deno.stat(join(server.setup.cwd, "out.txt")), Deno.errors.NotFound);
    // Without it, the server's own mode lets the write through (Deno grants it).
    await client.callTool({ name: "run_task", arguments: { prompt: PROMPTS.write } });
    assert.equal(await Deno.readTextFile(join(server.setup.cwd, "out.txt")), "written");
  });

  await t.step("a run that fails is a tool error that says what happened", async () => {
    const result = await client.callTool({ name: "run_task", arguments: { prompt: PROMPTS.fail } });
    assert.equal(result.isError, true);
    const failed = result.structuredContent as unknown as TaskResult & { error?: string };
    assert.equal(failed.status, "error");
    assert.match(failed.error ?? "", /400/);
    assert.match((result.content as { text: string }[])[0].text, /^The task failed: .*400/);
  });

  await t.step("a session that does not exist is a tool error", async () => {
    const result = await client.callTool({
      name: "continue_task",
      arguments: { session_id: "ffffffff", prompt: PROMPTS.follow },
    });
    assert.equal(result.isError, true);
    assert.match(
      (result.content as { text: string }[])[0].text,
      /No session matches "ffffffff"\. Give the sessionId a task returned/,
    );
  });

  await t.step("a working directory that does not exist is a tool error", async () => {
    const result = await client.callTool({
      name: "run_task",
      arguments: { prompt: PROMPTS.hello, cwd: "/no/such/directory" },
    });
    assert.equal(result.isError, true);
    const content = result.content as { text: string }[];
    assert.match(content[0].text, /\/no\/such\/directory does not exist/);
  });

  await t.step(
    "a working directory outside the server's is refused: the caller grants nothing",
    async () => {
      for (const cwd of ["/", "..", Deno.env.get("HOME")!]) {
        const before = model.requests.length;
        const result = await client.callTool({
          name: "run_task",
          arguments: { prompt: PROMPTS.hello, cwd },
        });
        assert.equal(result.isError, true, cwd);
        const content = result.content as { text: string }[];
        assert.match(content[0].text, /outside the server's workspace/);
        assert.equal(model.requests.length, before, "nothing ran");
      }
    },
  );

  await t.step("a model prepare refuses is a tool error, and the server goes on", async () => {
    const result = await client.callTool({
      name: "run_task",
      arguments: { prompt: PROMPTS.hello, model: "nosuchprovider/x" },
    });
    assert.equal(result.isError, true);
    assert.match((result.content as { text: string }[])[0].text, /nosuchprovider/);
    const again = await client.callTool({ name: "run_task", arguments: { prompt: PROMPTS.hello } });
    assert.equal((again.structuredContent as unknown as TaskResult).text, "Hello back.");
  });

  await t.step("a cancelled task ends aborted at once, its session kept", async () => {
    const cancel = new AbortController();
    const call = client.callTool(
      { name: "run_task", arguments: { prompt: PROMPTS.slow } },
      undefined,
      { signal: cancel.signal },
    );
    call.catch(() => {});
    await waitFor(() => JSON.stringify(model.requests.map((r) => r.body)), /SLOW task/, 30_000);
    cancel.abort();
    await assert.rejects(call);
    // Far less than the model's minute: the run is aborted, not waited out.
    const ended = await server.waitFor(/task ([0-9a-f]{8}) aborted \(/, 15_000);
    const saved = await sessionTexts(server.setup.dataDir);
    assert.ok(
      saved.some((text) => text.includes(ended[1]) && text.includes(PROMPTS.slow)),
      "the cancelled task's session is kept with its prompt",
    );
  });

  await t.step("stdout carried only the protocol; the log went to stderr", () => {
    assert.match(server.stderr(), /serving MCP \(openai\/test\) on stdio/);
    assert.ok(!server.stderr().includes(API_KEY), server.stderr());
  });
});

Deno.test("agent mcp logs each task to its caller, at the session's level, redacted", async (t) => {
  await using model = startMockOpenAIServer({ replies: mockReply });
  // The user's hook fails before each model call, and its warning names the key.
  await using server = await startStdioServer(model.url, {
    hooks: { beforeModelCall: [{ command: `echo "hook saw ${API_KEY}" >&2; exit 1` }] },
  });
  const { client } = server;
  const log = collectLog(client);
  const levels = () => [...new Set(log.map((message) => message.level))].sort();
  const run = async (prompt: string) => {
    log.length = 0;
    const result = await client.callTool({ name: "run_task", arguments: { prompt } });
    assert.equal(result.isError, undefined, JSON.stringify(result));
  };

  await t.step("the server declares logging and completions", () => {
    const capabilities = client.getServerCapabilities();
    assert.deepEqual(capabilities?.logging, {});
    assert.deepEqual(capabilities?.completions, {});
  });

  await t.step("until the session sets a level: the start, the end and warnings", async () => {
    await run(PROMPTS.hello);
    assert.deepEqual(levels(), ["info", "warning"], JSON.stringify(log));
    const [started, ended] = log.filter((message) => message.level === "info");
    assert.match(started.data, /^task ([0-9a-f]{8}) started in .* with openai\/test$/);
    assert.match(ended.data, /^task [0-9a-f]{8} success \(1 turn, 0 tool calls\)$/);
  });

  await t.step("a secret in a warning reaches the caller redacted", () => {
    const warning = log.find((message) => message.level === "warning");
    assert.equal(
      warning?.data,
      `beforeModelCall hook "echo "hook saw [redacted]" >&2; exit 1" failed (exit 1): ` +
        "hook saw [redacted]",
    );
    assert.ok(!JSON.stringify(log).includes(API_KEY));
  });

  await t.step("at warning: only the warnings, no tool call (debug) nor start (info)", async () => {
    assert.deepEqual(await client.setLoggingLevel("warning"), {});
    await run(PROMPTS.read);
    assert.deepEqual(levels(), ["warning"], JSON.stringify(log));
    assert.equal(log.length, 2, "one warning of the hook for each of the two model calls");
  });

  await t.step("at debug: each turn and tool call too, redacted", async () => {
    await client.setLoggingLevel("debug");
    await run(PROMPTS.read);
    const debug = log.filter((message) => message.level === "debug").map((message) => message.data);
    assert.deepEqual(debug.filter((line) => !/^read done \(\d+ ms\)$/.test(line)), [
      "turn 1",
      "tool call: read notes.txt",
      "turn 2",
    ]);
    assert.equal(debug.length, 4, debug.join("\n"));
    await run(PROMPTS.leak);
    const said = JSON.stringify(log);
    assert.ok(!said.includes(API_KEY), said);
    assert.ok(log.some((message) => message.data === "tool call: read [redacted].txt"), said);
  });

  await t.step("a level MCP does not have is refused, and the level stays", async () => {
    await assert.rejects(client.setLoggingLevel("verbose" as "debug"), /Invalid/i);
    await run(PROMPTS.hello);
    assert.ok(log.some((message) => message.level === "debug"), JSON.stringify(log));
  });

  await t.step("a completion has no values: the server offers no prompts", async () => {
    assert.equal(client.getServerCapabilities()?.prompts, undefined);
    const answer = await client.complete({
      ref: { type: "ref/prompt", name: "test_prompt_with_arguments" },
      argument: { name: "arg1", value: "test" },
    });
    assert.deepEqual(answer, { completion: { values: [], total: 0, hasMore: false } });
  });
});

Deno.test("agent mcp --port: token, 401s, foreign origins and hosts, Ctrl+C", async (t) => {
  await using model = startMockOpenAIServer({ replies: mockReply });
  await using server = await startHttpServer(model.url);
  const mode = (await Deno.stat(server.tokenFile)).mode! & 0o777;
  assert.equal(mode, 0o600, "the token file is the user's alone");

  await t.step("works with the token", async () => {
    const client = await server.connect();
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ["continue_task", "run_task"]);
    const result = await client.callTool({
      name: "run_task",
      arguments: { prompt: PROMPTS.hello },
    });
    assert.equal((result.structuredContent as unknown as TaskResult).text, "Hello back.");
    await client.close();
  });

  await t.step("each MCP session has its own log level", async () => {
    const quiet = await server.connect();
    const chatty = await server.connect();
    const [quietLog, chattyLog] = [collectLog(quiet), collectLog(chatty)];
    await quiet.setLoggingLevel("warning");
    for (const client of [quiet, chatty]) {
      await client.callTool({ name: "run_task", arguments: { prompt: PROMPTS.hello } });
    }
    assert.deepEqual(quietLog, []);
    assert.deepEqual(chattyLog.map((message) => message.level), ["info", "info"]);
    assert.match(chattyLog[1].data, /^task [0-9a-f]{8} success/);
    await Promise.all([quiet.close(), chatty.close()]);
  });

  const initialize = (headers: Record<string, string>) =>
    fetch(server.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...headers,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "curl", version: "1" },
        },
      }),
    });

  await t.step("401 without a token and with a wrong one", async () => {
    const none = await initialize({});
    assert.equal(none.status, 401);
    assert.match((await none.json()).error.message, /needs its token/);
    const wrong = await initialize({ authorization: "Bearer not-the-token" });
    assert.equal(wrong.status, 401);
    assert.match((await wrong.json()).error.message, /token is wrong/);
    await assert.rejects(server.connect("not-the-token"));
  });

  await t.step("a page of another origin is refused, even with the token", async () => {
    const response = await initialize({
      authorization: `Bearer ${server.token}`,
      origin: "http://evil.example",
    });
    assert.equal(response.status, 403);
    assert.match((await response.json()).error.message, /other origins/);
  });

  await t.step("a request for another host name (DNS rebinding) is refused", async () => {
    const { port } = new URL(server.url);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
    const request = `POST /mcp HTTP/1.1\r\nHost: rebound.example:${port}\r\n` +
      `Authorization: Bearer ${server.token}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`;
    await conn.write(new TextEncoder().encode(request));
    const answer = await new Response(conn.readable).text();
    assert.match(answer, /^HTTP\/1\.1 403/);
    assert.match(answer, /answers only at 127\.0\.0\.1/);
  });

  await t.step("sessions left open do not pile up: the one unused the longest goes", async () => {
    const ids: string[] = [];
    for (let i = 0; i <= MAX_MCP_SESSIONS; i++) {
      const response = await initialize({ authorization: `Bearer ${server.token}` });
      assert.equal(response.status, 200);
      await response.body?.cancel();
      ids.push(response.headers.get("mcp-session-id")!);
    }
    const ping = (id: string) =>
      fetch(server.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${server.token}`,
          "mcp-session-id": id,
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }),
      });
    const first = await ping(ids[0]);
    await first.body?.cancel();
    assert.equal(first.status, 404, "the oldest session was closed");
    const last = await ping(ids.at(-1)!);
    await last.body?.cancel();
    assert.equal(last.status, 200);
  });

  await t.step("Ctrl+C cancels the task going, which answers, and exits 0", async () => {
    const client = await server.connect();
    const call = client.callTool({ name: "run_task", arguments: { prompt: PROMPTS.slow } });
    await waitFor(() => JSON.stringify(model.requests.map((r) => r.body)), /SLOW task/, 30_000);
    const code = await server.interrupt();
    const result = await call;
    assert.equal(code, 0);
    assert.equal(result.isError, true);
    assert.equal((result.structuredContent as unknown as TaskResult).status, "aborted");
    assert.match((result.content as { text: string }[])[0].text, /cancelled/);
    await client.close().catch(() => {});
    await assert.rejects(Deno.stat(server.tokenFile), Deno.errors.NotFound);
  });
});

Deno.test("agent mcp on stdio: a client that stops reading is gone, and the server stops", async () => {
  await using model = startMockOpenAIServer({ replies: mockReply });
  const setup = await mcpChild(model.url);
  const child = new Deno.Command(Deno.execPath(), {
    args: setup.args,
    cwd: setup.cwd,
    env: setup.env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const input = child.stdin.getWriter();
  const send = (message: unknown) =>
    input.write(new TextEncoder().encode(`${JSON.stringify(message)}\n`));
  await send({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "t", version: "1" },
    },
  });
  const output = child.stdout.getReader();
  const first = await output.read();
  assert.match(new TextDecoder().decode(first.value), /"id":1/);
  await output.cancel(); // the client stops reading: the answer below has nowhere to go
  await send({ jsonrpc: "2.0", method: "notifications/initialized" });
  await send({
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "run_task", arguments: { prompt: PROMPTS.hello } },
  });
  const { code } = await child.status;
  await input.close().catch(() => {});
  const log = await stderr;
  assert.equal(code, 0, log);
  assert.match(log, /stopping \(the client went away\)/);
  assert.doesNotMatch(log, /Uncaught|EPIPE/);
});

Deno.test("agent mcp: a bad flag exits 2, a missing key 1, each with a clear message", async () => {
  const [flag, key] = await Promise.all([
    runCli(["mcp", "--continue"], { env: { OPENAI_API_KEY: "sk-x" } }),
    runCli(["mcp", "-m", "openai/test"], {}),
  ]);
  assert.equal(flag.code, 2, flag.stderr);
  assert.match(flag.stderr, /--continue is not an option of agent mcp/);
  assert.equal(flag.stdout, "");
  assert.equal(key.code, 1, key.stderr);
  assert.match(key.stderr, /OPENAI_API_KEY/);
  assert.equal(key.stdout, "");
});
