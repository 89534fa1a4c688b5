/**
 * Connects to MCP servers and offers their tools to the agent as `mcp__<server>__<tool>`.
 * A server that cannot start gives a warning, never an exception; one that stops later is
 * restarted on the next call. When a server says its tools changed
 * (`notifications/tools/list_changed`), they are listed again and the connection's `tools`
 * change in place, so that the loop offers the new list from its next model request. The MCP
 * SDK is loaded only when there is a server to connect to.
 *
 * @module
 */

import type { McpOAuthProvider } from "./oauth.ts";
import type { Client } from "@modelcontextprotocol/sdk/client";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types";
import { basename, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadLazy } from "../lazy/load.ts";
import type { Tool } from "../tool.ts";
import type { McpConfig } from "./config.ts";
import { grantedEnv } from "./env.ts";
import {
  _answerElicitation,
  type McpElicitationAnswer,
  type McpElicitationRequest,
} from "./elicitation.ts";

/** How the agent talks to a server: a child process, Streamable HTTP, or HTTP+SSE. */
export type McpTransportKind = "stdio" | "http" | "sse";

/**
 * Where a server stands: `connected`; `stopped` (crashed, closed or hung, and restarted on the
 * next call); `failed` (never started: it has no tools); `closed` (by {@link McpConnection.close}).
 */
export type McpServerState = "connected" | "stopped" | "failed" | "closed";

/** One server, as {@link McpConnection.servers} describes it. */
export interface McpServerStatus {
  /** The name in the configuration. */
  name: string;
  /** The transport in use (`http` falls back to `sse` when the server does not speak it). */
  transport: McpTransportKind;
  /** Where it stands. */
  state: McpServerState;
  /** The names of its agent tools. */
  tools: string[];
  /** How many times it was restarted. */
  restarts: number;
  /** The server process (stdio), while connected. */
  pid?: number;
  /** Why it failed or stopped. */
  error?: string;
  /** What the server says about how to use it (its `instructions`). */
  instructions?: string;
}

/** The servers' tools, and the handle that closes them. */
export interface McpConnection extends AsyncDisposable {
  /**
   * The agent tools of every server that started, in configuration order. The list is live: it
   * changes in place when a server says its tools changed, and the loop, which reads it again
   * before each model request, offers it as it then stands. A tool a server no longer offers
   * fails with an error that says so.
   */
  readonly tools: readonly Tool[];
  /** Each configured server, started or not. */
  servers(): McpServerStatus[];
  /** The SDK client of a connected server, for what the tools do not cover (resources, prompts). */
  client(server: string): Client | undefined;
  /** Closes every connection and ends every server process; the tools fail afterwards. */
  close(): Promise<void>;
}

/**
 * The sandbox for the stdio servers whose config asks for it (`"sandbox"`): the `bwrap` found by
 * `detectSandbox`, the workspace roots they may write, and more paths to hide; or why there is
 * none, for the warning of each server that asks.
 */
export type McpSandboxOptions =
  | { bwrap: string; workspace: string[]; hide?: string[]; readable?: string[] }
  | { unavailable: string };

/** Options of {@link connectMcpServers}. */
export interface ConnectMcpOptions {
  /**
   * Gives the variables stdio servers inherit: only those of {@link MCP_INHERITED_ENV} (the
   * user, the locale, TLS, proxy and cache settings; never an API key), plus each server's own
   * `env` (default: `Deno.env.get` for the variables Deno already grants, without asking).
   */
  env?: (name: string) => string | undefined;
  /**
   * The directory stdio servers run in, and that a relative `cwd` of theirs is resolved from
   * (default: the agent's own working directory).
   */
  cwd?: string;
  /** How long a server may take to start and list its tools (default 30 s). */
  startupTimeoutMs?: number;
  /** How long a tool call may take before the server is taken as hung (default 5 minutes). */
  callTimeoutMs?: number;
  /**
   * The most tools one server may offer (default 1,000): those past it are left out, with a
   * warning that names the server.
   */
  maxTools?: number;
  /** Hears why a server did not start, or that it stopped. */
  onWarning?: (message: string) => void;
  /**
   * Hears that the tools of `server` changed (it said so, or it was restarted with others):
   * {@link McpConnection.tools} already holds the new list.
   */
  onToolsChanged?: (server: string) => void;
  /**
   * Where servers that ask for the sandbox run. Without it (or with `{ unavailable }`) such a
   * server does not start, with a warning: it never runs unconfined. Servers that do not ask are
   * not affected.
   */
  sandbox?: McpSandboxOptions;
  /**
   * Answers a server that asks the user for input (`elicitation/create`, form mode): `accept`
   * with the fields (those left out take their schema's `default`; the whole is checked against
   * the schema, and one that does not fit is declined with a warning), `decline` or `cancel`.
   * Absent (a headless run), every request is declined, and `onWarning` hears it once per server.
   */
  onElicitation?: (server: string, request: McpElicitationRequest) => Promise<McpElicitationAnswer>;
  /**
   * The directories of the workspace, which servers that ask (`roots/list`) get as `file://`
   * URIs. Absent, the client does not declare the `roots` capability.
   */
  roots?: readonly string[];
  /**
   * Hears what a server reports of a call under way (`notifications/progress`); each call sends
   * a progress token for it.
   */
  onProgress?: (server: string, tool: string, progress: McpProgress) => void;
  /**
   * The OAuth provider of an HTTP server, by its name and URL (see `oauth.ts`): its login kept for
   * the user, and whether a login may start. Absent: a server that asks for OAuth does not start.
   */
  oauth?: (server: string, url: string) => McpOAuthProvider | undefined;
  /**
   * Logs the user in again to an HTTP server that asks during the session: its login expired and
   * could not be refreshed, or a request needs more access than it gave (a 403
   * `insufficient_scope`, with the `scope` it asks for). The request is sent once more after it;
   * a server that refuses again gets no second login for that request. Absent (headless), the
   * request fails, saying how to log in (`agent mcp login <server>`).
   */
  login?: (server: string, request: McpLoginRequest) => Promise<void>;
}

