/**
 * The MCP servers of a CLI run: the project's `.mcp.json` and each `--mcp-config`, started
 * when Deno grants what they need (running the command of a stdio server, reaching the host of
 * an HTTP server) — or, in an interactive session, when Deno may ask.
 *
 * @module
 */

import type { SessionMode } from "./capabilities.ts";
import type { Tool } from "../tool.ts";
import {
  type ConnectMcpOptions,
  connectMcpServers,
  type LoadedMcpConfig,
  type McpConnection,
  type McpProgress,
  type McpSandboxOptions,
  type McpServerConfig,
} from "../mcp/mod.ts";
import {
  credentialStore,
  initializeAnswer,
  loginMcpServer,
  type McpCredentialStore,
  oauthProvider,
} from "../mcp/oauth.ts";

/**
 * Starts the configured MCP servers that Deno lets the agent start; warns about the others.
 * Resolves to no connection when no server is configured.
 */
export async function startMcp(options: {
  cwd: string;
  /** The configuration, loaded (the project's `.mcp.json` only when the project is trusted). */
  loaded: LoadedMcpConfig;
  env: (name: string) => string | undefined;
  warn: (text: string) => void;
  mode: SessionMode;
  /** What stdio servers that ask for the sandbox run in. */
  sandbox?: McpSandboxOptions;
  /** Every stdio server runs in the sandbox (`--sandbox required`). */
  sandboxAll?: boolean;
  /** Hears that a server's tools changed. */
  onToolsChanged?: (server: string) => void;
  /**
   * Where the user's MCP logins are kept (`<data dir>/mcp-oauth`, see `agent mcp login`): an
   * HTTP server that asks for OAuth uses the one kept for its URL. None: such a server does not
   * start.
   */
  oauthDir?: string;
  /**
   * How the user logs in where a server asks for it (the terminal session): before the servers
   * start, each HTTP server with no login kept that answers 401 gets one, in the browser.
   */
  login?: { open(url: URL): void | Promise<void> };
  /** The workspace roots (the working directory and each `--add-dir`), for `roots/list`. */
  roots?: readonly string[];
  /** Answers a server that asks the user for input; absent, such requests are declined. */
  onElicitation?: ConnectMcpOptions["onElicitation"];
  /** Hears what servers report of calls under way. */
  onProgress?: ConnectMcpOptions["onProgress"];
}): Promise<McpConnection | undefined> {
  const { config, projectServers, warnings } = options.loaded;
  for (const warning of warnings) options.warn(warning);
  const allowed: Record<string, McpServerConfig> = {};
  for (const [name, configured] of Object.entries(config.mcpServers)) {
    let given = configured;
    // A project's stdio server runs in the sandbox wherever there is one, and may not loosen it:
    // no network, nothing more to write than the workspace.
    if (projectServers.includes(name) && "command" in given) {
      if (
        typeof given.sandbox === "object" && (given.sandbox.net || given.sandbox.writable?.length)
      ) {
        options.warn(
          `MCP server "${name}": the project's "sandbox" may not add network or writable ` +
            `paths; it runs in the plain sandbox`,
        );
      }
      const available = options.sandbox !== undefined && "bwrap" in options.sandbox;
      if (given.sandbox || available) given = { ...given, sandbox: true };
    }
    const server = options.sandboxAll && "command" in given
      ? { ...given, sandbox: given.sandbox || true }
      : given;
    const { state, flag } = _permission(server);
    if (state === "granted" || (state === "prompt" && options.mode === "interactive")) {
      allowed[name] = server;
    } else {
      options.warn(
        `MCP server "${name}" is not started: Deno ${
          state === "denied" ? "denies" : "does not grant"
        } ` +
          `what it needs (${flag})`,
      );
    }
  }
  if (Object.keys(allowed).length === 0) return undefined;
  const store = options.oauthDir ? credentialStore(options.oauthDir) : undefined;
  if (store && options.login) await _logIn(allowed, store, options.login, options.warn);
  return await connectMcpServers({ mcpServers: allowed }, {
    cwd: options.cwd,
    env: options.env,
    onWarning: options.warn,
    sandbox: options.sandbox,
    onToolsChanged: options.onToolsChanged,
    roots: options.roots,
    onElicitation: options.onElicitation,
    onProgress: options.onProgress,
    ...(store && options.login
      ? { login: _logInAgain(allowed, store, options.login, options.warn) }
      : {}),
    oauth(server, url) {
      const configured = allowed[server];
      const oauth = "url" in configured ? configured.oauth : undefined;
      // A person's login is kept in the data directory; a machine's lives in memory.
      if (!store && oauth?.grant !== "client_credentials") return undefined;
      return oauthProvider({
        server,
        url,
        store: store ?? credentialStore(""),
        client: oauth && { client_id: oauth.clientId, client_secret: oauth.clientSecret },
        scope: oauth?.scope,
        grant: oauth?.grant,
      });
    },
  });
}

/** The least time between two progress lines of one call. */
const _PROGRESS_INTERVAL_MS = 500;

/**
 * Shows what MCP servers report of calls under way, as lines given to `write` (stderr in text
 * output): `MCP server "docs" (index): 2/3 reading files`, at most one per server and tool every
 * 500 ms; the server's message on one line, cut to 200 characters.
 *
 * @example
 * ```ts
 * import { mcpProgressLines } from "./mcp.ts";
 * const lines: string[] = [];
 * const onProgress = mcpProgressLines((line) => lines.push(line));
 * onProgress("docs", "index", { progress: 1, total: 3, message: "reading" });
 * onProgress("docs", "index", { progress: 2, total: 3 }); // within 500 ms: not shown
 * if (lines.join() !== 'MCP server "docs" (index): 1/3 reading') throw new Error(lines.join());
 * ```
 */
