/**
 * The agent service over HTTP: a `(Request) => Promise<Response>` handler to serve with
 * `Deno.serve` or mount in a server of your own. Runs stream their events as server-sent events
 * or answer with their result as JSON; messages join runs at their next turn boundary; errors
 * are JSON `{ "error": { "code", "message" } }` with the status that fits, a 4xx for whatever a
 * request gets wrong (a malformed path or Host, a body cut short or too large) and a 500 only for
 * the service's own failures.
 *
 * Every request but `GET /v1/health` must carry the handler's token (`Authorization: Bearer
 * <token>`); `/v1/health` answers anyone that the service is up, and tells more (version, runs
 * going) only to those with the token.
 *
 * A handler that drains (before its server stops) answers every new request 503 with
 * `Retry-After`, while the runs going end and the answers begun are sent whole.
 *
 * @module
 */

import { SessionError } from "../session/mod.ts";
import { checkAccess } from "./auth.ts";
import { jsonResponse, routeRequest, serviceEndpoints } from "./endpoints.ts";
import { readSlots } from "./read_slots.ts";
import {
  type AgentService,
  type AgentServiceOptions,
  CLOSING_RETRY_AFTER,
  createAgentService,
  ServiceError,
} from "./service.ts";

/** Options of {@link createAgentHandler}: the service's, and how it is reached. */
export interface AgentHandlerOptions extends AgentServiceOptions {
  /**
   * The bearer token every request must carry (`Authorization: Bearer <token>`), e.g.
   * `newServiceToken()` or a value the operator gives. `false` turns authentication off: only
   * for a handler mounted in a server that authenticates every request before it reaches the
   * handler (and refuses cross-site requests as it sees fit), since whoever reaches the handler
   * then runs the agent's tools as the user it runs as — on a shared machine, any local user.
   */
  token: string | false;
  /** The path the handler is mounted at, e.g. `/agent` (default: the root). */
  basePath?: string;
  /** The largest request body, in bytes (default 2 MiB); a larger one is refused as it arrives. */
  maxBodyBytes?: number;
  /**
   * Large sessions (over 1 MiB, or of a size the store does not tell) sent at once at most
   * (default 2); 16 times as many more wait their turn, and past them a read is refused with
   * 503 and `Retry-After`. Every session is read from its store as it is sent, a chunk at a
   * time, so reads cost memory by their number, not by the sessions' size; the bound keeps the
   * garbage of many large reads at once from growing the heap. Smaller sessions never wait.
   */
  maxConcurrentSessionReads?: number;
  /**
   * How long a session being sent waits for its client to take more of it, in ms (default
   * 30 000): a client that takes nothing for that long (a paused tab, a stuck consumer) has the
   * session cut off, and its slot of the heavy reads passes on.
   */
  sendIdleMs?: number;
}

/** The handler, with the service behind it. */
export interface AgentHandler {
  /** Answers a request (the connection info `Deno.serve` passes is accepted, and not needed). */
  (request: Request, info?: unknown): Promise<Response>;
  /** The service: runs, run loops, sessions and memory without HTTP. */
  readonly service: AgentService;
  /**
   * Cancels the runs going and waits for them to end; the sessions being sent stop, and so do
   * the request bodies still arriving (their requests are answered 503 `closing`).
   */
  close(): Promise<void>;
  /**
   * Stops taking work, for a shutdown that answers: from now on every request is answered 503
   * (code `closing`) with `Retry-After` and `Connection: close`, and the runs going go on
   * ({@link AgentHandler.close} cancels them: they end with status `aborted`, their streams
   * with them). Resolves once they ended, every request taken before was answered, every
   * session being sent was sent (or dropped by its client) and the service is closed: then the
   * server can stop.
   */
  drain(): Promise<void>;
  /** Whether the handler drains (or has drained). */
  readonly draining: boolean;
}

/**
 * Creates the HTTP handler of an agent service. It needs a `token` (or `token: false` when the
 * server it is mounted in authenticates): a `TypeError` says so otherwise.
 *
 * @example
 * ```ts
 * import { createAgentHandler } from "./handler.ts";
 * import { newServiceToken } from "./auth.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const token = newServiceToken();
 * const handler = createAgentHandler({ model: scriptedModel([{ text: "Hello!" }]), token });
 * const response = await handler(
 *   new Request("http://127.0.0.1/v1/runs", {
 *     method: "POST",
 *     headers: { authorization: `Bearer ${token}` },
 *     body: '{"message":"Hi"}',
 *   }),
 * );
 * const body = await response.json();
 * if (body.run.result.text !== "Hello!") throw new Error("unexpected");
 * const refused = await handler(new Request("http://127.0.0.1/v1/runs"));
 * if (refused.status !== 401) throw new Error("unexpected");
 * // Before its server stops: new requests are refused (503) while the work going ends.
 * const stopped = handler.drain();
 * const late = await handler(new Request("http://127.0.0.1/v1/health"));
 * if (late.status !== 503 || late.headers.get("retry-after") !== "5") throw new Error();
 * await stopped;
 * ```
 */
