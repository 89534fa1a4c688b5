/**
 * One connection to one MCP server: the SDK client on a stdio, Streamable HTTP or SSE transport,
 * opened within a deadline, and told apart from the errors the server sends when it is lost.
 * Loaded on demand, so that importing the library does not load the MCP SDK.
 *
 * @module
 */

import { type McpOAuthProvider, scopeOf } from "./oauth.ts";
import type { Client } from "@modelcontextprotocol/sdk/client";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport";
import { resolve } from "node:path";
import denoJson from "../../deno.json" with { type: "json" };
import { type LazyModules, loadLazy } from "../lazy/load.ts";
import type { McpSandboxOptions, McpTransportKind } from "./client.ts";
import type { McpServerConfig, McpStdioServerConfig } from "./config.ts";
import type { McpElicitationAnswer, McpElicitationRequest } from "./elicitation.ts";
import { type _StdioSandbox, _stdioTransport } from "./stdio_transport.ts";

/** A live connection. */
export interface _Session {
  /** The SDK client. */
  readonly client: Client;
  /** The transport in use (`http` may have fallen back to `sse`). */
  readonly kind: McpTransportKind;
  /** The server's process id (stdio). */
  readonly pid?: number;
  /** Why the connection was lost, once it is. */
  lost?: string;
  /**
   * What the server's last refusal for want of a login said (a 401 or 403 with
   * `WWW-Authenticate`): the scopes it asks for, and its error (`insufficient_scope`).
   */
  challenge?: { scope?: string; error?: string };
  /** The end of the server's stderr (stdio), for error messages. */
  stderrTail(): string;
  /** Closes the connection and ends the server process. */
  close(): Promise<void>;
}

/** What {@link _openSession} needs. */
export interface _OpenOptions {
  /** The whole environment of a stdio server. */
  env: Record<string, string>;
  /** The directory stdio servers run in, unless they set their own (default: the agent's). */
  cwd?: string;
  /** The sandbox for stdio servers that ask for it. */
  sandbox?: McpSandboxOptions;
  /** The OAuth provider of an HTTP server: its login, refreshed as needed. */
  authProvider?: McpOAuthProvider;
  /** The deadline for the connection and the `initialize` handshake. */
  timeoutMs: number;
  /** Hears when an open connection is lost, with the reason. */
  onLost(session: _Session, reason: string): void;
  /** Hears the server say its tool list changed (`notifications/tools/list_changed`). */
  onToolsChanged?(session: _Session): void;
  /** Hears what a sandboxed stdio server left behind, once it has ended (see `_StdioParams`). */
  onLeftover?(text: string): void;
  /** Answers the server's `elicitation/create` (form mode). */
  onElicitation?(request: McpElicitationRequest): Promise<McpElicitationAnswer>;
  /** The workspace roots `roots/list` answers with; absent, `roots` is not declared. */
  roots?: readonly { uri: string; name: string }[];
}

/** The parts of the MCP SDK a connection uses (see `lib/lazy/mcp_sdk.ts`). */
type _Sdk = LazyModules["mcp_sdk"];

/** JSON-RPC error codes the SDK raises itself. */
export const _CONNECTION_CLOSED = -32000;
/** The SDK's code for a request that timed out. */
export const _REQUEST_TIMEOUT = -32001;

/**
 * Opens a connection and completes the `initialize` handshake within `timeoutMs`, falling back
 * from Streamable HTTP to SSE when the server answers the first with a 4xx status. Throws an
 * error whose message says why, for a warning.
 */
export async function _openSession(
  config: McpServerConfig,
  options: _OpenOptions,
): Promise<_Session> {
  const deadline = performance.now() + options.timeoutMs;
  const sdk = await loadLazy("mcp_sdk");
  if (!("url" in config)) return await _open(sdk, "stdio", config, options, deadline);
  if (config.type === "sse") return await _open(sdk, "sse", config, options, deadline);
  try {
    return await _open(sdk, "http", config, options, deadline);
  } catch (error) {
    const status = (error as { cause?: unknown }).cause;
    if (
      !(status instanceof sdk.StreamableHTTPError) || status.code === undefined ||
      status.code < 400 || status.code >= 500 || status.code === 401 || status.code === 403
    ) throw error;
    try {
      return await _open(sdk, "sse", config, options, deadline);
    } catch (sseError) {
      throw new Error(
        `${(error as Error).message}; the SSE fallback failed too: ${(sseError as Error).message}`,
      );
    }
  }
}

