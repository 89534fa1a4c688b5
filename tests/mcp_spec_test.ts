/**
 * The MCP client as the spec has it, against a stateless server over Streamable HTTP (the SDK's
 * own server side): a 404 on the optional GET stream is no lost session when no session id was
 * sent, and a call that finished is never cancelled afterwards.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { runAgent } from "../mod.ts";
import { connectMcpServers } from "../lib/mcp/mod.ts";
import { scriptedModel } from "../lib/testing/mod.ts";
import { startHttpMcp } from "./mcp_http_support.ts";
import { collect } from "./run_support.ts";

const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

Deno.test("a stateless server that answers the GET stream with 404 stays connected, its tools listed and called", async () => {
  await using server = startHttpMcp({ getStatus: 404 });
  const warnings: string[] = [];
  await using mcp = await connectMcpServers(
    { mcpServers: { web: { type: "http", url: server.url } } },
    { onWarning: (message) => warnings.push(message) },
  );
  await settle(); // the GET stream is opened, and refused, after the handshake
  assert.ok(server.seen.some((request) => request.method === "GET"), "the client tried it");
  const { tools } = await mcp.client("web")!.listTools();
  assert.deepEqual(tools.map((tool) => tool.name).sort(), ["echo", "wait"]);
  const echo = mcp.tools.find((tool) => tool.name === "mcp__web__echo")!;
  const result = await echo.execute({ text: "hi" }, {
    cwd: Deno.cwd(),
    toolCallId: "c1",
    signal: new AbortController().signal,
  });
  assert.match(typeof result === "string" ? result : result.output, /echo: hi/);
  assert.deepEqual(warnings, []);
  assert.deepEqual(mcp.servers().map((status) => status.state), ["connected"]);
});

Deno.test("a run's finished MCP calls are not cancelled when the run ends; one in flight is", async () => {
  await using server = startHttpMcp();
  await using mcp = await connectMcpServers({
    mcpServers: { web: { type: "http", url: server.url } },
  });
  const { result } = await collect(runAgent({
    model: scriptedModel([
      { toolCalls: [{ name: "mcp__web__echo", input: { text: "one" } }] },
      { toolCalls: [{ name: "mcp__web__echo", input: { text: "two" } }] },
      { text: "Done." },
    ]),
    tools: mcp.tools,
    input: "Echo twice",
  }));
  assert.equal(result.status, "success");
  await settle();
  assert.equal(server.methods().filter((method) => method === "tools/call").length, 2);
  assert.deepEqual(
    server.methods().filter((method) => method === "notifications/cancelled"),
    [],
    "a call that had its answer was cancelled",
  );

  // A caller that calls the tool with a signal of its own that lives on, aborted later.
  const longLived = new AbortController();
  const echo = mcp.tools.find((tool) => tool.name === "mcp__web__echo")!;
  await echo.execute({ text: "three" }, {
    cwd: Deno.cwd(),
    toolCallId: "c3",
    signal: longLived.signal,
  });
  longLived.abort();
  await settle();
  assert.deepEqual(
    server.methods().filter((method) => method === "notifications/cancelled"),
    [],
    "a call answered before its signal aborted was cancelled",
  );

  // A call still going when the run is cancelled is cancelled at the server.
  const controller = new AbortController();
  const running = collect(runAgent({
    model: scriptedModel([{ toolCalls: [{ name: "mcp__web__wait", input: { ms: 1_500 } }] }]),
    tools: mcp.tools,
    input: "Wait",
    signal: controller.signal,
  }));
  const calls = () => server.methods().filter((method) => method === "tools/call").length;
  while (calls() < 4) await settle();
  controller.abort();
  assert.equal((await running).result.status, "aborted");
  await settle();
  assert.deepEqual(
    server.methods().filter((method) => method === "notifications/cancelled").length,
    1,
  );
});

Deno.test("a 404 to a request that named its session is an expired session: the server is started again", async () => {
  await using server = startHttpMcp({ sessions: true });
  const warnings: string[] = [];
  await using mcp = await connectMcpServers(
    { mcpServers: { web: { type: "http", url: server.url } } },
    { onWarning: (message) => warnings.push(message) },
  );
  const echo = mcp.tools.find((tool) => tool.name === "mcp__web__echo")!;
  const call = async (text: string) => {
    try {
      const result = await echo.execute({ text }, {
        cwd: Deno.cwd(),
        toolCallId: "c",
        signal: new AbortController().signal,
      });
      return typeof result === "string" ? result : result.output;
    } catch (error) {
      return (error as Error).message;
    }
  };
  assert.match(await call("one"), /echo: one/);
  server.forget();
  // The session is gone: the call says so, and the next one goes to a new session.
  const lost = await call("two");
  assert.match(lost, /restarted|echo: two/);
  assert.match(await call("three"), /echo: three/);
  assert.equal(server.methods().filter((method) => method === "initialize").length, 2);
});
