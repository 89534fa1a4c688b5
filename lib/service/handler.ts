/**
 * The agent service over HTTP: a `(Request) => Promise<Response>` handler to serve with
 * `Deno.serve` or mount in a server of your own. Runs stream their events as server-sent events
 * or answer with their result as JSON; messages join runs at their next turn boundary; errors
 * are JSON `{ "error": { "code", "message" } }` with the status that fits.
 *
 * @module
 */

import { z } from "zod";
import denoJson from "../../deno.json" with { type: "json" };
import { SessionError } from "../session/mod.ts";
import { checkAccess } from "./auth.ts";
import { openApiDocument } from "./openapi.ts";
import type { ServiceRun } from "./run.ts";
import { runLoopMessageSchema, type RunRequestBody, runRequestSchema } from "./schemas.ts";
import {
  type AgentService,
  type AgentServiceOptions,
  createAgentService,
  type Delivery,
  ServiceError,
} from "./service.ts";
import { sseResponse } from "./sse.ts";

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
  const maxBody = options.maxBodyBytes ?? 2 * 1024 * 1024;
  let openapi: string | undefined;

  const route = async (request: Request, path: string[]): Promise<Response> => {
    const method = request.method;
    const [v1, kind, id, action] = path;
    if (path.length === 1 && v1 === "openapi.json" && method === "GET") {
      openapi ??= JSON.stringify(openApiDocument(denoJson.version, base));
      return new Response(openapi, { headers: { "content-type": "application/json" } });
    }
    if (v1 !== "v1") {
      throw new ServiceError("not_found", 404, `No endpoint ${method} /${path.join("/")}`);
    }
    const is = (m: string, k: string, n: number) => method === m && kind === k && path.length === n;

    if (is("GET", "health", 2)) {
      return _json(200, { status: "ok", version: denoJson.version, runs: service.load() });
    }
    if (is("POST", "runs", 2)) {
      const body = await _body(request, runRequestSchema, maxBody);
      const run = await service.start(_runRequest(body));
      return _answer({ delivery: "started", run }, body, request, base);
    }
    if (is("GET", "runs", 2)) return _json(200, { runs: service.runs() });
    if (is("GET", "runs", 3)) return _json(200, _run(service, id).info());
    if (is("GET", "runs", 4) && action === "events") {
      const run = _run(service, id);
      const after = Number(
        request.headers.get("last-event-id") ?? new URL(request.url).searchParams.get("after") ?? 0,
      );
      return sseResponse(run, Number.isFinite(after) ? after : 0, _ids(run));
    }
    if (is("POST", "runs", 4) && action === "cancel") {
      return _json(202, service.cancel(id).info());
    }
    if (is("POST", "messages", 2)) {
      const body = await _body(request, runRequestSchema, maxBody);
      return _answer(await service.send(_runRequest(body)), body, request, base);
    }
    if (is("GET", "run-loops", 2)) return _json(200, { runLoops: service.runLoops() });
    if (is("GET", "run-loops", 3)) {
      const loop = await service.runLoop(id);
      if (!loop) throw new ServiceError("not_found", 404, `No run loop "${id}"`);
      return _json(200, loop);
    }
    if (is("POST", "run-loops", 4) && action === "messages") {
      const body = await _body(request, runLoopMessageSchema, maxBody);
      const delivery = await service.send({ ..._runRequest(body), runLoopId: id });
      return _answer(delivery, body, request, base);
    }
    if (is("POST", "run-loops", 4) && action === "complete") {
      await service.completeRunLoop(id);
      return _json(200, { runLoopId: id, status: "completed" });
    }
    if (is("GET", "sessions", 2)) return _json(200, { sessions: await service.sessions() });
    if (is("GET", "sessions", 3)) {
      const { header, messages, model, compaction } = await service.session(id);
      return _json(200, { ...header, model, messages, ...(compaction ? { compaction } : {}) });
    }
    if (is("GET", "memory", 3) && id === "search") {
      const params = new URL(request.url).searchParams;
      const query = params.get("q")?.trim();
      if (!query) throw new ServiceError("bad_request", 400, "Give the search as ?q=<words>");
      const limit = Math.min(100, Math.max(1, Number(params.get("limit") ?? 10) || 10));
      return _json(200, { results: await service.searchMemory(query, limit) });
    }
    throw new ServiceError("not_found", 404, `No endpoint ${method} /${path.join("/")}`);
  };

  const handler = async (request: Request, info?: { remoteAddr: Deno.Addr }) => {
    const refused = checkAccess(request, info, options.token);
    if (refused) {
      return _json(refused.status, { error: { code: refused.code, message: refused.message } }, {
        ...(refused.status === 401 ? { "www-authenticate": "Bearer" } : {}),
      });
    }
    const pathname = new URL(request.url).pathname;
    if (base && pathname !== base && !pathname.startsWith(`${base}/`)) {
      return _error(new ServiceError("not_found", 404, `Nothing here: the service is at ${base}`));
    }
    const path = pathname.slice(base.length).split("/").filter(Boolean).map(decodeURIComponent);
    try {
      return await route(request, path);
    } catch (error) {
      return _error(error);
    }
  };
  return Object.assign(handler, { service, close: () => service.close() });
}

