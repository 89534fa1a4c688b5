/**
 * One configured MCP server over its lifetime: started once, its tools listed (and listed again
 * when it says they changed, or after a restart), and restarted on the next call after it
 * crashed, closed its connection, or hung past the call timeout. Loaded on demand with the MCP
 * SDK.
 *
 * @module
 */

import type { Client } from "@modelcontextprotocol/sdk/client";
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types";
import type { McpProgress, McpSandboxOptions, McpServerState, McpServerStatus } from "./client.ts";
import type { McpServerConfig } from "./config.ts";
import {
  _CONNECTION_CLOSED,
  _openSession,
  _REQUEST_TIMEOUT,
  _seconds,
  type _Session,
} from "./connection.ts";
import type { McpElicitationAnswer, McpElicitationRequest } from "./elicitation.ts";
import { _listTools, _RELIST_INTERVAL_MS, _RELISTS, _until } from "./listing.ts";
import { McpLoginRequired, type McpOAuthProvider } from "./oauth.ts";

/** What a server needs besides its configuration. */
export interface _ServerOptions {
  /** The whole environment of a stdio server. */
  env: Record<string, string>;
  /** The OAuth provider of an HTTP server. */
  authProvider?: McpOAuthProvider;
  /** The directory stdio servers run in (default: the agent's). */
  cwd?: string;
  /** The sandbox for stdio servers that ask for it. */
  sandbox?: McpSandboxOptions;
  /** How long starting (or restarting) may take. */
  startupTimeoutMs: number;
  /** How long a call may take. */
  callTimeoutMs: number;
  /** The most tools it may offer; those past it are left out, with a warning. */
  maxTools: number;
  /** Hears of a server that stopped between calls. */
  onWarning(message: string): void;
  /** Hears the server's tools once listed again after they changed (not the first listing). */
  onTools?(tools: McpTool[]): void;
  /** Answers the server's requests for input. */
  onElicitation?(request: McpElicitationRequest): Promise<McpElicitationAnswer>;
  /** The workspace roots, as `file://` URIs with names. */
  roots?: readonly { uri: string; name: string }[];
  /** Hears the progress the server reports of a call (`notifications/progress`). */
  onProgress?(tool: string, progress: McpProgress): void;
  /**
   * Logs the user in again when the server asks during the session (for `scope`, when it says),
   * after which the request is sent once more. Absent, the request fails saying how to log in.
   */
  login?(scope: string | undefined, signal?: AbortSignal): Promise<void>;
}

/** A call's result, and a note for the model when the server had to be restarted first. */
export interface _CallOutcome {
  result: CallToolResult;
  note?: string;
}

/** A server and its connection. */
export interface _Server {
  readonly name: string;
  /** Connects and lists the tools; throws with the reason when the server cannot start. */
  start(): Promise<McpTool[]>;
  /** Calls a tool, restarting the server first when it had stopped. */
  call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<_CallOutcome>;
  /** The current SDK client, while connected. */
  client(): Client | undefined;
  /** Where the server stands. */
  status(tools: string[]): McpServerStatus;
  /** Closes the connection and ends the server; later calls fail. */
  close(): Promise<void>;
}

/** Why the server stopped, and whether the model has been told. */
interface _Stop {
  reason: string;
  told: boolean;
  /** The session that stopped, if it had started. */
  session?: _Session;
}

