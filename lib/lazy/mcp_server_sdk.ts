/**
 * What `agent mcp` takes from `npm:@modelcontextprotocol/sdk` to serve the agent as an MCP
 * server, loaded with `loadLazy` (`./load.ts`) when it starts.
 *
 * @module
 */

// The SDK's `./*` export maps `x.js` to types at `x.js.d.ts`, which do not exist: name the types.
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
export { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
export { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
export { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
