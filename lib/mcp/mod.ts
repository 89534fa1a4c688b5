/**
 * MCP (Model Context Protocol) client: the servers of `.mcp.json` and `--mcp-config` become
 * agent tools named `mcp__<server>__<tool>`.
 *
 * @example
 * ```ts
 * import { Agent } from "@x/agent";
 * import { connectMcpServers, loadMcpConfig } from "@x/agent/mcp";
 * import { scriptedModel } from "@x/agent/testing";
 *
 * const { config } = await loadMcpConfig({ cwd: "/nonexistent", files: ['{"mcpServers":{}}'] });
 * await using mcp = await connectMcpServers(config);
 * if (mcp.tools.length !== 0) throw new Error("unexpected");
 * // The servers' tools join the agent's own.
 * const agent = new Agent({ model: scriptedModel([{ text: "Done." }]), tools: mcp.tools });
 * if ((await agent.run("Go")).text !== "Done.") throw new Error("unexpected");
 * ```
 *
 * @module
 */

export {
  type ConnectMcpOptions,
  connectMcpServers,
  type McpConnection,
  type McpLoginRequest,
  type McpProgress,
  type McpSandboxOptions,
  type McpServerState,
  type McpServerStatus,
  type McpTransportKind,
} from "./client.ts";
export {
  applyElicitationDefaults,
  checkElicitationContent,
  type McpElicitationAnswer,
  type McpElicitationField,
  type McpElicitationRequest,
  type McpElicitationSchema,
} from "./elicitation.ts";
export {
  type LoadedMcpConfig,
  loadMcpConfig,
  type LoadMcpConfigOptions,
  type McpConfig,
  type McpHttpServerConfig,
  type McpOAuthConfig,
  type McpSandboxConfig,
  type McpServerConfig,
  type McpStdioServerConfig,
  parseMcpConfig,
  type ParseMcpConfigOptions,
} from "./config.ts";
export {
  credentialStore,
  loginMcpServer,
  type LoginOptions,
  type McpCredentials,
  type McpCredentialStore,
  McpLoginRequired,
  oauthProvider,
  type OAuthProviderOptions,
} from "./oauth.ts";
