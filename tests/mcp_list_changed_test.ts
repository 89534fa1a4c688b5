/**
 * MCP servers whose tools change (`notifications/tools/list_changed`): the next model request
 * offers the new list, a tool the server removed is gone, and a call to it fails with an error
 * that says why. Against a real MCP server (the SDK's `McpServer`, on stdio) and a model
 * served over HTTP in OpenAI's streaming format.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";
import { Agent, runAgent, type Tool } from "../mod.ts";
import { connectMcpServers, type McpConfig, type McpConnection } from "../lib/mcp/mod.ts";
import { resolveModel } from "../lib/providers/resolve.ts";
import { runToolCall } from "../lib/tool_runner.ts";
import { toolRegistry } from "../lib/tool.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { collect } from "./run_support.ts";
import { runCli, tempDir } from "./terminal_support.ts";

const CHANGING: McpConfig = {
  mcpServers: {
    changing: {
      command: Deno.execPath(),
      args: [
        "run",
        "-A",
        "--config",
        fromFileUrl(new URL("../deno.json", import.meta.url)),
        fromFileUrl(new URL("./mcp_changing_server.ts", import.meta.url)),
      ],
    },
  },
};

/** Connects to the changing server, keeping its warnings and the changes it announced. */
async function connect(): Promise<McpConnection & { warnings: string[]; changes: string[] }> {
  const warnings: string[] = [];
  const changes: string[] = [];
  const mcp = await connectMcpServers(CHANGING, {
    env: (name) => Deno.env.get(name),
    onWarning: (message) => warnings.push(message),
    onToolsChanged: (server) => changes.push(server),
  });
  return Object.assign(mcp, { warnings, changes });
}

/** The tool names of each request the model server received. */
function offeredPerRequest(requests: { body: Record<string, unknown> }[]): string[][] {
  return requests.map((request) =>
    ((request.body.tools ?? []) as { function: { name: string } }[]).map((tool) =>
      tool.function.name
    )
  );
}

Deno.test("runAgent() offers an MCP server's changed tools from the next model request", async () => {
  await using mcp = await connect();
  assert.deepEqual(mcp.warnings, []);
  assert.deepEqual(mcp.tools.map((tool) => tool.name), [
    "mcp__changing__first",
    "mcp__changing__stay",
    "mcp__changing__announce",
  ]);
  await using server = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ name: "mcp__changing__first", arguments: {} }] },
      { toolCalls: [{ name: "mcp__changing__second", arguments: { word: "hi" } }] },
      { toolCalls: [{ name: "mcp__changing__first", arguments: {} }] },
      { text: "done" },
    ],
  });
  const model = resolveModel("openai/test", { baseURL: server.url, apiKey: "sk-test" });
  // The connection's own list, as users pass it: it changes in place.
  const { events, result } = await collect(
    runAgent({ model, tools: mcp.tools, input: "go", repeatGuard: false }),
  );
  assert.equal(result.status, "success", JSON.stringify(result.error));

  assert.deepEqual(offeredPerRequest(server.requests), [
    ["mcp__changing__first", "mcp__changing__stay", "mcp__changing__announce"],
    ["mcp__changing__stay", "mcp__changing__announce", "mcp__changing__second"],
    ["mcp__changing__stay", "mcp__changing__announce", "mcp__changing__second"],
    ["mcp__changing__stay", "mcp__changing__announce", "mcp__changing__second"],
  ]);
  const results = events.flatMap((event) => event.type === "tool_result" ? [event] : []);
  assert.deepEqual(results.map((each) => [each.output, each.isError]), [
    ["first ran; the tool list changed", false],
    ["second got hi", false],
    [
      'Error: unknown tool "mcp__changing__first". Available tools: mcp__changing__stay, ' +
      "mcp__changing__announce, mcp__changing__second.",
      true,
    ],
  ]);
  assert.ok(mcp.changes.length >= 1 && mcp.changes.every((name) => name === "changing"));
  assert.deepEqual(mcp.servers()[0].tools, [
    "mcp__changing__stay",
    "mcp__changing__announce",
    "mcp__changing__second",
  ]);
});

