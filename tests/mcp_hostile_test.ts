/**
 * MCP servers that abuse their tool list cannot hang or crash the agent: one that says its tools
 * changed at every listing, or without end, one whose list never ends, one that stops answering
 * while its tools are listed again, one with a huge list. Against real MCP servers (the SDK's
 * `Server`, on stdio: tests/mcp_hostile_server.ts).
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { fileURLToPath as fromFileUrl } from "node:url";
import type { Tool } from "../mod.ts";
import {
  type ConnectMcpOptions,
  connectMcpServers,
  type McpConnection,
  type McpServerConfig,
} from "../lib/mcp/mod.ts";
import { followMcpTools } from "../lib/cli/mcp.ts";

const DENO_JSON = fromFileUrl(new URL("../deno.json", import.meta.url));

/** The hostile server in `mode`. */
function hostile(...mode: string[]): McpServerConfig {
  const script = fromFileUrl(new URL("./mcp_hostile_server.ts", import.meta.url));
  return { command: Deno.execPath(), args: ["run", "-A", "--config", DENO_JSON, script, ...mode] };
}

/** Connects to `servers`, keeping the warnings. */
async function connect(
  servers: Record<string, McpServerConfig>,
  options: ConnectMcpOptions = {},
): Promise<McpConnection & { warnings: string[] }> {
  const warnings: string[] = [];
  const mcp = await connectMcpServers({ mcpServers: servers }, {
    env: (name) => Deno.env.get(name),
    onWarning: (message) => warnings.push(message),
    ...options,
  });
  return Object.assign(mcp, { warnings });
}

/** `promise`, or `"pending"` once `ms` have passed. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | "pending"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<"pending">((resolve) => timer = setTimeout(() => resolve("pending"), ms)),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** How many `tools/list` requests the server has had. */
async function lists(mcp: McpConnection): Promise<number> {
  const result = await mcp.client("hostile")!.callTool({ name: "count" });
  return Number((result.content as { text: string }[])[0].text);
}

/** Runs the agent tool `name` of `mcp`. */
function run(
  mcp: McpConnection,
  name: string,
  signal = new AbortController().signal,
): Promise<unknown> {
  const tool = mcp.tools.find((each) => each.name === name)!;
  return Promise.resolve(
    tool.execute({}, { signal, cwd: Deno.cwd(), toolCallId: "c1" } as never),
  );
}

Deno.test("connectMcpServers() resolves within startupTimeoutMs when a server says its tools changed at every listing", async () => {
  const started = performance.now();
  const connecting = connect({ hostile: hostile("relist") }, { startupTimeoutMs: 3_000 });
  // The deadline, and room for a machine that is busy with other work.
  const mcp = await within(connecting, 6_000);
  assert.notEqual(mcp, "pending", "connectMcpServers() still pending after 6 s");
  await using connected = mcp as Awaited<typeof connecting>;
  assert.ok(performance.now() - started < 5_000, `${performance.now() - started} ms`);
  assert.deepEqual(connected.tools.map((tool) => tool.name), [
    "mcp__hostile__trigger",
    "mcp__hostile__count",
  ]);
  assert.deepEqual(connected.warnings, [
    'MCP server "hostile" kept saying its tools changed while they were listed; ' +
    "it offers those of the last listing",
  ]);
  // The first listing and a few more, not one per notification.
  assert.ok(await lists(connected) <= 5, `${await lists(connected)} tools/list requests`);
});

Deno.test("a server whose tool list never ends fails to start within startupTimeoutMs", async () => {
  const started = performance.now();
  const connecting = connect({ hostile: hostile("pages") }, { startupTimeoutMs: 1_500 });
  const mcp = await within(connecting, 5_000);
  assert.notEqual(mcp, "pending", "connectMcpServers() still pending after 5 s");
  await using connected = mcp as Awaited<typeof connecting>;
  assert.ok(performance.now() - started < 3_500, `${performance.now() - started} ms`);
  assert.deepEqual(connected.tools, []);
  assert.equal(connected.servers()[0].state, "failed");
  assert.match(
    connected.warnings.join("\n"),
    /^MCP server "hostile" failed to start: listing its tools failed: .*within 1\.5 s/,
  );
});

