/**
 * The OpenAPI 3.1 description of the service, served at `GET /openapi.json`; the request
 * bodies come from the same zod schemas that check them.
 *
 * @module
 */

import { z } from "zod";
import { runLoopMessageSchema, runRequestSchema } from "./schemas.ts";

/** A JSON Schema object. */
type Schema = Record<string, unknown>;

const _ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const _json = (schema: Schema) => ({ "application/json": { schema } });
const _error = (description: string) => ({ description, content: _json(_ref("Error")) });
const _id = (name: string, what: string) => ({
  name,
  in: "path",
  required: true,
  description: what,
  schema: { type: "string" },
});

/** What starting a run answers, by the way it was asked for. */
const _runResponses = {
  "200": {
    description: "The run's events as server-sent events (stream), or its result (JSON)",
    content: {
      "text/event-stream": {
        schema: { type: "string", description: "`id: <seq>` and `data: <ServiceEvent JSON>`" },
      },
      ..._json(_ref("RunStarted")),
    },
  },
  "202": { description: "Started in the background", content: _json(_ref("RunStarted")) },
  "400": _error("The body does not fit the schema, or was cut off"),
  "401": _error("No token, or the wrong one"),
  "413": _error("The body is over the most the service reads (2 MiB by default)"),
  "404": _error("No such run loop"),
  "409": _error("A run is going in that run loop"),
  "429": _error("Too many runs going: try again after Retry-After seconds"),
};

/**
 * The OpenAPI document for a service mounted at `basePath`.
 *
 * @example
 * ```ts
 * import { openApiDocument } from "./openapi.ts";
 * const doc = openApiDocument("1.0.0", "");
 * if (!("/v1/runs" in (doc.paths as object))) throw new Error("unexpected");
 * ```
 */