Deno.test("a tool the MCP server removed fails with an error that says so", async () => {
  await using mcp = await connect();
  const first = mcp.tools.find((tool) => tool.name === "mcp__changing__first")!;
  // A registry made before the change still holds the tool: the model was offered it.
  const before = toolRegistry([first]);
  const call = (registry: ReadonlyMap<string, Tool>) =>
    runToolCall(
      { type: "tool_call", id: "c1", name: "mcp__changing__first", input: {} },
      registry,
      { cwd: Deno.cwd(), signal: new AbortController().signal },
    );
  assert.equal((await call(before)).output, "first ran; the tool list changed");
  const again = await call(before);
  assert.equal(again.isError, true);
  assert.equal(
    again.output,
    'Error: MCP server "changing" no longer offers "first": its tool list changed; ' +
      "call one of the tools offered now",
  );
  assert.ok(!mcp.tools.includes(first));
});

Deno.test("a list_changed that changes nothing keeps the same tools; a function gives the list as it stands", async () => {
  await using mcp = await connect();
  const tools = [...mcp.tools];
  await using server = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ name: "mcp__changing__announce", arguments: {} }] },
      { toolCalls: [{ name: "mcp__changing__first", arguments: {} }] },
      { text: "done" },
    ],
  });
  const model = resolveModel("openai/test", { baseURL: server.url, apiKey: "sk-test" });
  // A list made of others' (here a copy) is given as a function, read before each request.
  const agent = new Agent({ model, tools: () => [...mcp.tools], repeatGuard: false });
  const result = await agent.run("go");
  assert.equal(result.status, "success", JSON.stringify(result.error));
  assert.ok(mcp.changes.length >= 2, "announced, and changed");
  const offered = offeredPerRequest(server.requests);
  assert.deepEqual(offered[0], offered[1], "announced, but nothing changed");
  assert.deepEqual(offered[2], [
    "mcp__changing__stay",
    "mcp__changing__announce",
    "mcp__changing__second",
  ]);
  // The tools that did not change are the same objects.
  assert.ok(tools.slice(1).every((tool) => mcp.tools.includes(tool)));
});

Deno.test("cli: a server's changed tools are offered from the next model request", async () => {
  const dir = await tempDir();
  const config = join(dir, "mcp.json");
  await Deno.writeTextFile(config, JSON.stringify(CHANGING));
  await using server = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ name: "mcp__changing__first", arguments: {} }] },
      { toolCalls: [{ name: "mcp__changing__second", arguments: { word: "cli" } }] },
      { text: "done" },
    ],
  });
  const run = await runCli(
    ["-m", "openai/test", "--mcp-config", config, "--no-session", "--output", "stream-json", "go"],
    {
      cwd: dir,
      env: {
        OPENAI_API_KEY: "sk-test",
        OPENAI_BASE_URL: server.url,
        AGENT_CONFIG_DIR: await tempDir(),
      },
    },
  );
  assert.equal(run.code, 0, run.stderr);
  const mcpTools = offeredPerRequest(server.requests).map((names) =>
    names.filter((name) => name.startsWith("mcp__"))
  );
  assert.deepEqual(mcpTools, [
    ["mcp__changing__first", "mcp__changing__stay", "mcp__changing__announce"],
    ["mcp__changing__stay", "mcp__changing__announce", "mcp__changing__second"],
    ["mcp__changing__stay", "mcp__changing__announce", "mcp__changing__second"],
  ]);
  const events = run.stdout.trim().split("\n").map((line) => JSON.parse(line));
  const results = events.filter((event) => event.type === "tool_result");
  assert.deepEqual(results.map((event) => event.output), [
    "first ran; the tool list changed",
    "second got cli",
  ]);
});