/** Creates the server; nothing runs until `start()`. */
export function _createServer(
  name: string,
  config: McpServerConfig,
  options: _ServerOptions,
): _Server {
  const label = `MCP server "${name}"`;
  let session: _Session | undefined;
  let state: McpServerState = "stopped";
  let stop: _Stop | undefined;
  let started = false;
  let restarts = 0;
  /** What the next call tells the model about a restart it has not heard of. */
  let note: string | undefined;
  let opening: Promise<_Session> | undefined;
  const closing = new Set<Promise<void>>();
  let instructions: string | undefined;
  /** The names of the tools it offers now. */
  let offered = new Set<string>();
  /** The listing under way, and whether another change was announced since its round began. */
  let listing: { session: _Session; tools: Promise<McpTool[]>; again: boolean } | undefined;
  /** When the last round of listing began: the next one waits for `_RELIST_INTERVAL_MS`. */
  let lastRound = -Infinity;
  /** Ends the wait before the next round, when the server is closed. */
  let wake: (() => void) | undefined;
  /** The warnings given, each once. */
  const warned = new Set<string>();
  const warnOnce = (message: string) => {
    if (warned.has(message)) return;
    warned.add(message);
    options.onWarning(message);
  };
  /** Whether the first listing is done: later ones are changes. */
  let listed = false;
  /**
   * Why a request was refused for want of a login or of access, and what to do. Where nobody can
   * log in, the scopes asked for are kept for the next login.
   */
  const refusal = (error: unknown, asked: { scope?: string }): string => {
    if (!options.login) {
      if (error instanceof McpLoginRequired) return error.message;
      if (asked.scope) options.authProvider?.askedFor?.(asked.scope);
      return new McpLoginRequired(name, asked.scope, true).message;
    }
    // Where the user can log in, a refusal left is one a login did not help: the session starts
    // no other login to this server, whatever it asks for next.
    gaveUp = true;
    return `it refuses even after you logged in again: the account may not have the access ` +
      `it asks for${asked.scope ? ` ("${asked.scope}")` : ""}`;
  };
  /**
   * Whether a login in this session did not help, or did not finish: no other starts by itself
   * (one made with `agent mcp login` meanwhile is used all the same).
   */
  let gaveUp = false;
  /** The login under way, which every request that needs it waits for. */
  let loggingIn: Promise<void> | undefined;
  /**
   * Logs in again when `error` says the server wants a login (or more access) and the session can
   * log in; whether it did, so that the request is sent once more. A login that fails throws.
   */
  const logInFor = async (error: unknown, signal?: AbortSignal): Promise<boolean> => {
    const login = options.login;
    const asked = login ? _loginAsked(error, session) : undefined;
    if (!login || !asked || gaveUp) return false;
    try {
      await (loggingIn ??= login(asked.scope, signal).finally(() => loggingIn = undefined));
    } catch (failed) {
      gaveUp = true;
      throw new _LoginFailed(
        `${label} asked you to log in${asked.scope ? ` (for access to "${asked.scope}")` : ""}, ` +
          `and the login did not finish: ${(failed as Error).message}`,
        { cause: failed },
      );
    }
    return true;
  };

  const open = (): Promise<_Session> =>
    opening ??= _openSession(config, {
      env: options.env,
      cwd: options.cwd,
      sandbox: options.sandbox,
      authProvider: options.authProvider,
      timeoutMs: options.startupTimeoutMs,
      onLeftover: (text) => options.onWarning(`${label}: ${text}`),
      onElicitation: options.onElicitation,
      roots: options.roots,
      onToolsChanged(changed) {
        // A change announced before the first listing began is in that listing.
        if (changed !== session || (!listed && listing?.session !== changed)) return;
        list(changed).catch((error) => {
          if (changed !== session) return;
          options.onWarning(
            `${label} said its tools changed, but listing them failed: ` +
              `${(error as Error).message}; its tools stay as they were`,
          );
        });
      },
      onLost(lost, reason) {
        if (lost !== session) return;
        drop(lost, reason, false);
        options.onWarning(`${label} stopped: ${reason}; it will be restarted on the next call`);
      },
    }).then((opened) => {
      if (state === "closed") {
        opened.close();
        throw new Error(`${label} is closed`);
      }
      if (started) {
        restarts++;
        if (stop && !stop.told) {
          note = `[${label} had stopped (${stop.reason}) and was restarted; ` +
            `any state it held is lost]`;
        }
      }
      const restarted = started;
      started = true;
      session = opened;
      state = "connected";
      stop = undefined;
      instructions = opened.client.getInstructions();
      // A server restarted may offer other tools than before.
      if (restarted) list(opened).catch(() => {});
      return opened;
    }, (error) => {
      if (state !== "closed") stop = { reason: (error as Error).message, told: true };
      throw error;
    }).finally(() => opening = undefined);

  /**
   * Lists the tools of `opened`, page by page, without those that only run as tasks, at most
   * `maxTools` of them, within `timeoutMs` overall. A change announced while a listing is under
   * way is listed once more before it ends, at most `_RELISTS` times, each round at least
   * `_RELIST_INTERVAL_MS` after the one before; a server that says its tools changed at every
   * listing keeps those of the last. Tells `onTools` of each listing after the first.
   */
  const list = (opened: _Session, timeoutMs = options.startupTimeoutMs): Promise<McpTool[]> => {
    if (listing?.session === opened) {
      listing.again = true;
      return listing.tools;
    }
    const run = async (): Promise<McpTool[]> => {
      const deadline = performance.now() + timeoutMs;
      let tools: McpTool[] | undefined;
      for (let round = 0;; round++) {
        const wait = lastRound + _RELIST_INTERVAL_MS - performance.now();
        if (tools && (round > _RELISTS || performance.now() + wait >= deadline)) {
          warnOnce(
            `${label} kept saying its tools changed while they were listed; ` +
              `it offers those of the last listing`,
          );
          break;
        }
        if (wait > 0) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, wait);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = undefined;
        }
        if (state === "closed") throw new Error(`${label} is closed`);
        if (tools && opened !== session) break;
        current.again = false;
        lastRound = performance.now();
        try {
          tools = await _listTools(opened.client, {
            label,
            deadline,
            timeoutMs: options.startupTimeoutMs,
            maxTools: options.maxTools,
            warn: warnOnce,
          });
        } catch (error) {
          if (!tools || opened !== session) throw error;
          options.onWarning(
            `${label} said its tools changed, but listing them failed: ` +
              `${(error as Error).message}; it offers those listed before`,
          );
          break;
        }
        if (!current.again || opened !== session) break;
      }
      if (opened === session) {
        offered = new Set(tools.map((tool) => tool.name));
        if (listed) options.onTools?.(tools);
      }
      return tools;
    };
    const current = { session: opened, tools: Promise.resolve<McpTool[]>([]), again: false };
    const tools = run().finally(() => {
      if (listing === current) listing = undefined;
    });
    current.tools = tools;
    listing = current;
    return tools;
  };

  /** Forgets a session that is no longer of use and ends it in the background. */
  const drop = (old: _Session, reason: string, told: boolean) => {
    if (session === old) {
      session = undefined;
      if (state === "connected") state = "stopped";
      stop = { reason, told, session: old };
    } else if (told && stop?.session === old) stop.told = true;
    const closed = old.close().finally(() => closing.delete(closed));
    closing.add(closed);
  };

  return {
    name,

    async start() {
      let begun = performance.now();
      // A server that asks for a login (or more access) gets one, once, where the user can.
      let relogged = false;
      const again = async (error: unknown) => {
        if (relogged || state === "closed") return false;
        relogged = await logInFor(error);
        begun = performance.now();
        return relogged;
      };
      let opened: _Session;
      for (;;) {
        try {
          opened = await open();
          break;
        } catch (error) {
          let failure = error;
          try {
            if (await again(error)) continue;
          } catch (loginFailed) {
            failure = loginFailed;
          }
          if (state !== "closed") state = "failed";
          throw failure;
        }
      }
      let tools: McpTool[];
      for (;;) {
        // Starting and listing take at most `startupTimeoutMs` together.
        const left = Math.max(1, options.startupTimeoutMs - (performance.now() - begun));
        try {
          tools = await list(opened, left);
          break;
        } catch (error) {
          let failure = error;
          try {
            if (await again(error)) continue;
          } catch (loginFailed) {
            failure = loginFailed;
          }
          const asked = _loginAsked(failure, opened);
          const reason = `listing its tools failed: ${
            asked ? refusal(failure, asked) : (failure as Error).message
          }`;
          drop(opened, reason, true);
          state = "failed";
          throw new Error(reason, { cause: failure });
        }
      }
      listed = true;
      return tools;
    },

    async call(tool, args, signal) {
      if (state === "closed") throw new Error(`${label} is closed`);
      if (!offered.has(tool)) {
        throw new Error(
          `${label} no longer offers "${tool}": its tool list changed; ` +
            `call one of the tools offered now`,
        );
      }
      let current = session;
      if (!current) {
        try {
          current = await open();
        } catch (error) {
          throw new Error(
            `${label} could not be restarted: ${(error as Error).message}; ` +
              `it will be tried again on the next call`,
          );
        }
      }
      signal.throwIfAborted();
      const told = note;
      note = undefined;
      const deadline = performance.now() + options.callTimeoutMs;
      // The SDK never removes the listener it adds to the signal it is given, and tells the
      // server to cancel whenever that signal aborts: it gets one of its own, aborted only while
      // this call is in flight.
      const send = (session: _Session) => {
        const inFlight = new AbortController();
        const onAbort = () => inFlight.abort(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
        return session.client.callTool(
          { name: tool, arguments: args },
          undefined,
          {
            signal: inFlight.signal,
            timeout: options.callTimeoutMs,
            // Sends a progress token; what the server reports of the call reaches the hook.
            onprogress: ({ progress, total, message }) => {
              if (inFlight.signal.aborted) return;
              options.onProgress?.(tool, {
                progress,
                ...(total !== undefined ? { total } : {}),
                ...(message !== undefined ? { message } : {}),
              });
            },
          },
        ).finally(() => signal.removeEventListener("abort", onAbort));
      };
      try {
        let result;
        try {
          result = await send(current);
        } catch (error) {
          // A server that asks for a login (or more access) mid-session gets one, once, where
          // the user can; then the call is sent again.
          if (signal.aborted || current.lost || !(await logInFor(error, signal))) throw error;
          signal.throwIfAborted();
          result = await send(current);
        }
        // A call that changed the tools answers once they are listed again, so that the next
        // request to the model offers them; but not after its own timeout or abort.
        if (listing) await _until(listing.tools, signal, deadline - performance.now());
        signal.throwIfAborted();
        return { result: result as CallToolResult, note: told };
      } catch (error) {
        if (signal.aborted) throw error; // the SDK has told the server to cancel
        // Refused for want of a login: the connection is still good.
        if (error instanceof _LoginFailed) {
          throw new Error(`${label} could not run "${tool}": ${_describe(error)}`);
        }
        const asked = _loginAsked(error, current);
        if (asked) throw new Error(`${label} could not run "${tool}": ${refusal(error, asked)}`);
        const code = (error as { code?: unknown }).code;
        if (code === _REQUEST_TIMEOUT && !current.lost) {
          drop(current, `a call to "${tool}" timed out`, true);
          throw new Error(
            `${label} did not answer "${tool}" within ${_seconds(options.callTimeoutMs)}; ` +
              `the server will be restarted on the next call`,
          );
        }
        const lost = current.lost ??
          (code === _CONNECTION_CLOSED && /connection closed/i.test((error as Error).message)
            ? "the connection closed"
            : _isServerError(error)
            ? undefined
            : _describe(error));
        if (lost !== undefined) {
          drop(current, lost, true);
          throw new Error(`${label} stopped: ${lost}; it will be restarted on the next call`);
        }
        throw new Error(`${label} could not run "${tool}": ${_describe(error)}`);
      }
    },

    client: () => session?.client,

    status(tools) {
      const status: McpServerStatus = {
        name,
        transport: session?.kind ??
          ("url" in config ? (config.type === "sse" ? "sse" : "http") : "stdio"),
        state,
        tools,
        restarts,
      };
      if (session?.pid !== undefined) status.pid = session.pid;
      if (stop && state !== "connected") status.error = stop.reason;
      if (instructions) status.instructions = instructions;
      return status;
    },

    async close() {
      state = "closed";
      wake?.();
      const pending = opening;
      if (session) drop(session, "closed", true);
      await pending?.catch(() => {});
      if (session) drop(session, "closed", true);
      await Promise.all(closing);
    },
  };
}

