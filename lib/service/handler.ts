/**
 * The agent service over HTTP: a `(Request) => Promise<Response>` handler to serve with
 * `Deno.serve` or mount in a server of your own. Runs stream their events as server-sent events
 * or answer with their result as JSON; messages join runs at their next turn boundary; errors
 * are JSON `{ "error": { "code", "message" } }` with the status that fits.
 *
 * @module
 */

import { SessionError } from "../session/mod.ts";
import { checkAccess } from "./auth.ts";
import { jsonResponse, routeRequest, serviceEndpoints } from "./endpoints.ts";
import {
  type AgentService,
  type AgentServiceOptions,
  createAgentService,
  ServiceError,
} from "./service.ts";

/** Options of {@link createAgentHandler}: the service's, and how it is reached. */
export interface AgentHandlerOptions extends AgentServiceOptions {
  /**
   * The bearer token every request must carry. Without one, only loopback clients are served
   * (when the handler is given Deno's connection info), through loopback host names.
   */
  token?: string;
  /** The path the handler is mounted at, e.g. `/agent` (default: the root). */
  basePath?: string;
  /** The largest request body, in bytes (default 2 MiB). */
  maxBodyBytes?: number;
}

/** The handler, with the service behind it. */
export interface AgentHandler {
  /** Answers a request; pass `Deno.serve`'s connection info so that loopback can be told. */
  (request: Request, info?: { remoteAddr: Deno.Addr }): Promise<Response>;
  /** The service: runs, run loops, sessions and memory without HTTP. */
  readonly service: AgentService;
  /** Cancels the runs going and waits for them to end. */
  close(): Promise<void>;
}

/**
 * Creates the HTTP handler of an agent service.
 *
 * @example
 * ```ts
 * import { createAgentHandler } from "./handler.ts";
 * import { scriptedModel } from "../scripted_model.ts";
 * const handler = createAgentHandler({ model: scriptedModel([{ text: "Hello!" }]) });
 * const response = await handler(
 *   new Request("http://127.0.0.1/v1/runs", { method: "POST", body: '{"message":"Hi"}' }),
 * );
 * const body = await response.json();
 * if (body.run.result.text !== "Hello!") throw new Error("unexpected");
 * await handler.close();
 * ```
 */
export function createAgentHandler(options: AgentHandlerOptions): AgentHandler {
  const service = createAgentService(options);
  const base = (options.basePath ?? "").replace(/\/+$/, "");
  const redact = options.redact ?? ((text: string) => text);
  const endpoints = serviceEndpoints(service, {
    basePath: base,
    maxBodyBytes: options.maxBodyBytes ?? 2 * 1024 * 1024,
    redact: options.redact,
  });

  const handler = async (request: Request, info?: { remoteAddr: Deno.Addr }) => {
    const refused = checkAccess(request, info, options.token);
    if (refused) {
      return jsonResponse(refused.status, {
        error: { code: refused.code, message: refused.message },
      }, {
        ...(refused.status === 401 ? { "www-authenticate": "Bearer" } : {}),
      });
    }
    const pathname = new URL(request.url).pathname;
    if (base && pathname !== base && !pathname.startsWith(`${base}/`)) {
      return _error(
        new ServiceError("not_found", 404, `Nothing here: the service is at ${base}`),
        redact,
      );
    }
    try {
      return await routeRequest(endpoints, request, _segments(pathname.slice(base.length)), base);
    } catch (error) {
      return _error(error, redact);
    }
  };
  return Object.assign(handler, { service, close: () => service.close() });
}

/** The decoded segments of a path; a malformed escape (`%E0`) is the client's error. */
function _segments(path: string): string[] {
  try {
    return path.split("/").filter(Boolean).map(decodeURIComponent);
  } catch {
    throw new ServiceError("bad_request", 400, `The path ${path} has a malformed %-escape`);
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