async function _open(
  sdk: _Sdk,
  kind: McpTransportKind,
  config: McpServerConfig,
  options: _OpenOptions,
  deadline: number,
): Promise<_Session> {
  const stdio = "url" in config ? undefined : _stdioTransport({
    command: config.command,
    args: config.args ?? [],
    env: { ...options.env, ...config.env },
    cwd: options.cwd === undefined ? config.cwd : resolve(options.cwd, config.cwd ?? "."),
    sandbox: _sandbox(config, options),
    onLeftover: options.onLeftover,
  });
  let transport: Transport;
  /** What the server said the last time it refused a request for want of a login. */
  let challenge: _Session["challenge"];
  if (stdio) transport = stdio;
  else {
    const { url, headers } = config as { url: string; headers?: Record<string, string> };
    const endpoint = new URL(url).href;
    const init = {
      requestInit: { headers: headers ?? {} },
      ...(options.authProvider
        ? {
          authProvider: options.authProvider,
          fetch: async (input: string | URL, request?: RequestInit) => {
            const response = await fetch(input, request);
            if (
              (response.status === 401 || response.status === 403) &&
              new URL(input).href === endpoint
            ) {
              const { scope, error } = sdk.extractWWWAuthenticateParams(response);
              challenge = { scope: scopeOf(scope), error };
            }
            return response;
          },
        }
        : {}),
    };
    transport = kind === "sse"
      ? new sdk.SSEClientTransport(new URL(url), init)
      : new sdk.StreamableHTTPClientTransport(new URL(url), init);
  }
  const client = new sdk.Client({ name: "@x/agent", version: denoJson.version }, {
    capabilities: {
      elicitation: { form: {} },
      ...(options.roots ? { roots: { listChanged: false } } : {}),
    },
  });
  _answerRequests(sdk, client, options);
  let closing = false;
  let connected = false;
  const session: _Session = {
    client,
    kind,
    get pid() {
      return stdio?.pid;
    },
    get challenge() {
      return challenge;
    },
    stderrTail: () => stdio?.stderrTail() ?? "",
    async close() {
      const live = connected && !closing && !session.lost;
      closing = true;
      if (live && transport instanceof sdk.StreamableHTTPClientTransport) {
        // Tell the server the session is over, without waiting long for a server that hangs.
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          transport.terminateSession().catch(() => {}),
          new Promise((resolve) => timer = setTimeout(resolve, 1_000)),
        ]);
        clearTimeout(timer);
      }
      await client.close().catch(() => {});
    },
  };
  const lose = (reason: string) => {
    if (closing || session.lost) return;
    session.lost = reason;
    options.onLost(session, reason);
  };
  client.onclose = () => lose(_exitReason(stdio) ?? "the connection closed");
  client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => {
    if (!closing && !session.lost) options.onToolsChanged?.(session);
  });
  client.onerror = (error) => {
    // The SDK reports these when the server is gone; the pending requests would hang otherwise.
    // A 404 says a session expired only to a request that named one (`Mcp-Session-Id`): a
    // server without sessions answers the optional GET stream so, and goes on serving.
    const gone = connected && (
      error.message.startsWith("Maximum reconnection attempts") ||
      (error instanceof sdk.StreamableHTTPError && error.code === 404 &&
        transport instanceof sdk.StreamableHTTPClientTransport &&
        transport.sessionId !== undefined) ||
      error instanceof sdk.SseError
    );
    if (!gone) return;
    lose(`the connection was lost (${error.message})`);
    client.close().catch(() => {});
  };

  const remaining = Math.max(1, deadline - performance.now());
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), remaining);
  });
  try {
    const connecting = client.connect(transport, { timeout: remaining });
    connecting.catch(() => {}); // the deadline may come first
    const outcome = await Promise.race([connecting.then(() => "connected" as const), timedOut]);
    if (outcome === "timeout") throw new Error(_TIMEOUT);
    connected = true;
    return session;
  } catch (error) {
    closing = true;
    await client.close().catch(() => {});
    await transport.close().catch(() => {});
    throw _startError(sdk, kind, config, error, stdio, options.timeoutMs);
  } finally {
    clearTimeout(timer);
  }
}

