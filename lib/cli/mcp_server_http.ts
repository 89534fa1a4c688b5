/**
 * `agent mcp --port`: the agent's MCP server over Streamable HTTP, at `/mcp` on `Deno.serve`.
 * It authenticates as `agent serve` does (a bearer token: `AGENT_SERVE_TOKEN`, or one made at
 * start and kept for the user alone in the data directory), and answers only requests addressed
 * to the address it serves: a `Host` or `Origin` of another name (a web page whose name was
 * rebound to 127.0.0.1) is refused before anything else. Each client's MCP session has a server
 * and a transport of its own; the tasks are shared. Ctrl+C cancels the tasks going, lets their
 * answers out, and stops.
 *
 * @module
 */

import { join } from "node:path";
import { checkAccess, isLoopback } from "../service/auth.ts";
import { MIN_SECRET_LENGTH, REDACTED } from "../secrets/redact.ts";
import type { Redactor } from "../session/mod.ts";
import type { McpTasks } from "./mcp_server_tasks.ts";
import { type McpServerSdk, mcpToolServer, type SdkMcpServer } from "./mcp_server_tools.ts";
import { dropServeToken, keepServeToken } from "./serve_token.ts";

/** Where the server is reached and how it authenticates. */
export interface McpHttpOptions {
  /** The interface to listen on. */
  host: string;
  /** The port (0 picks a free one). */
  port: number;
  /** The bearer token clients send. */
  token: string;
  /** Where to keep the token for the user's clients (made here), once the port is known. */
  keepTokenIn?: string;
  /** What the start line says is served. */
  what?: string;
}

/** What the HTTP server writes to and listens on. */
export interface McpHttpIo {
  /** Writes to stderr. */
  err(text: string): void;
  /** Registers a Ctrl+C handler; returns a function that removes it. */
  onInterrupt(handler: () => void): () => void;
  /** Told the server's URL once it listens. */
  onListen?(url: string): void;
}

/**
 * Where the MCP server on `port` keeps the token it made, in the user's data directory.
 *
 * @example
 * ```ts
 * import { mcpTokenPath } from "./mcp_server_http.ts";
 * if (mcpTokenPath("/data", 9000) !== "/data/mcp-9000.token") throw new Error("unexpected");
 * ```
 */
export function mcpTokenPath(dataDir: string, port: number): string {
  return join(dataDir, `mcp-${port}.token`);
}

/**
 * `redact`, which also takes out `secret` as it is and as JSON writes it (the service's token).
 *
 * @example
 * ```ts
 * import { redactingToo } from "./mcp_server_http.ts";
 * import { secretRedactor } from "../session/mod.ts";
 * const redact = redactingToo(secretRedactor([]), "tok-0123456789abcdef");
 * if (redact("use tok-0123456789abcdef") !== "use [redacted]") throw new Error("unexpected");
 * ```
 */
export function redactingToo(redact: Redactor, secret: string): Redactor {
  // As for every secret, one too short to tell from a word is not looked for.
  const forms = secret.length < MIN_SECRET_LENGTH
    ? []
    : [...new Set([secret, JSON.stringify(secret).slice(1, -1)])];
  const both = (text: string) => {
    let clean = redact(text);
    for (const form of forms) if (clean.includes(form)) clean = clean.replaceAll(form, REDACTED);
    return clean;
  };
  return Object.assign(both, {
    secrets: Object.freeze(forms.length ? [...redact.secrets, secret] : redact.secrets),
  });
}

/** MCP sessions kept at most over HTTP. */
export const MAX_MCP_SESSIONS = 64;

/**
 * Serves the agent's MCP tools over Streamable HTTP until interrupted; resolves to the exit
 * code (2 when the address cannot be used, 1 when the token cannot be kept).
 *
 * @example
 * ```ts
 * import { loadLazy } from "../lazy/load.ts";
 * import { serveMcpHttp } from "./mcp_server_http.ts";
 * let stop = () => {};
 * const tasks = { run: () => Promise.reject(), running: 0, stop: () => Promise.resolve() };
 * const code = await serveMcpHttp(await loadLazy("mcp_server_sdk"), tasks, {
 *   host: "127.0.0.1",
 *   port: 0,
 *   token: "t0ken-0123456789abcdef",
 * }, {
 *   err: () => {},
 *   onInterrupt: (handler) => (stop = handler, () => {}),
 *   onListen: async (url) => {
 *     const response = await fetch(url, { method: "POST", body: "{}" });
 *     await response.body?.cancel();
 *     if (response.status !== 401) throw new Error(`unexpected ${response.status}`);
 *     stop();
 *   },
 * });
 * if (code !== 0) throw new Error("unexpected");
 * ```
 */
