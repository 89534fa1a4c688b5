/**
 * The events of one OpenAI Responses answer, as OpenAI streams them: `response.created`,
 * `response.in_progress`, each output item added, its content parts and deltas, each `.done`,
 * then `response.completed` (or `response.incomplete`, or `response.failed`) with the whole
 * response object and its usage. The mock Responses server frames them as SSE.
 *
 * @module
 */

/** A tool call the mock Responses server streams. */
export interface MockResponsesToolCall {
  /** The tool's name. */
  name: string;
  /** The arguments: a JSON text (sent as is, even if invalid) or a value to encode. */
  arguments?: string | Record<string, unknown>;
  /** The call id (default `call_<n>`). */
  callId?: string;
}

/** An error the mock reports in a stream (`error` event, or a failed response). */
export interface MockResponsesError {
  /** The error code, e.g. `server_error`, `rate_limit_exceeded`, `invalid_prompt`. */
  code: string;
  /** The message. */
  message: string;
}

/** The answer to one request: an answer to stream, or a fault. */
export interface MockResponsesReply {
  /** The answer's text, as one text or as its deltas. */
  text?: string | string[];
  /**
   * The reasoning summary's parts, streamed when the request asks for a summary; a reasoning
   * item (with `encrypted_content` when the request includes it) comes first either way.
   */
  reasoning?: string[];
  /** Function calls, after the text; several are parallel calls. */
  toolCalls?: MockResponsesToolCall[];
  /** The model refuses: a message whose content is this refusal. */
  refusal?: string;
  /** End with `response.incomplete` for this reason. */
  incomplete?: "max_output_tokens" | "content_filter";
  /** End with `response.failed` carrying this error, after the output streamed. */
  failed?: MockResponsesError;
  /** Send an `error` event after this many events, then close the stream. */
  errorAfter?: { events: number } & MockResponsesError;
  /** Usage counts (default derived from the sizes). */
  usage?: {
    input_tokens?: number;
    cached_tokens?: number;
    output_tokens?: number;
    reasoning_tokens?: number;
  };
  /** Answer with this HTTP status and an error body instead. */
  status?: number;
  /** The error body (default `{ error: { message, type, param, code } }`). */
  errorBody?: unknown;
  /** Response headers, e.g. `retry-after`. */
  headers?: Record<string, string>;
  /** Close the stream cleanly after this many events, before the answer finished. */
  cutAfter?: number;
  /** Break the connection after this many events. */
  resetAfter?: number;
  /** Answer 200 with an empty event stream. */
  empty?: boolean;
  /** Ignore `stream: true` and answer with the whole response object as JSON. */
  json?: boolean;
  /** A wait before the response starts. */
  delayMs?: number;
  /** A wait between events. */
  eventDelayMs?: number;
}

/** One stream event: its type and its JSON, `type` and `sequence_number` included. */
export type MockResponsesEvent = Record<string, unknown> & { type: string };

/** An output item the mock made, and the id of the item that followed it in the output. */
export interface IssuedItem {
  /** The item, as sent in `response.output_item.done`. */
  item: Record<string, unknown>;
  /** The id of the next output item of the same response, if any. */
  following?: string;
}

/**
 * Makes the ids of one server, unique across its responses.
 *
 * @example
 * ```ts
 * import { mockIds } from "./mock_responses_stream.ts";
 * const id = mockIds();
 * if (!id("rs").startsWith("rs_") || id("fc") === id("fc")) throw new Error("unexpected");
 * ```
 */
export function mockIds(): (prefix: string) => string {
  let next = 0;
  return (prefix) => `${prefix}_${(0x68a0_0000 + ++next).toString(16)}${"0".repeat(40)}`;
}

/** Options of {@link replyEvents}. */
export interface ReplyEventsOptions {
  /** The request body. */
  body: Record<string, unknown>;
  /** Makes ids. */
  id: (prefix: string) => string;
  /** Receives each output item once done. */
  issue: (item: IssuedItem) => void;
}

/**
 * The events of a streamed reply, and the final response object.
 *
 * @example
 * ```ts
 * import { mockIds, replyEvents } from "./mock_responses_stream.ts";
 * const { events } = replyEvents({ text: "Hi" }, { body: {}, id: mockIds(), issue: () => {} });
 * if (events.at(-1)?.type !== "response.completed") throw new Error("unexpected");
 * ```
 */
