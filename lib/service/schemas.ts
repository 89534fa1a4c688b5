/**
 * The service's request bodies, checked with zod; the OpenAPI description is made from them.
 *
 * @module
 */

import { z } from "zod";

/** A checked run request. */
export interface RunRequestBody {
  /** The user's message. */
  message: string;
  /** The run loop to work in (an id or a unique prefix of one). */
  runLoopId?: string;
  /** Stream the run's events as server-sent events. */
  stream?: boolean;
  /** Answer at once (202) with the run's id instead of waiting for its result. */
  background?: boolean;
  /** Model calls allowed. */
  maxTurns?: number;
  /** Complete the run loop when the run succeeds. */
  complete?: boolean;
  /** Cancel the run when the client disconnects. */
  cancelOnDisconnect?: boolean;
}

const _runRequest = z.object({
  message: z.string().min(1).max(1_000_000).describe("The user's message."),
  runLoopId: z.string().min(4).optional().describe(
    "The run loop to work in (an id or a unique prefix of one). Without it, POST /v1/runs " +
      "starts a new run loop and POST /v1/messages lets the service route the message.",
  ),
  stream: z.boolean().optional().describe(
    "Stream the run's events as server-sent events (also chosen by Accept: text/event-stream).",
  ),
  background: z.boolean().optional().describe(
    "Answer at once (202) with the run's id instead of waiting for its result.",
  ),
  maxTurns: z.number().int().positive().max(10_000).optional().describe("Model calls allowed."),
  complete: z.boolean().optional().describe(
    "Complete the run loop when the run succeeds (a one-shot task): it is archived in memory.",
  ),
  cancelOnDisconnect: z.boolean().optional().describe(
    "Cancel the run when this client disconnects (by default the run goes on, and can be " +
      "followed again at GET /v1/runs/{id}/events).",
  ),
}).strict();

/** The body of `POST /v1/runs`, `POST /v1/messages` and `POST /v1/run-loops/{id}/messages`. */
export const runRequestSchema: z.ZodType<RunRequestBody> = _runRequest;

/** The body of `POST /v1/run-loops/{id}/messages`: the run loop is in the path. */
export const runLoopMessageSchema: z.ZodType<Omit<RunRequestBody, "runLoopId">> = _runRequest
  .omit({ runLoopId: true });