/** What a server asks of a login during a session (see {@link ConnectMcpOptions.login}). */
export interface McpLoginRequest {
  /** The server's URL. */
  url: string;
  /** The scopes it asks for, when it said. */
  scope?: string;
  /** Aborted when the request that needs the login is. */
  signal?: AbortSignal;
}

/** What a server reports of a call under way (`notifications/progress`). */
export interface McpProgress {
  /** How far it is: grows with each report. */
  progress: number;
  /** What `progress` will be when it is done, if the server knows. */
  total?: number;
  /** What it is doing now, in the server's words. */
  message?: string;
}

/** The defaults of {@link ConnectMcpOptions}. */
export const MCP_DEFAULTS = {
  startupTimeoutMs: 30_000,
  callTimeoutMs: 300_000,
  maxTools: 1_000,
} as const;

/**
 * The variables stdio servers inherit, besides their own `env`: who and where the user is, the
 * locale, and what a server started by `npx`, `uvx` or `deno run` needs to download itself on a
 * machine behind a proxy or with its own certificate authorities (TLS, proxy, and the npm and
 * Deno caches). Never an API key, nor a proxy or registry URL with a password in it: a server
 * that needs one names it in its own `env` (`"HTTPS_PROXY": "${HTTPS_PROXY}"`).
 */
export const MCP_INHERITED_ENV: readonly string[] = [
  "HOME",
  "LOGNAME",
  "PATH",
  "SHELL",
  "TERM",
  "USER",
  "TMPDIR",
  "TZ",
  "LANG",
  "LANGUAGE",
  "LC_ALL",
  "LC_CTYPE",
  "LC_MESSAGES",
  "XDG_CACHE_HOME",
  "XDG_CONFIG_HOME",
  "XDG_DATA_HOME",
  "XDG_RUNTIME_DIR",
  "NODE_EXTRA_CA_CERTS",
  "NODE_USE_SYSTEM_CA",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "REQUESTS_CA_BUNDLE",
  "CURL_CA_BUNDLE",
  "DENO_CERT",
  "DENO_TLS_CA_STORE",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "ALL_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "all_proxy",
  "no_proxy",
  "DENO_DIR",
  "NPM_CONFIG_CACHE",
  "NPM_CONFIG_REGISTRY",
  "npm_config_cache",
  "npm_config_registry",
  "UV_CACHE_DIR",
  "PIP_INDEX_URL",
];