export function mcpProgressLines(
  write: (line: string) => void,
  now: () => number = () => performance.now(),
): (server: string, tool: string, progress: McpProgress) => void {
  const last = new Map<string, number>();
  return (server, tool, { progress, total, message }) => {
    const key = JSON.stringify([server, tool]);
    const at = now();
    const before = last.get(key);
    if (before !== undefined && at - before < _PROGRESS_INTERVAL_MS) return;
    last.set(key, at);
    const amount = total !== undefined ? `${progress}/${total}` : `${progress}`;
    const said = message ? ` ${_oneLine(message)}` : "";
    write(`MCP server "${server}" (${tool}): ${amount}${said}`);
  };
}

/** A server's text on one line: control characters out, at most 200 characters. */
function _oneLine(text: string): string {
  // deno-lint-ignore no-control-regex
  const line = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/**
 * Keeps the MCP tools in `tools` (the run's list, which the loop reads again before each model
 * request) those `mcp` offers now, and among them only those named in `only` when given: call
 * the function it returns when a server's tools changed. The other tools stay first.
 *
 * @example
 * ```ts
 * import { followMcpTools } from "./mcp.ts";
 * import { connectMcpServers } from "../mcp/mod.ts";
 * import type { Tool } from "../tool.ts";
 * await using mcp = await connectMcpServers({ mcpServers: {} });
 * const tools: Tool[] = [];
 * followMcpTools(tools, mcp)();
 * if (tools.length !== 0) throw new Error("unexpected");
 * ```
 */
export function followMcpTools(
  tools: Tool[],
  mcp: McpConnection,
  only?: readonly string[],
): () => void {
  const theirs = new Set(mcp.tools);
  const own = tools.filter((tool) => !theirs.has(tool));
  const named = only && new Set(only);
  return () => {
    // In place, and without spreading a list into arguments: it may be long.
    tools.length = 0;
    for (const tool of own) tools.push(tool);
    for (const tool of mcp.tools) if (!named || named.has(tool.name)) tools.push(tool);
  };
}

function _permission(server: McpServerConfig): { state: Deno.PermissionState; flag: string } {
  if ("command" in server) {
    // A sandboxed server is started by bwrap, which the sandbox's detection checked.
    if (server.sandbox) return { state: "granted", flag: "" };
    const state = Deno.permissions.querySync({ name: "run", command: server.command }).state;
    return { state, flag: `--allow-run=${server.command}` };
  }
  const host = new URL(server.url).host;
  return {
    state: Deno.permissions.querySync({ name: "net", host }).state,
    flag: `--allow-net=${host}`,
  };
}

/**
 * Logs in again, in the browser, to a server that asks during the session (its login expired,
 * or a call needs more access): the terminal session's answer to {@link
 * ConnectMcpOptions.login}.
 */
function _logInAgain(
  servers: Record<string, McpServerConfig>,
  store: McpCredentialStore,
  login: { open(url: URL): void | Promise<void> },
  warn: (text: string) => void,
): NonNullable<ConnectMcpOptions["login"]> {
  return async (name, { url, scope, signal }) => {
    const server = servers[name];
    const oauth = "url" in server ? server.oauth : undefined;
    warn(
      `the MCP server "${name}" asks you to log in again` +
        `${scope ? ` (for access to "${scope}")` : ""} (OAuth)`,
    );
    await loginMcpServer({
      server: name,
      url,
      store,
      open: login.open,
      client: oauth && { client_id: oauth.clientId, client_secret: oauth.clientSecret },
      scope: scope ?? oauth?.scope,
      renew: true,
      signal,
      timeoutMs: 120_000,
    });
    warn(`logged in to "${name}"`);
  };
}

/**
 * Logs in, in the browser, to each HTTP server that has no login kept and answers 401 (a
 * person's OAuth login): the terminal session does it before its servers start. A login that
 * does not finish leaves the server out, with a warning.
 */
async function _logIn(
  servers: Record<string, McpServerConfig>,
  store: McpCredentialStore,
  login: { open(url: URL): void | Promise<void> },
  warn: (text: string) => void,
): Promise<void> {
  for (const [name, server] of Object.entries(servers)) {
    if (!("url" in server) || server.oauth?.grant === "client_credentials") continue;
    // A server given its credentials in its headers, or logged in to already, needs no login.
    const given = Object.keys(server.headers ?? {}).some((key) => /^authorization$/i.test(key));
    if (given || store.load(server.url)?.tokens) continue;
    if ((await initializeAnswer(server.url, server.headers))?.status !== 401) continue;
    warn(`the MCP server "${name}" asks you to log in (OAuth)`);
    try {
      await loginMcpServer({
        server: name,
        url: server.url,
        store,
        open: login.open,
        client: server.oauth &&
          { client_id: server.oauth.clientId, client_secret: server.oauth.clientSecret },
        scope: server.oauth?.scope,
        timeoutMs: 120_000,
      });
      warn(`logged in to "${name}"`);
    } catch (error) {
      warn(
        `the login to "${name}" did not finish (${(error as Error).message}); it is left out ` +
          `(log in later with: agent mcp login ${name})`,
      );
    }
  }
}