/** Answers what the server asks of the client: input from the user, the workspace roots. */
function _answerRequests(sdk: _Sdk, client: Client, options: _OpenOptions): void {
  client.setRequestHandler(sdk.ElicitRequestSchema, async (request) => {
    const params = request.params;
    if (params.mode === "url" || !("requestedSchema" in params)) return { action: "decline" };
    const answer = await options.onElicitation?.({
      message: params.message,
      requestedSchema: params.requestedSchema as McpElicitationRequest["requestedSchema"],
    });
    return answer ?? { action: "decline" };
  });
  const roots = options.roots;
  if (roots) {
    client.setRequestHandler(sdk.ListRootsRequestSchema, () => ({
      roots: roots.map((root) => ({ ...root })),
    }));
  }
}

/** Why a connection could not be opened, in words; the HTTP error is kept as the cause. */
function _startError(
  sdk: _Sdk,
  kind: McpTransportKind,
  config: McpServerConfig,
  error: unknown,
  stdio: ReturnType<typeof _stdioTransport> | undefined,
  timeoutMs: number,
): Error {
  const code = (error as { code?: unknown }).code;
  if (code === _REQUEST_TIMEOUT || (error as Error).message === _TIMEOUT) {
    return new Error(
      `it did not answer within ${_seconds(timeoutMs)}${_stderr(stdio)}`,
      { cause: error },
    );
  }
  if (stdio) {
    const exit = _exitReason(stdio);
    if (exit) return new Error(exit, { cause: error });
    return new Error(`${(error as Error).message}${_stderr(stdio)}`, { cause: error });
  }
  const url = "url" in config ? config.url : "";
  const label = kind === "sse" ? "SSE" : "Streamable HTTP";
  if (error instanceof sdk.StreamableHTTPError && error.code !== undefined && error.code > 0) {
    return new Error(`${url} answered HTTP ${error.code} (${label}): ${_short(error.message)}`, {
      cause: error,
    });
  }
  if (error instanceof sdk.SseError) {
    return new Error(`${url} failed (${label}): ${_short(error.message)}`, { cause: error });
  }
  if (error instanceof Deno.errors.NotCapable) {
    return new Error(`Deno does not allow reaching ${url}: allow it with --allow-net`, {
      cause: error,
    });
  }
  return new Error(`could not reach ${url} (${label}): ${_short(_message(error))}`, {
    cause: error,
  });
}

const _TIMEOUT = "startup timed out";

/** The sandbox a stdio server asks for; throws when it asks and there is none. */
function _sandbox(
  config: McpStdioServerConfig,
  options: _OpenOptions,
): _StdioSandbox | undefined {
  if (!config.sandbox) return undefined;
  const given = options.sandbox;
  if (!given || "unavailable" in given) {
    throw new Error(
      `it asks for the sandbox ("sandbox" in its config), but ${
        given?.unavailable ?? "none was set up"
      }; install bubblewrap (apt-get install bubblewrap), or remove "sandbox" from its config ` +
        `to run it unconfined`,
    );
  }
  const own = config.sandbox === true ? {} : config.sandbox;
  const base = options.cwd ?? Deno.cwd();
  return {
    bwrap: given.bwrap,
    writable: [...given.workspace, ...(own.writable ?? []).map((path) => resolve(base, path))],
    net: own.net ?? false,
    hide: given.hide,
    ...(given.readable ? { readable: given.readable } : {}),
  };
}

/** `exited with code 1 (stderr: …)` once a stdio server is gone. */
function _exitReason(stdio: ReturnType<typeof _stdioTransport> | undefined): string | undefined {
  const exit = stdio?.exitReason();
  return exit && `${exit}${_stderr(stdio)}`;
}

/** The last lines of stderr, for an error message. */
function _stderr(stdio: ReturnType<typeof _stdioTransport> | undefined): string {
  const tail = stdio?.stderrTail();
  if (!tail) return "";
  const lines = tail.split("\n").slice(-5).join("\n");
  return ` (stderr: ${lines.length > 1000 ? `…${lines.slice(-1000)}` : lines})`;
}

function _message(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : "";
  return cause && !message.includes(cause) ? `${message}: ${cause}` : message;
}

function _short(text: string): string {
  const line = text.trim().replace(/\s+/g, " ");
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/** `30 s`, `0.3 s`. */
export function _seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${Number((ms / 1000).toFixed(3))} s`;
}