/** A URL with a user name or password in it (`http://alice:pw@proxy:3128`): a secret. */
const _CREDENTIALS = /^[a-z][a-z0-9+.-]*:\/\/[^/?#\s]*@/i;

/**
 * Starts every configured server in parallel and lists its tools. Each tool becomes an agent
 * tool named `mcp__<server>__<tool>` (other characters replaced by `_`, at most 64, unique), with
 * the server's input schema, a description that names the server, and the capability `run`
 * (stdio) or `net` (HTTP, SSE), so that the permission table decides whether it is offered.
 * Never throws for a server: one that does not start is reported to `onWarning` and has no tools.
 * A server may not hold the agent up: starting and listing its tools take at most
 * `startupTimeoutMs`, it offers at most `maxTools` tools, and when it says its tools changed
 * while they were being listed they are listed again a few times at most, at least a quarter of
 * a second apart (then it offers those of the last listing, with a warning).
 *
 * @example
 * ```ts
 * import { connectMcpServers } from "./client.ts";
 * const warnings: string[] = [];
 * await using mcp = await connectMcpServers(
 *   { mcpServers: { broken: { command: "no-such-mcp-server-command" } } },
 *   { onWarning: (message) => warnings.push(message) },
 * );
 * if (mcp.tools.length !== 0 || mcp.servers()[0].state !== "failed") throw new Error("unexpected");
 * if (!warnings[0].startsWith('MCP server "broken" failed to start')) throw new Error(warnings[0]);
 * ```
 */
export async function connectMcpServers(
  config: McpConfig,
  options: ConnectMcpOptions = {},
): Promise<McpConnection> {
  const entries = Object.entries(config.mcpServers);
  if (entries.length === 0) return _connection([], [], () => new Map());
  const [{ _createServer }, { _agentTool, _toolName }] = await Promise.all([
    import("./server.ts"),
    import("./tools.ts"),
    loadLazy("mcp_sdk"), // a failure to load the SDK fails here, as the import of server.ts did
  ]);
  const env = options.env ?? grantedEnv;
  const inherited: Record<string, string> = {};
  for (const name of MCP_INHERITED_ENV) {
    const value = env(name);
    if (value === undefined || value.startsWith("()") || _CREDENTIALS.test(value)) continue;
    inherited[name] = value;
  }
  const warn = options.onWarning ?? (() => {});
  const startupTimeoutMs = options.startupTimeoutMs ?? MCP_DEFAULTS.startupTimeoutMs;
  const callTimeoutMs = options.callTimeoutMs ?? MCP_DEFAULTS.callTimeoutMs;
  // A call may have to restart the server first.
  const timeoutMs = callTimeoutMs + startupTimeoutMs + 5_000;
  const roots = options.roots?.map((dir) => {
    const path = resolve(options.cwd ?? Deno.cwd(), dir);
    return { uri: pathToFileURL(path).href, name: basename(path) || path };
  });
  const taken = new Set<string>();
  const tools: Tool[] = [];
  /** Each server's agent tools, by the server's own tool name. */
  const owned = entries.map(() => new Map<string, { info: McpTool; tool: Tool }>());
  /** Makes the agent tools of server `i` those of `infos`, keeping those that did not change. */
  const offer = (i: number, infos: readonly McpTool[]) => {
    const server = servers[i];
    const [, serverConfig] = entries[i];
    const capabilities = "url" in serverConfig ? ["net" as const] : ["run" as const];
    const before = owned[i];
    const after = new Map<string, { info: McpTool; tool: Tool }>();
    for (const info of infos) {
      const kept = before.get(info.name);
      if (kept && _sameTool(kept.info, info)) {
        after.set(info.name, kept);
        continue;
      }
      const name = kept ? kept.tool.name : _toolName(server.name, info.name, taken);
      const tool = _agentTool(server, info, name, capabilities, timeoutMs) as Tool;
      after.set(info.name, { info, tool });
    }
    for (const [own, { tool }] of before) if (!after.has(own)) taken.delete(tool.name);
    owned[i] = after;
    // In place, and without spreading a list into arguments: it may be long.
    tools.length = 0;
    for (const each of owned) for (const { tool } of each.values()) tools.push(tool);
  };
  /** Whether each server heard that nobody can answer it. */
  const elicited = entries.map(() => ({ headless: false }));
  const servers = entries.map(([name, server], i) =>
    _createServer(name, server, {
      env: inherited,
      cwd: options.cwd,
      sandbox: options.sandbox,
      authProvider: "url" in server ? options.oauth?.(name, server.url) : undefined,
      startupTimeoutMs,
      callTimeoutMs,
      maxTools: options.maxTools ?? MCP_DEFAULTS.maxTools,
      onWarning: warn,
      onElicitation: (request) =>
        _answerElicitation(name, request, {
          onElicitation: options.onElicitation,
          warn,
          warned: elicited[i],
        }),
      roots,
      onProgress: options.onProgress &&
        ((tool, progress) => options.onProgress?.(name, tool, progress)),
      login: options.login && "url" in server
        ? (scope, signal) =>
          options.login!(name, {
            url: server.url,
            ...(scope ? { scope } : {}),
            ...(signal ? { signal } : {}),
          })
        : undefined,
      onTools(infos) {
        offer(i, infos);
        options.onToolsChanged?.(name);
      },
    })
  );
  const listed = await Promise.allSettled(servers.map((server) => server.start()));

  listed.forEach((outcome, i) => {
    const server = servers[i];
    if (outcome.status === "rejected") {
      warn(
        `MCP server "${server.name}" failed to start: ${
          (outcome.reason as Error).message
        }; its tools are not available`,
      );
      return;
    }
    offer(i, outcome.value);
  });
  const names = () =>
    new Map(
      servers.map((server, i) => [server.name, [...owned[i].values()].map((e) => e.tool.name)]),
    );
  return _connection(tools, servers, names);
}

/** Whether a server's tool is described as before: same description, title and schema. */
function _sameTool(before: McpTool, after: McpTool): boolean {
  return before.description === after.description && before.title === after.title &&
    JSON.stringify(before.inputSchema) === JSON.stringify(after.inputSchema);
}

interface _Handle {
  readonly name: string;
  status(tools: string[]): McpServerStatus;
  client(): Client | undefined;
  close(): Promise<void>;
}

function _connection(
  tools: readonly Tool[],
  servers: readonly _Handle[],
  names: () => ReadonlyMap<string, string[]>,
): McpConnection {
  let closing: Promise<void> | undefined;
  const close = () => closing ??= Promise.all(servers.map((s) => s.close())).then(() => {});
  return {
    tools,
    servers: () => {
      const now = names();
      return servers.map((server) => server.status(now.get(server.name) ?? []));
    },
    client: (name) => servers.find((server) => server.name === name)?.client(),
    close,
    [Symbol.asyncDispose]: close,
  };
}
