/**
 * The service's endpoints: each method and path with what answers it, and how a request finds
 * its endpoint. A path the service knows, asked with a method it does not take, answers 405 with
 * an `Allow` header; a path it does not know answers 404.
 *
 * @module
 */

import { z } from "zod";
import denoJson from "../../deno.json" with { type: "json" };
import { openApiDocument } from "./openapi.ts";
import type { ServiceRun } from "./run.ts";
import { runLoopMessageSchema, type RunRequestBody, runRequestSchema } from "./schemas.ts";
import {
  type AgentService,
  CLOSING_RETRY_AFTER,
  type Delivery,
  type RunRequest,
  ServiceError,
} from "./service.ts";
import { sseResponse } from "./sse.ts";
import { redactValue } from "../secrets/redact.ts";
import { MAX_SESSION_PAGE, SESSION_PAGE, type SessionListOptions } from "../session/mod.ts";
import type { ReadSlots } from "./read_slots.ts";
import { sessionBody } from "./session_body.ts";
import { idleBody } from "./idle_body.ts";

/** The largest session sent without a slot of the heavy reads, in bytes. */
const LIGHT_SESSION_BYTES = 1024 * 1024;

/** One endpoint of the service. */
export interface Endpoint {
  /** The HTTP method it takes. */
  method: string;
  /** Its path's segments after the base path; `:id` stands for any one segment. */
  path: string[];
  /** Answers a request; `id` is the path's third segment (empty when it has none). */
  answer(request: Request, id: string): Response | Promise<Response>;
}

/** Where the endpoints are mounted, and the largest body they read. */
export interface EndpointOptions {
  /** The path the service is mounted at, without a trailing slash (`""` for the root). */
  basePath: string;
  /** The largest request body, in bytes. */
  maxBodyBytes: number;
  /** Replaces the secrets in a text: every JSON answer goes through it (default: none). */
  redact?: (text: string) => string;
  /** The slots of the sessions sent whole at once (default: no bound). */
  reads?: ReadSlots;
  /** Stops the sessions being sent and the request bodies being read, when the service stops. */
  signal?: AbortSignal;
  /**
   * How long a session being sent waits for its client to take more of it before it is cut off
   * (and its slot of the heavy reads let go), in ms (default: 30 000).
   */
  sendIdleMs?: number;
  /** Hears a session's body begin; what it gives is called when the body ends. */
  sending?: () => () => void;
}

/**
 * The endpoints of `service`: every method and path the HTTP service answers.
 *
 * @example
 * ```ts
 * import { serviceEndpoints } from "./endpoints.ts";
 * import { createAgentService } from "./service.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const service = createAgentService({ model: scriptedModel([]) });
 * const endpoints = serviceEndpoints(service, { basePath: "", maxBodyBytes: 1024 });
 * const runs = endpoints.filter((e) => e.path.join("/") === "v1/runs").map((e) => e.method);
 * if (runs.join() !== "POST,GET") throw new Error("unexpected");
 * await service.close();
 * ```
 */