export async function serveMcpHttp(
  sdk: McpServerSdk,
  tasks: McpTasks,
  options: McpHttpOptions,
  io: McpHttpIo,
): Promise<number> {
  /** Each MCP session's server, by the session id its transport gave. */
  const sessions = new Map<string, SdkMcpServer>();
  let port = options.port;
  let tokenFile: string | undefined;
  let failed = false;
  const closeSessions = () =>
    Promise.allSettled([...sessions.values()].map((server) => server.close()));

  const handle = async (request: Request): Promise<Response> => {
    const foreign = _foreign(request, options.host, port);
    if (foreign) return _jsonRpcError(403, foreign);
    const refusal = checkAccess(request, options.token);
    if (refusal) {
      return _jsonRpcError(401, refusal.message, { "www-authenticate": 'Bearer realm="agent"' });
    }
    if (new URL(request.url).pathname !== "/mcp") {
      return _jsonRpcError(404, "Not found: the agent's MCP server answers at /mcp");
    }
    const id = request.headers.get("mcp-session-id");
    if (id) {
      const server = sessions.get(id);
      if (!server) return _jsonRpcError(404, "No such MCP session: initialize a new one");
      // Kept in the order of use: the one unused the longest goes first when there are too many.
      sessions.delete(id);
      sessions.set(id, server);
      return await _transportOf(server).handleRequest(request);
    }
    if (request.method !== "POST") {
      return _jsonRpcError(400, "No MCP session: send an initialize request first");
    }
    const transport = new sdk.WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      onsessioninitialized: (sessionId) => {
        // Clients that leave without ending their session do not pile up: past the most kept,
        // the session unused the longest is closed (its client, if it comes back, starts anew).
        while (sessions.size >= MAX_MCP_SESSIONS) {
          const [oldest, old] = sessions.entries().next().value!;
          sessions.delete(oldest);
          old.close().catch(() => {});
        }
        sessions.set(sessionId, server);
      },
      onsessionclosed: (sessionId) => {
        sessions.delete(sessionId);
        server.close().catch(() => {});
      },
    });
    const server = mcpToolServer(sdk, tasks);
    await server.connect(transport);
    const response = await transport.handleRequest(request);
    // Anything but an initialize request starts no session: nothing is kept of it.
    if (!transport.sessionId) await server.close();
    return response;
  };

  let http: Deno.HttpServer<Deno.NetAddr>;
  try {
    http = Deno.serve({
      hostname: options.host,
      port: options.port,
      onListen: ({ hostname, port: bound }) => {
        port = bound;
        const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
        const url = `http://${shown}:${bound}/mcp`;
        if (options.keepTokenIn) {
          const path = mcpTokenPath(options.keepTokenIn, bound);
          try {
            keepServeToken(path, options.token);
            tokenFile = path;
          } catch (error) {
            io.err(
              `agent: cannot keep the MCP server's token in ${path}: ${(error as Error).message}` +
                "; set AGENT_SERVE_TOKEN, or AGENT_DATA_DIR to a directory of your own\n",
            );
            failed = true;
            queueMicrotask(() => http.shutdown());
            return;
          }
        }
        io.err(
          `agent: serving MCP${options.what ? ` (${options.what})` : ""} on ${url} (` +
            (tokenFile
              ? `bearer token in ${tokenFile}, readable by you alone)\n`
              : "bearer token AGENT_SERVE_TOKEN)\n"),
        );
        io.onListen?.(url);
      },
      onError: (error) => {
        io.err(`agent: ${(error as Error).message}\n`);
        return _jsonRpcError(500, "The agent's MCP server failed");
      },
    }, handle);
  } catch (error) {
    if (error instanceof Deno.errors.AddrInUse) {
      io.err(`agent: port ${options.port} is in use: pick another with --port\n`);
      return 2;
    }
    if (error instanceof Deno.errors.NotCapable) {
      io.err(
        `agent: Deno does not allow listening on ${options.host}: allow it with --allow-net\n`,
      );
      return 2;
    }
    throw error;
  }
  let interrupts = 0;
  const removeInterrupt = io.onInterrupt(() => {
    if (++interrupts > 1) Deno.exit(130);
    const running = tasks.running;
    io.err(
      `agent: stopping${running ? `: cancelling ${running} task${running > 1 ? "s" : ""}` : ""}\n`,
    );
    // The tasks end (aborted, their sessions saved) and answer; then the streams close.
    tasks.stop().finally(() => closeSessions().finally(() => http.shutdown()));
  });
  try {
    await http.finished;
  } finally {
    removeInterrupt();
    if (tokenFile) dropServeToken(tokenFile, options.token);
  }
  return failed ? 1 : 0;
}

/** The transport a session's server is connected to. */
function _transportOf(server: SdkMcpServer) {
  return server.server.transport as InstanceType<
    McpServerSdk["WebStandardStreamableHTTPServerTransport"]
  >;
}

/**
 * Why a request is not for this server, if it is not: its `Host` (and `Origin`, when a browser
 * sends one) must name the address served, a loopback name with the served port when serving
 * loopback (a page whose name was rebound to 127.0.0.1 names its own host).
 */
function _foreign(request: Request, served: string, port: number): string | undefined {
  const host = _hostPort(request.headers.get("host"));
  if (!host) return "The request names no host";
  const loopback = isLoopback(served);
  const ours = (where: { name: string; port: string }) =>
    loopback ? isLoopback(where.name) && where.port === String(port) : where.port === host.port &&
      where.name === host.name;
  if (loopback && !ours(host)) {
    return `The agent's MCP server answers only at ${_shown(served)}:${port}, not ${host.name}`;
  }
  const origin = request.headers.get("origin");
  if (origin === null) return undefined;
  let from: { name: string; port: string } | undefined;
  try {
    const url = new URL(origin);
    if (url.protocol === "http:" || url.protocol === "https:") {
      from = { name: url.hostname, port: url.port || (url.protocol === "https:" ? "443" : "80") };
    }
  } catch {
    // Not a URL ("null"): no origin of ours.
  }
  return from && ours(from)
    ? undefined
    : `The agent's MCP server does not answer pages of other origins (${origin})`;
}

/** The name and port of a `Host` header. */
function _hostPort(header: string | null): { name: string; port: string } | undefined {
  if (!header) return undefined;
  try {
    const url = new URL(`http://${header}`);
    return { name: url.hostname, port: url.port || "80" };
  } catch {
    return undefined;
  }
}

function _shown(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

function _jsonRpcError(status: number, message: string, headers: Record<string, string> = {}) {
  return Response.json(
    { jsonrpc: "2.0", error: { code: status === 500 ? -32603 : -32000, message }, id: null },
    { status, headers },
  );
}