export function replyEvents(
  reply: MockResponsesReply,
  options: ReplyEventsOptions,
): { events: MockResponsesEvent[]; response: Record<string, unknown> } {
  const { body, id } = options;
  const events: MockResponsesEvent[] = [];
  const emit = (type: string, fields: Record<string, unknown>) =>
    events.push({ type, sequence_number: events.length, ...fields });
  const response: Record<string, unknown> = _response(body, id("resp"));
  const snapshot = () => structuredClone(response);
  emit("response.created", { response: snapshot() });
  emit("response.in_progress", { response: snapshot() });

  const output: Record<string, unknown>[] = [];
  const wantsEncrypted = Array.isArray(body.include) &&
    body.include.includes("reasoning.encrypted_content");
  const add = (item: Record<string, unknown>) => {
    emit("response.output_item.added", { output_index: output.length, item });
  };
  const done = (item: Record<string, unknown>) => {
    emit("response.output_item.done", { output_index: output.length, item });
    output.push(item);
  };

  if (reply.reasoning) {
    const item_id = id("rs");
    const where = { item_id, output_index: output.length };
    add({ id: item_id, type: "reasoning", summary: [] });
    // As OpenAI does, the summary is written only when the request asks for one.
    const summarised = (body.reasoning as { summary?: unknown } | undefined)?.summary;
    const parts = summarised ? reply.reasoning : [];
    const summary = parts.map((text, summary_index) => {
      const part = { type: "summary_text", text };
      emit("response.reasoning_summary_part.added", {
        ...where,
        summary_index,
        part: { type: "summary_text", text: "" },
      });
      for (const delta of _halves(text)) {
        emit("response.reasoning_summary_text.delta", { ...where, summary_index, delta });
      }
      emit("response.reasoning_summary_text.done", { ...where, summary_index, text });
      emit("response.reasoning_summary_part.done", { ...where, summary_index, part });
      return part;
    });
    const item: Record<string, unknown> = { id: item_id, type: "reasoning", summary };
    if (wantsEncrypted) item.encrypted_content = _encrypted(item_id);
    done(item);
  }

  const message = (content: Record<string, unknown>, deltas: string[], kind: string) => {
    const item_id = id("msg");
    const where = { item_id, output_index: output.length, content_index: 0 };
    add({ id: item_id, type: "message", status: "in_progress", content: [], role: "assistant" });
    const empty = kind === "refusal"
      ? { type: "refusal", refusal: "" }
      : { type: "output_text", annotations: [], logprobs: [], text: "" };
    emit("response.content_part.added", { ...where, part: empty });
    for (const delta of deltas) {
      if (kind === "refusal") emit("response.refusal.delta", { ...where, delta });
      else emit("response.output_text.delta", { ...where, delta, logprobs: [] });
    }
    if (kind === "refusal") emit("response.refusal.done", { ...where, refusal: content.refusal });
    else emit("response.output_text.done", { ...where, text: content.text, logprobs: [] });
    emit("response.content_part.done", { ...where, part: content });
    done({
      id: item_id,
      type: "message",
      status: reply.incomplete ? "incomplete" : "completed",
      content: [content],
      role: "assistant",
    });
  };
  if (reply.text !== undefined) {
    const deltas = typeof reply.text === "string" ? [reply.text] : reply.text;
    const text = deltas.join("");
    message({ type: "output_text", annotations: [], logprobs: [], text }, deltas, "text");
  }
  if (reply.refusal !== undefined) {
    message({ type: "refusal", refusal: reply.refusal }, _halves(reply.refusal), "refusal");
  }
  for (const call of reply.toolCalls ?? []) {
    const item_id = id("fc");
    const call_id = call.callId ?? id("call");
    const args = typeof call.arguments === "string"
      ? call.arguments
      : JSON.stringify(call.arguments ?? {});
    const item = { id: item_id, type: "function_call", status: "in_progress", call_id };
    const where = { item_id, output_index: output.length };
    add({ ...item, arguments: "", name: call.name });
    for (const delta of _thirds(args)) {
      emit("response.function_call_arguments.delta", { ...where, delta });
    }
    emit("response.function_call_arguments.done", { ...where, arguments: args });
    done({ ...item, status: "completed", arguments: args, name: call.name });
  }
  output.forEach((item, i) =>
    options.issue({ item, following: output[i + 1]?.id as string | undefined })
  );

  response.output = output;
  response.usage = _usage(reply, body, output);
  if (reply.failed) {
    response.status = "failed";
    response.error = { code: reply.failed.code, message: reply.failed.message };
    emit("response.failed", { response: snapshot() });
  } else if (reply.incomplete) {
    response.status = "incomplete";
    response.incomplete_details = { reason: reply.incomplete };
    emit("response.incomplete", { response: snapshot() });
  } else {
    response.status = "completed";
    response.completed_at = 1_756_000_001;
    emit("response.completed", { response: snapshot() });
  }
  return { events, response };
}

function _response(body: Record<string, unknown>, id: string): Record<string, unknown> {
  return {
    id,
    object: "response",
    created_at: 1_756_000_000,
    status: "in_progress",
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: String(body.model ?? "mock"),
    output: [],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: "medium", summary: null, ...(body.reasoning as object | undefined) },
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: { format: { type: "text" }, verbosity: "medium" },
    tool_choice: "auto",
    tools: body.tools ?? [],
    top_p: 1,
    truncation: "disabled",
    usage: null,
    user: null,
    metadata: {},
  };
}

function _usage(
  reply: MockResponsesReply,
  body: Record<string, unknown>,
  output: Record<string, unknown>[],
): Record<string, unknown> {
  const given = reply.usage ?? {};
  const reasoning = given.reasoning_tokens ??
    (reply.reasoning ? 16 + (reply.reasoning.join("").length >> 2) : 0);
  const visible = JSON.stringify(output.filter((item) => item.type !== "reasoning")).length >> 4;
  const input = given.input_tokens ?? JSON.stringify(body.input ?? "").length >> 2;
  const outputTokens = given.output_tokens ?? reasoning + visible;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: given.cached_tokens ?? 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: input + outputTokens,
  };
}

/** Opaque encrypted reasoning the mock can recognise again. */
function _encrypted(id: string): string {
  const noise = crypto.getRandomValues(new Uint8Array(48));
  return `gAAAAA${btoa(id)}${btoa(String.fromCharCode(...noise))}`;
}

function _halves(text: string): string[] {
  const half = Math.ceil(text.length / 2);
  return text.length < 2 ? [text] : [text.slice(0, half), text.slice(half)];
}

function _thirds(text: string): string[] {
  const size = Math.max(1, Math.ceil(text.length / 3));
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
  return pieces;
}