export function serviceEndpoints(service: AgentService, options: EndpointOptions): Endpoint[] {
  const { basePath, maxBodyBytes, redact, reads, signal, sending } = options;
  const sendIdleMs = options.sendIdleMs ?? 30_000;
  const readBody = <T extends z.ZodType>(request: Request, schema: T) =>
    _body(request, schema, maxBodyBytes, signal);
  const json: _Json = (status, body, headers) =>
    jsonResponse(status, redact ? redactValue(body, redact) : body, headers);
  let openapi: string | undefined;
  return [
    {
      method: "GET",
      path: ["openapi.json"],
      answer: () => {
        openapi ??= JSON.stringify(openApiDocument(denoJson.version, basePath));
        return new Response(openapi, { headers: { "content-type": "application/json" } });
      },
    },
    {
      method: "GET",
      path: ["v1", "health"],
      answer: () => json(200, { status: "ok", version: denoJson.version, runs: service.load() }),
    },
    {
      method: "POST",
      path: ["v1", "runs"],
      answer: async (request) => {
        const body = await readBody(request, runRequestSchema);
        const run = await service.start(_runRequest(body));
        return _answer({ delivery: "started", run }, body, request, basePath, json);
      },
    },
    {
      method: "GET",
      path: ["v1", "runs"],
      answer: () => json(200, { runs: service.runs() }),
    },
    {
      method: "GET",
      path: ["v1", "runs", ":id"],
      answer: (_request, id) => json(200, _run(service, id).info()),
    },
    {
      method: "GET",
      path: ["v1", "runs", ":id", "events"],
      answer: (request, id) => {
        const run = _run(service, id);
        const after = Number(
          request.headers.get("last-event-id") ?? new URL(request.url).searchParams.get("after") ??
            0,
        );
        return sseResponse(run, Number.isFinite(after) ? after : 0, _ids(run));
      },
    },
    {
      method: "POST",
      path: ["v1", "runs", ":id", "cancel"],
      answer: (_request, id) => json(202, service.cancel(id).info()),
    },
    {
      method: "POST",
      path: ["v1", "messages"],
      answer: async (request) => {
        const body = await readBody(request, runRequestSchema);
        return _answer(await service.send(_runRequest(body)), body, request, basePath, json);
      },
    },
    {
      method: "GET",
      path: ["v1", "run-loops"],
      answer: () => json(200, { runLoops: service.runLoops() }),
    },
    {
      method: "GET",
      path: ["v1", "run-loops", ":id"],
      answer: async (_request, id) => {
        const loop = await service.runLoop(id);
        if (!loop) throw new ServiceError("not_found", 404, `No run loop "${id}"`);
        return json(200, loop);
      },
    },
    {
      method: "POST",
      path: ["v1", "run-loops", ":id", "messages"],
      answer: async (request, id) => {
        const body = await readBody(request, runLoopMessageSchema);
        const delivery = await service.send({ ..._runRequest(body), runLoopId: id });
        return _answer(delivery, body, request, basePath, json);
      },
    },
    {
      method: "POST",
      path: ["v1", "run-loops", ":id", "complete"],
      answer: async (_request, id) => {
        const { runLoopId, archiveError } = await service.completeRunLoop(id);
        const failed = archiveError === undefined ? {} : { archiveError };
        return json(200, { runLoopId, status: "completed", ...failed });
      },
    },
    {
      method: "GET",
      path: ["v1", "sessions"],
      answer: async (request) => {
        const page = await _sessionPage(service, new URL(request.url).searchParams);
        return json(200, { sessions: page.sessions, total: page.total, next: page.next ?? null });
      },
    },
    {
      method: "GET",
      path: ["v1", "sessions", ":id"],
      answer: async (_request, id) => {
        const reader = await service.readSession(id);
        // Read as it is sent; a large one holds a slot of the heavy reads until its body ends,
        // which a client that takes nothing of it for sendIdleMs ends.
        let release = () => {};
        try {
          if (reads && !((reader.size ?? Infinity) <= LIGHT_SESSION_BYTES)) {
            release = await reads.take();
          }
        } catch (error) {
          await reader.close();
          throw error;
        }
        const sent = sending?.();
        const onEnd = () => {
          release();
          sent?.();
        };
        return new Response(idleBody(sessionBody(reader, { redact, onEnd, signal }), sendIdleMs), {
          headers: { "content-type": "application/json" },
        });
      },
    },
    {
      method: "GET",
      path: ["v1", "memory", "search"],
      answer: async (request) => {
        const params = new URL(request.url).searchParams;
        const query = params.get("q")?.trim();
        if (!query) throw new ServiceError("bad_request", 400, "Give the search as ?q=<words>");
        const limit = Math.min(100, Math.max(1, Number(params.get("limit") ?? 10) || 10));
        return json(200, { results: await service.searchMemory(query, limit) });
      },
    },
  ];
}

/**
 * Answers a request whose path, after the base path, is `path`: with the endpoint of that path
 * and method; 405 with `Allow` when the path is known but not the method. Throws a 404
 * {@link ServiceError} for a path no endpoint has.
 *
 * @example
 * ```ts
 * import { routeRequest } from "./endpoints.ts";
 * const endpoints = [{ method: "GET", path: ["v1", "ping"], answer: () => new Response("pong") }];
 * const request = new Request("http://127.0.0.1/v1/ping", { method: "POST" });
 * const response = await routeRequest(endpoints, request, ["v1", "ping"], "");
 * if (response.status !== 405 || response.headers.get("allow") !== "GET") throw new Error();
 * ```
 */
export async function routeRequest(
  endpoints: readonly Endpoint[],
  request: Request,
  path: string[],
  basePath: string,
): Promise<Response> {
  const method = request.method;
  const where = `${basePath}/${path.join("/")}`;
  const fits = endpoints.filter((endpoint) => _fits(endpoint.path, path));
  const endpoint = fits.find((endpoint) => endpoint.method === method);
  if (endpoint) return await endpoint.answer(request, path[2] ?? "");
  if (fits.length === 0) throw new ServiceError("not_found", 404, `No endpoint ${method} ${where}`);
  const allow = fits.map((endpoint) => endpoint.method).sort().join(", ");
  return jsonResponse(405, {
    error: { code: "method_not_allowed", message: `${where} takes ${allow}, not ${method}` },
  }, { allow });
}