export function openApiDocument(version: string, basePath: string): Record<string, unknown> {
  const input = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "input" }) as Schema;
  const at = (path: string) => `${basePath}${path}`;
  return {
    openapi: "3.1.0",
    info: {
      title: "@x/agent service",
      version,
      description: "Runs of an LLM agent over HTTP: start runs and stream their events, send " +
        "messages into run loops while they work, cancel runs, read run loops, sessions and " +
        "memory. Every request but GET /v1/health sends Authorization: Bearer <token> (agent " +
        "serve names the file that holds its token when it starts). " +
        "Errors are JSON (Error); a path asked with a method it does not take answers 405 " +
        "(MethodNotAllowed) with an Allow header that lists the methods it takes. A service " +
        "that is shutting down answers every new request 503 (code closing) with Retry-After " +
        "while the runs going end.",
    },
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      responses: {
        MethodNotAllowed: {
          ..._error("The path does not take this method (code method_not_allowed)"),
          headers: {
            Allow: {
              description: "The methods the path takes, e.g. `GET, POST`",
              schema: { type: "string" },
            },
          },
        },
      },
      schemas: {
        RunRequest: input(runRequestSchema),
        RunLoopMessage: input(runLoopMessageSchema),
        Error: {
          type: "object",
          required: ["error"],
          properties: {
            error: {
              type: "object",
              required: ["code", "message"],
              properties: { code: { type: "string" }, message: { type: "string" } },
            },
          },
        },
        SessionInfo: {
          type: "object",
          required: ["id", "cwd", "model", "created", "updated", "messages", "title"],
          properties: {
            id: { type: "string" },
            cwd: { type: "string" },
            model: { type: "string", description: "The model the session started with" },
            created: { type: "string", format: "date-time" },
            updated: { type: "string", format: "date-time" },
            messages: { type: "integer" },
            title: { type: "string", description: "The first line of the user's first message" },
          },
        },
        SessionPage: {
          type: "object",
          required: ["sessions", "total", "next"],
          properties: {
            sessions: { type: "array", items: _ref("SessionInfo") },
            total: { type: "integer", description: "Sessions over all pages" },
            next: {
              type: ["string", "null"],
              description: "The cursor of the next page (?cursor=); null on the last",
            },
          },
        },
        Session: {
          type: "object",
          required: ["type", "version", "id", "cwd", "created", "messages", "model"],
          properties: {
            type: { const: "session" },
            version: { type: "integer" },
            id: { type: "string" },
            cwd: { type: "string" },
            created: { type: "string", format: "date-time" },
            messages: {
              type: "array",
              items: { type: "object", required: ["role"], additionalProperties: true },
            },
            model: { type: "string", description: "The current model: the last switch" },
            compaction: {
              type: "object",
              description: "The last compaction: its summary and how many messages it replaces",
              properties: { summary: { type: "string" }, replaces: { type: "integer" } },
            },
          },
        },
        ServiceEvent: {
          type: "object",
          required: ["type"],
          properties: { type: { type: "string" } },
          additionalProperties: true,
          description: "The agent loop's events (start, turn_start, text_delta, " +
            "reasoning_delta, tool_call, tool_result, message, retry, compaction, notice, " +
            "turn_end, result), the run loop's (run_loop_start, run_loop_end), and the " +
            "service's notice of kind error",
        },
        Run: {
          type: "object",
          required: ["id", "runLoopId", "status", "createdAt", "queued", "events"],
          properties: {
            id: { type: "string" },
            runLoopId: { type: "string" },
            status: { enum: ["running", "success", "max_turns", "aborted", "error"] },
            createdAt: { type: "string", format: "date-time" },
            endedAt: { type: "string", format: "date-time" },
            queued: { type: "integer", description: "Messages waiting for a turn boundary" },
            events: { type: "integer" },
            result: _ref("ServiceEvent"),
            error: {
              type: "string",
              description: "What went wrong when the run failed outside the agent loop",
            },
            archiveError: {
              type: "string",
              description: "Why memory could not archive a run loop the run ended (the run's " +
                "answer stands; the run loop is archived again once archiving works)",
            },
          },
        },
        RunLoopCompleted: {
          type: "object",
          required: ["runLoopId", "status"],
          properties: {
            runLoopId: { type: "string" },
            status: { enum: ["completed"] },
            archiveError: {
              type: "string",
              description: "Why memory could not archive it: it is completed all the same",
            },
          },
        },
        RunStarted: {
          type: "object",
          required: ["delivery", "run"],
          properties: {
            delivery: {
              enum: ["started", "queued"],
              description: "queued: the message joins the run going in its run loop",
            },
            run: _ref("Run"),
            placement: _ref("ServiceEvent"),
          },
        },
      },
    },
    security: [{ bearer: [] }],
    paths: {
      [at("/v1/health")]: {
        get: {
          summary: "Whether the service is up; with the token, its version and runs going too",
          security: [{ bearer: [] }, {}],
          responses: {
            "200": {
              description: "Up: `{ status }` without the token, `{ status, version, runs }` with",
            },
          },
        },
      },
      [at("/v1/runs")]: {
        post: {
          summary: "Start a run (in a new run loop, or the idle one runLoopId names)",
          requestBody: { required: true, content: _json(_ref("RunRequest")) },
          responses: _runResponses,
        },
        get: {
          summary: "The runs going and the recently ended ones, newest first",
          responses: {
            "200": {
              description: "The runs",
              content: _json({
                type: "object",
                properties: { runs: { type: "array", items: _ref("Run") } },
              }),
            },
          },
        },
      },
      [at("/v1/runs/{id}")]: {
        get: {
          summary: "A run, with its result once it ended",
          parameters: [_id("id", "The run's id")],
          responses: { "200": { description: "The run", content: _json(_ref("Run")) } },
        },
      },
      [at("/v1/runs/{id}/events")]: {
        get: {
          summary: "Follow a run's events (again): replayed from Last-Event-ID or ?after=",
          parameters: [
            _id("id", "The run's id"),
            { name: "after", in: "query", schema: { type: "integer" } },
          ],
          responses: {
            "200": { description: "Server-sent events", content: { "text/event-stream": {} } },
            "404": _error("No such run"),
          },
        },
      },
      [at("/v1/runs/{id}/cancel")]: {
        post: {
          summary: "Cancel a run: it ends with status aborted",
          parameters: [_id("id", "The run's id")],
          responses: {
            "202": { description: "Cancelling", content: _json(_ref("Run")) },
            "404": _error("No such run"),
            "409": _error("The run already ended"),
          },
        },
      },
      [at("/v1/messages")]: {
        post: {
          summary: "Send a message: the service routes it to a run loop (or runLoopId names " +
            "one); it joins the run going there at its next turn boundary, or starts a run",
          requestBody: { required: true, content: _json(_ref("RunRequest")) },
          responses: _runResponses,
        },
      },
      [at("/v1/run-loops")]: {
        get: {
          summary: "The active run loops, each with the run going in it (runId)",
          responses: { "200": { description: "The run loops" } },
        },
      },
      [at("/v1/run-loops/{id}")]: {
        get: {
          summary: "A run loop, active or archived, with its iterations",
          parameters: [_id("id", "The run loop's id or a unique prefix")],
          responses: { "200": { description: "The run loop" }, "404": _error("No such run loop") },
        },
      },
      [at("/v1/run-loops/{id}/messages")]: {
        post: {
          summary: "Send a message into a run loop: it joins the run going there at its next " +
            "turn boundary, or starts a run",
          parameters: [_id("id", "The run loop's id or a unique prefix")],
          requestBody: { required: true, content: _json(_ref("RunLoopMessage")) },
          responses: _runResponses,
        },
      },
      [at("/v1/run-loops/{id}/complete")]: {
        post: {
          summary: "Complete an idle run loop: it is archived in memory",
          parameters: [_id("id", "The run loop's id or a unique prefix")],
          responses: {
            "200": {
              description: "Completed (archiveError: memory could not archive it)",
              content: _json(_ref("RunLoopCompleted")),
            },
            "404": _error("No such active run loop"),
            "409": _error("A run is going in it"),
          },
        },
      },
      [at("/v1/sessions")]: {
        get: {
          summary: "The saved sessions of this service's working directory (one per run loop), " +
            "newest first, a page at a time: follow next (as ?cursor=) until it is null",
          parameters: [
            {
              name: "limit",
              in: "query",
              description: "Sessions a page holds",
              schema: { type: "integer", minimum: 1, maximum: 1000, default: 50 },
            },
            {
              name: "cursor",
              in: "query",
              description: "Where the page starts: the next of the page before",
              schema: { type: "string" },
            },
          ],
          responses: {
            "200": { description: "A page of the sessions", content: _json(_ref("SessionPage")) },
            "400": _error("A limit out of 1 to 1000, or a cursor no page gave"),
          },
        },
      },
      [at("/v1/sessions/{id}")]: {
        get: {
          summary: "A saved session of this service's working directory: header and messages, " +
            "sent as it is read from disk, whatever its size",
          parameters: [_id("id", "The session's id, or a unique prefix of 8 characters or more")],
          responses: {
            "200": { description: "The session", content: _json(_ref("Session")) },
            "400": _error("A prefix shorter than 8 characters"),
            "404": _error("No such session among those GET /v1/sessions lists"),
            "409": _error("The prefix starts more than one session (code ambiguous)"),
            "503": _error(
              "As many sessions are being read and waiting as the service takes (code " +
                "too_many_reads): try again after Retry-After seconds",
            ),
          },
        },
      },
      [at("/v1/memory/search")]: {
        get: {
          summary: "Search the long-term memory of completed run loops",
          parameters: [
            { name: "q", in: "query", required: true, schema: { type: "string" } },
            { name: "limit", in: "query", schema: { type: "integer", maximum: 100 } },
          ],
          responses: { "200": { description: "Matching segments, best first" } },
        },
      },
      [at("/openapi.json")]: {
        get: { summary: "This document", responses: { "200": { description: "OpenAPI 3.1" } } },
      },
    },
  };
}
