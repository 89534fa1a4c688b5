/**
 * An MCP server on stdio whose tool list changes, for the tests of list changes: it starts with
 * `first`, `stay` and `announce`; a call to `first` adds `second` and removes `first`, and the
 * SDK tells the client of each change (`notifications/tools/list_changed`), all before the call
 * is answered. `announce` sends that notification with no change.
 *
 * Run: `deno run -A --config deno.json tests/mcp_changing_server.ts`.
 *
 * @module
 */

// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "changing", version: "1.0.0" });

const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });

const first = server.registerTool("first", {
  description: "The first tool: calling it swaps it for the second",
  inputSchema: { note: z.string().optional() },
}, () => {
  server.registerTool("second", {
    description: "The second tool, added by the first",
    inputSchema: { word: z.string() },
  }, ({ word }) => text(`second got ${word}`));
  first.remove();
  return text("first ran; the tool list changed");
});

server.registerTool("stay", { description: "A tool that never goes" }, () => text("still here"));

server.registerTool("announce", { description: "Says the list changed, changing nothing" }, () => {
  server.sendToolListChanged();
  return text("announced");
});

await server.connect(new StdioServerTransport());
