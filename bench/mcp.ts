/**
 * The cost of an MCP tool call over stdio beyond the server's own time: `deno run -A
 * bench/mcp.ts [calls]`. One connection to the reference server
 * (`@modelcontextprotocol/server-everything`, run by Deno) serves every variant, interleaved
 * call by call so that drift hits them all alike:
 *
 * - raw: the SDK's `client.callTool` on the connection (the floor: JSON-RPC + the server);
 * - tool: the agent tool's `execute` (adds the wrapper and the result formatting);
 * - runner: `runToolCall` on the agent tool (adds input checks, timeout, output limits);
 * - no-op: `runToolCall` on a tool that does nothing (the runner alone, no MCP).
 *
 * The overhead is tool − raw (target ≤ 2 ms at the median).
 */

import { z } from "zod";
import { connectMcpServers } from "../lib/mcp/mod.ts";
import { defineTool, type ToolCallPart } from "../mod.ts";
import { runToolCall } from "../lib/tool_runner.ts";
import { toolRegistry } from "../lib/tool.ts";

const CALLS = Number(Deno.args[0] ?? 400);
const WARMUP = 50;
const TARGET_MS = 2;
const EVERYTHING = "npm:@modelcontextprotocol/server-everything@2026.8.31";

await using mcp = await connectMcpServers({
  mcpServers: {
    everything: {
      command: Deno.execPath(),
      args: ["run", "-A", "--no-config", "--no-lock", EVERYTHING, "stdio"],
    },
  },
}, { onWarning: (message) => console.error(message) });
const tool = mcp.tools.find((tool) => tool.name === "mcp__everything__echo");
const client = mcp.client("everything");
if (!tool || !client) throw new Error("The reference server did not start");

const noop = defineTool({
  name: "noop",
  description: "Does nothing",
  parameters: z.object({ message: z.string() }),
  execute: () => "",
});
const registry = toolRegistry([tool, noop]);
const signal = new AbortController().signal;
const context = { cwd: Deno.cwd(), signal, toolCallId: "b" };
const input = { message: "hello" };
const mcpCall: ToolCallPart = { type: "tool_call", id: "b", name: tool.name, input };
const noopCall: ToolCallPart = { type: "tool_call", id: "b", name: "noop", input };

const variants: Record<string, () => Promise<unknown>> = {
  raw: () => client.callTool({ name: "echo", arguments: input }),
  tool: async () => await tool.execute(input, context),
  runner: () => runToolCall(mcpCall, registry, { cwd: Deno.cwd(), signal }),
  "no-op": () => runToolCall(noopCall, registry, { cwd: Deno.cwd(), signal }),
};
const samples: Record<string, number[]> = Object.fromEntries(
  Object.keys(variants).map((name) => [name, []]),
);
for (let i = 0; i < WARMUP + CALLS; i++) {
  for (const [name, run] of Object.entries(variants)) {
    const started = performance.now();
    await run();
    if (i >= WARMUP) samples[name].push(performance.now() - started);
  }
}

const check = await tool.execute(input, context);
if (typeof check === "string" || check.output !== "Echo: hello") {
  throw new Error(`unexpected result: ${JSON.stringify(check)}`);
}

const stats = (values: number[]) => {
  const sorted = values.toSorted((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { median: at(0.5), p90: at(0.9) };
};
const figures = Object.fromEntries(
  Object.entries(samples).map(([name, values]) => [name, stats(values)]),
);
const ms = (value: number) => `${value.toFixed(3)} ms`;
console.log(`MCP tool call over stdio (echo on server-everything), ${CALLS} calls each:`);
for (const [name, { median, p90 }] of Object.entries(figures)) {
  console.log(
    `  ${name.padEnd(7)} median ${ms(median).padStart(10)}   p90 ${ms(p90).padStart(10)}`,
  );
}
const overhead = figures.tool.median - figures.raw.median;
const withRunner = figures.runner.median - figures.raw.median;
console.log(
  `overhead of the MCP tool wrapper: ${ms(overhead)} (target ≤ ${TARGET_MS} ms: ${
    overhead <= TARGET_MS ? "met" : "MISSED"
  }); with the tool runner: ${ms(withRunner)}; the runner alone (no-op): ${
    ms(figures["no-op"].median)
  }`,
);