export function createAgentHandler(options: AgentHandlerOptions): AgentHandler {
  const token = _token(options.token);
  const service = createAgentService(options);
  const base = (options.basePath ?? "").replace(/\/+$/, "");
  const redact = options.redact ?? ((text: string) => text);
  const reads = readSlots(options.maxConcurrentSessionReads ?? 2);
  /** Aborted by close(): the sessions being sent stop there. */
  const closing = new AbortController();
  const endpoints = serviceEndpoints(service, {
    basePath: base,
    maxBodyBytes: options.maxBodyBytes ?? 2 * 1024 * 1024,
    redact: options.redact,
    reads,
    signal: closing.signal,
    sendIdleMs: options.sendIdleMs,
    sending: () => {
      sending++;
      return () => {
        if (--sending === 0) {
          sent.resolve();
          sent = Promise.withResolvers<void>();
        }
      };
    },
  });
  /** Sessions being sent, and when the last of them ends. */
  let sending = 0;
  let sent = Promise.withResolvers<void>();
  let draining: Promise<void> | undefined;
  /** Requests taken and not yet answered. */
  let answering = 0;
  let answered = Promise.withResolvers<void>();

  const handler = async (request: Request) => {
    if (draining) {
      return jsonResponse(503, {
        error: {
          code: "closing",
          message: `The service is shutting down: it takes no new requests; try again in ` +
            `${CLOSING_RETRY_AFTER} s`,
        },
      }, { "retry-after": String(CLOSING_RETRY_AFTER), connection: "close" });
    }
    answering++;
    try {
      return await answer(request);
    } finally {
      if (--answering === 0) {
        answered.resolve();
        answered = Promise.withResolvers<void>();
      }
    }
  };
  const answer = async (request: Request) => {
    try {
      const pathname = _pathname(request);
      const refused = checkAccess(request, token);
      if (refused) {
        // Whether it is up, and nothing more, for whoever asks.
        if (request.method === "GET" && pathname === `${base}/v1/health`) {
          return jsonResponse(200, { status: "ok" });
        }
        return jsonResponse(refused.status, {
          error: { code: refused.code, message: refused.message },
        }, refused.status === 401 ? { "www-authenticate": "Bearer" } : {});
      }
      if (base && pathname !== base && !pathname.startsWith(`${base}/`)) {
        throw new ServiceError("not_found", 404, `Nothing here: the service is at ${base}`);
      }
      return await routeRequest(endpoints, request, _segments(pathname.slice(base.length)), base);
    } catch (error) {
      return _error(error, redact);
    }
  };
  const drain = async () => {
    while (true) {
      // A request taken before may yet start a run: wait for both until neither is left.
      const going = service.runs().filter((run) => run.status === "running");
      if (going.length) await Promise.all(going.map((run) => service.run(run.id)?.done));
      else if (answering > 0) await answered.promise;
      else break;
    }
    while (sending > 0) await sent.promise;
    await service.close();
  };
  const withService = Object.assign(handler, {
    service,
    close: () => {
      closing.abort();
      return service.close();
    },
    drain: () => draining ??= drain(),
  });
  return Object.defineProperty(withService, "draining", { get: () => draining !== undefined }) as
    & typeof withService
    & { readonly draining: boolean };
}

/** The token given, checked: a non-empty string, or `false`. */
function _token(token: unknown): string | false {
  if (token === false) return false;
  if (typeof token !== "string") {
    throw new TypeError(
      "createAgentHandler needs a token: pass { token } (e.g. newServiceToken(), given to your " +
        "clients), or { token: false } when the server it is mounted in authenticates every " +
        "request itself",
    );
  }
  if (!token.trim()) {
    throw new TypeError("The service's token is empty: give one (e.g. newServiceToken())");
  }
  return token;
}

/** The request's path; a URL that cannot be read (a malformed Host) is the client's error. */
function _pathname(request: Request): string {
  try {
    return new URL(request.url).pathname;
  } catch {
    throw new ServiceError(
      "bad_request",
      400,
      "The request's URL cannot be read: send a valid Host header (e.g. Host: 127.0.0.1:8787)",
    );
  }
}

/** The decoded segments of a path; a malformed escape (`%E0`) is the client's error. */
function _segments(path: string): string[] {
  try {
    return path.split("/").filter(Boolean).map(decodeURIComponent);
  } catch {
    throw new ServiceError(
      "bad_request",
      400,
      `The path ${path} has a malformed %-escape: write each % as %25, and escape only UTF-8`,
    );
  }
}

/** The error response for what a request failed with, its message redacted. */
function _error(error: unknown, redact: (text: string) => string): Response {
  if (error instanceof ServiceError) {
    const message = redact(error.message);
    return jsonResponse(error.status, { error: { code: error.code, message } }, {
      ...(error.retryAfter ? { "retry-after": String(error.retryAfter) } : {}),
    });
  }
  if (error instanceof SessionError) {
    const status = error.reason === "not_found" ? 404 : error.reason === "ambiguous" ? 409 : 500;
    const message = redact(error.message);
    return jsonResponse(status, { error: { code: error.reason, message } });
  }
  const message = redact(error instanceof Error ? error.message : String(error));
  return jsonResponse(500, { error: { code: "internal", message } });
}
