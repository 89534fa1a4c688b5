/**
 * What the MCP client takes from `npm:@modelcontextprotocol/sdk`, loaded with `loadLazy`
 * (`./load.ts`) when there is a server to connect to.
 *
 * @module
 */

// The SDK's `./*` export maps `x.js` to types at `x.js.d.ts`, which do not exist: name the types.
export { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/sse"
export { SSEClientTransport, SseError } from "@modelcontextprotocol/sdk/client/sse.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
export {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
export {
  ElicitRequestSchema,
  JSONRPCMessageSchema,
  ListRootsRequestSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
// @ts-types="@modelcontextprotocol/sdk/client/auth"
export {
  auth,
  extractWWWAuthenticateParams,
  UnauthorizedError,
} from "@modelcontextprotocol/sdk/client/auth.js";