/**
 * A JSON response.
 *
 * @example
 * ```ts
 * import { jsonResponse } from "./endpoints.ts";
 * const response = jsonResponse(404, { error: { code: "not_found", message: "No run" } });
 * if (response.headers.get("content-type") !== "application/json") throw new Error();
 * ```
 */
export function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** Makes a JSON answer (redacted). */
type _Json = (status: number, body: unknown, headers?: Record<string, string>) => Response;

/** Whether a request's path segments fit an endpoint's path. */
function _fits(pattern: string[], path: string[]): boolean {
  return pattern.length === path.length &&
    pattern.every((segment, i) => segment === ":id" || segment === path[i]);
}

/** What the service is asked to run, from a checked body. */
function _runRequest(body: Partial<RunRequestBody>): RunRequest {
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
  json: _Json,
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
  if (body.background || delivery.delivery === "queued") {
    return json(202, answer(), location);
  }
  // Watched, not listened to: a listener would also hear the abort that follows every response.
  const watch = run.cancelOnDisconnect
    ? setInterval(() => request.signal.aborted && cancel(), 200)
    : undefined;
  try {
    return json(200, answer(await run.done), location);
  } finally {
    clearInterval(watch);
  }
}

/**
 * The request body as JSON, checked against `schema`; a body still arriving when `signal`
 * aborts (the service stops) is given up: a 503 `closing`.
 */
async function _body<T extends z.ZodType>(
  request: Request,
  schema: T,
  maxBytes: number,
  signal?: AbortSignal,
): Promise<z.infer<T>> {
  const tooLarge = () => new ServiceError("too_large", 413, `The body is over ${maxBytes} bytes`);
  const closing = () =>
    new ServiceError(
      "closing",
      503,
      `The service is shutting down and the body had not all come (${size} bytes came): ` +
        `send it again in ${CLOSING_RETRY_AFTER} s`,
      CLOSING_RETRY_AFTER,
    );
  if (Number(request.headers.get("content-length") ?? 0) > maxBytes) throw tooLarge();
  // Counted as it arrives: a chunked body declares no length.
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body?.getReader();
  const stop = () => void reader?.cancel().catch(() => {});
  signal?.addEventListener("abort", stop, { once: true });
  try {
    if (signal?.aborted) stop();
    for (let step = await reader?.read(); step && !step.done; step = await reader!.read()) {
      size += step.value.length;
      if (size > maxBytes) {
        stop(); // the rest is not read
        throw tooLarge();
      }
      chunks.push(step.value);
    }
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    if (signal?.aborted) throw closing();
    throw new ServiceError(
      "bad_request",
      400,
      `The body was cut off after ${size} bytes (${(error as Error).message}): send it whole`,
    );
  } finally {
    signal?.removeEventListener("abort", stop);
  }
  if (signal?.aborted) throw closing();
  const text = await new Blob(chunks as BlobPart[]).text();
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

/** The page of sessions `?limit=&cursor=` asks for; a 400 for a bad limit or cursor. */
async function _sessionPage(service: AgentService, params: URLSearchParams) {
  const options: SessionListOptions = { limit: SESSION_PAGE };
  const limit = params.get("limit");
  if (limit !== null) {
    options.limit = Number(limit);
    if (!/^\d+$/.test(limit) || options.limit < 1 || options.limit > MAX_SESSION_PAGE) {
      throw new ServiceError(
        "bad_request",
        400,
        `?limit= is how many sessions a page holds, 1 to ${MAX_SESSION_PAGE}, not "${limit}"`,
      );
    }
  }
  const cursor = params.get("cursor");
  if (cursor) options.cursor = cursor;
  try {
    return await service.sessions(options);
  } catch (error) {
    if (!(error instanceof TypeError) || !cursor) throw error;
    throw new ServiceError(
      "bad_request",
      400,
      `?cursor= is the "next" of the page before, not "${cursor.slice(0, 80)}"`,
    );
  }
}

/** The run `id`, or a 404. */
function _run(service: AgentService, id: string): ServiceRun {
  const run = service.run(id);
  if (!run) {
    throw new ServiceError("not_found", 404, `No run "${id}" (ended runs are kept a while)`);
  }
  return run;
}

/** The headers that name a run and its run loop. */
function _ids(run: ServiceRun): Record<string, string> {
  return { "x-run-id": run.id, "x-run-loop-id": run.runLoopId };
}