/** A login the server asked for that did not finish. */
class _LoginFailed extends Error {}

/**
 * What a server that refused a request for want of a login asks for (`scope`, when it said), or
 * undefined when `error` is no such refusal: a login the run could not start, a 401 that
 * refreshed tokens did not get past, or a 403 `insufficient_scope` that the SDK's own step-up
 * did not get past.
 */
function _loginAsked(
  error: unknown,
  session: _Session | undefined,
): { scope?: string } | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof McpLoginRequired) return { scope: cause.scope };
  }
  // The SDK's own answer to a 401 (refreshed tokens) or to a 403 `insufficient_scope` (a
  // refresh, or the scopes it asks for) did not get the request through.
  const challenge = session?.challenge;
  const code = (error as { code?: unknown }).code;
  if (
    challenge && (code === 401 || (code === 403 && challenge.error === "insufficient_scope"))
  ) return { scope: challenge.scope };
  return undefined;
}

/** An error the server sent (JSON-RPC) or a result that did not fit, not a lost connection. */
function _isServerError(error: unknown): boolean {
  const name = (error as Error).name;
  const code = (error as { code?: unknown }).code;
  return name === "McpError" || name === "ZodError" || name === "$ZodError" ||
    (typeof code === "number" && code <= -32000 && code >= -32768);
}

function _describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : "";
  const text = cause && !message.includes(cause) ? `${message}: ${cause}` : message;
  return text.replace(/^MCP error -?\d+: /, "");
}
