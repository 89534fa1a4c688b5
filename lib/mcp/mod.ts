/**
 * MCP (Model Context Protocol) client: the servers of `.mcp.json` and `--mcp-config` become
 * agent tools named `mcp__<server>__<tool>`.
 *
 * @example
 * ```ts
 * import { connectMcpServers, loadMcpConfig } from "./mod.ts";
 * const { config } = await loadMcpConfig({ cwd: "/nonexistent", files: ['{"mcpServers":{}}'] });
 * await using mcp = await connectMcpServers(config);
 * if (mcp.tools.length !== 0) throw new Error("unexpected");
 * ```
 *
 * @module
 */

export {
  type ConnectMcpOptions,
  connectMcpServers,
  MCP_DEFAULTS,
  MCP_INHERITED_ENV,
  type McpConnection,
  type McpSandboxOptions,
  type McpServerState,
  type McpServerStatus,
  type McpTransportKind,
} from "./client.ts";
export { grantedEnv } from "./env.ts";
export {
  type LoadedMcpConfig,
  loadMcpConfig,
  type LoadMcpConfigOptions,
  type McpConfig,
  type McpHttpServerConfig,
  type McpSandboxConfig,
  type McpServerConfig,
  type McpStdioServerConfig,
  parseMcpConfig,
  type ParseMcpConfigOptions,
} from "./config.ts";