Deno.test("a call ends at its timeout while the server's tools are listed again", async () => {
  await using mcp = await connect({ hostile: hostile("hang") }, {
    startupTimeoutMs: 10_000,
    callTimeoutMs: 500,
  });
  const started = performance.now();
  // The server answered the call; its new tool list is not there yet, and the call does not wait.
  const output = await within(run(mcp, "mcp__hostile__trigger"), 3_000);
  assert.notEqual(output, "pending", "the call still pending after 3 s");
  assert.equal((output as { output: string }).output, "triggered");
  assert.ok(performance.now() - started < 2_500, `${performance.now() - started} ms`);
});

Deno.test("a call ends when its signal aborts while the server's tools are listed again", async () => {
  await using mcp = await connect({ hostile: hostile("hang") }, { startupTimeoutMs: 10_000 });
  const controller = new AbortController();
  const started = performance.now();
  setTimeout(() => controller.abort(new Error("stopped by the user")), 300);
  const ended = run(mcp, "mcp__hostile__trigger", controller.signal).then(
    () => "returned",
    (error: Error) => error.message,
  );
  assert.equal(await within(ended, 3_000), "stopped by the user");
  assert.ok(performance.now() - started < 1_000, `${performance.now() - started} ms`);
});

Deno.test("a server that says its tools changed without end gets a few tools/list requests a second", async () => {
  await using mcp = await connect({ hostile: hostile("storm") }, { startupTimeoutMs: 5_000 });
  await run(mcp, "mcp__hostile__trigger");
  const before = await lists(mcp);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const after = await lists(mcp);
  assert.ok(after - before <= 8, `${after - before} tools/list requests in a second`);
  // Its tools are still offered and can be called.
  assert.deepEqual(mcp.tools.map((tool) => tool.name), [
    "mcp__hostile__trigger",
    "mcp__hostile__count",
  ]);
});

Deno.test("a server with 200,000 tools offers the first 1,000, with a warning; the other server connects", async () => {
  const changing = fromFileUrl(new URL("./mcp_changing_server.ts", import.meta.url));
  await using mcp = await connect({
    many: hostile("many", "200000"),
    changing: { command: Deno.execPath(), args: ["run", "-A", "--config", DENO_JSON, changing] },
  });
  const [many, other] = mcp.servers();
  assert.equal(many.state, "connected");
  assert.equal(many.tools.length, 1_000);
  assert.deepEqual(many.tools.slice(0, 3), [
    "mcp__many__trigger",
    "mcp__many__count",
    "mcp__many__t0",
  ]);
  assert.equal(other.state, "connected");
  assert.equal(other.tools.length, 3);
  assert.equal(mcp.tools.length, 1_003);
  assert.ok(
    mcp.warnings.includes(
      'MCP server "many" offers more than 1000 tools; only its first 1000 are offered',
    ),
    mcp.warnings.join("\n"),
  );
});

Deno.test("followMcpTools() follows a connection of 200,000 tools", () => {
  const fake = (name: string) => ({ name }) as Tool;
  const huge = Array.from({ length: 200_000 }, (_, i) => fake(`mcp__s__t${i}`));
  const mcp = { tools: huge } as unknown as McpConnection;
  const tools = [fake("read")];
  followMcpTools(tools, mcp)();
  assert.equal(tools.length, 200_001);
  assert.equal(tools[0].name, "read");
  followMcpTools(tools, mcp, ["mcp__s__t7"])();
  assert.deepEqual(tools.map((tool) => tool.name), ["read", "mcp__s__t7"]);
});
