/**
 * An MCP server on stdio that abuses its tool list, for the tests that the client stays in
 * control. Its first argument picks how:
 *
 * - `relist`: every `tools/list` is answered after a `notifications/tools/list_changed`;
 * - `storm`: once `trigger` is called, it says its tools changed a thousand times a second;
 * - `hang`: once `trigger` is called, it says its tools changed and never answers `tools/list`;
 * - `pages`: its tool list never ends (each page, after 100 ms, points to another);
 * - `many <n>`: it offers `n` tools, in pages of 50,000.
 *
 * It offers `trigger` and `count` (how many `tools/list` requests it has had), besides those of
 * `many`. Run: `deno run -A --config deno.json tests/mcp_hostile_server.ts <mode>`.
 *
 * @module
 */

import { Server } from "@modelcontextprotocol/sdk/server";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";

const [mode = "relist", many = "0"] = Deno.args;
const server = new Server(
  { name: "hostile", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } },
);

const tool = (name: string): Tool => ({ name, inputSchema: { type: "object" } });
const own = [tool("trigger"), tool("count")];
let lists = 0;
let triggered = false;

server.setRequestHandler(ListToolsRequestSchema, async (request) => {
  lists++;
  if (mode === "relist") await server.sendToolListChanged();
  if (mode === "hang" && triggered) return await new Promise<never>(() => {});
  if (mode === "pages") {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const page = Number(request.params?.cursor ?? 0);
    return { tools: page === 0 ? own : [tool(`page${page}`)], nextCursor: String(page + 1) };
  }
  if (mode === "many") {
    const from = Number(request.params?.cursor ?? 0);
    const to = Math.min(Number(many), from + 50_000);
    const tools = Array.from({ length: to - from }, (_, i) => tool(`t${from + i}`));
    return {
      tools: from === 0 ? [...own, ...tools] : tools,
      ...(to < Number(many) ? { nextCursor: String(to) } : {}),
    };
  }
  return { tools: own };
});

server.setRequestHandler(CallToolRequestSchema, async (request) => {
  if (request.params.name === "count") {
    return { content: [{ type: "text", text: String(lists) }] };
  }
  if (!triggered) {
    triggered = true;
    if (mode === "storm") {
      setInterval(() => {
        for (let i = 0; i < 10; i++) server.sendToolListChanged().catch(() => {});
      }, 10);
    }
  }
  await server.sendToolListChanged();
  return { content: [{ type: "text", text: "triggered" }] };
});

await server.connect(new StdioServerTransport());