function _runRequest(body: Partial<RunRequestBody>) {
  return {
    message: body.message!,
    runLoopId: body.runLoopId,
    maxTurns: body.maxTurns,
    complete: body.complete,
    cancelOnDisconnect: body.cancelOnDisconnect,
  };
}

/** Answers a run started or a message delivered, in the way the client asked for. */
async function _answer(
  delivery: Delivery,
  body: Partial<RunRequestBody>,
  request: Request,
  base: string,
): Promise<Response> {
  const { run } = delivery;
  const stream = body.stream ?? (request.headers.get("accept") ?? "").includes("text/event-stream");
  const cancel = () => {
    if (run.cancelOnDisconnect) run.controller.abort();
  };
  if (stream) {
    // A queued message is followed from now on; a new run from its start.
    const after = delivery.delivery === "queued" ? run.info().events : 0;
    return sseResponse(run, after, _ids(run), cancel);
  }
  const answer = (info = run.info()) => ({
    delivery: delivery.delivery,
    run: info,
    ...(delivery.placement ? { placement: delivery.placement } : {}),
  });
  const location = { location: `${base}/v1/runs/${run.id}` };
  if (body.background || delivery.delivery === "queued") return _json(202, answer(), location);
  // Watched, not listened to: a listener would also hear the abort that follows every response.
  const watch = run.cancelOnDisconnect
    ? setInterval(() => request.signal.aborted && cancel(), 200)
    : undefined;
  try {
    return _json(200, answer(await run.done), location);
  } finally {
    clearInterval(watch);
  }
}

async function _body<T extends z.ZodType>(
  request: Request,
  schema: T,
  maxBytes: number,
): Promise<z.infer<T>> {
  const size = Number(request.headers.get("content-length") ?? 0);
  if (size > maxBytes) {
    throw new ServiceError("too_large", 413, `The body is over ${maxBytes} bytes`);
  }
  const text = await request.text();
  if (text.length > maxBytes) {
    throw new ServiceError("too_large", 413, `The body is over ${maxBytes} bytes`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ServiceError("bad_request", 400, `The body is not JSON: ${(error as Error).message}`);
  }
  const checked = schema.safeParse(json);
  if (!checked.success) {
    throw new ServiceError(
      "bad_request",
      400,
      `Bad request body: ${z.prettifyError(checked.error)}`,
    );
  }
  return checked.data;
}

function _run(service: AgentService, id: string): ServiceRun {
  const run = service.run(id);
  if (!run) {
    throw new ServiceError("not_found", 404, `No run "${id}" (ended runs are kept a while)`);
  }
  return run;
}

function _ids(run: ServiceRun): Record<string, string> {
  return { "x-run-id": run.id, "x-run-loop-id": run.runLoopId };
}

function _json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function _error(error: unknown): Response {
  if (error instanceof ServiceError) {
    return _json(error.status, { error: { code: error.code, message: error.message } }, {
      ...(error.retryAfter ? { "retry-after": String(error.retryAfter) } : {}),
    });
  }
  if (error instanceof SessionError) {
    const status = error.reason === "not_found" ? 404 : error.reason === "ambiguous" ? 409 : 500;
    return _json(status, { error: { code: error.reason, message: error.message } });
  }
  const message = error instanceof Error ? error.message : String(error);
  return _json(500, { error: { code: "internal", message } });
}
