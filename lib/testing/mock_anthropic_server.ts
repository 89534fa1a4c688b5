/**
 * A loopback HTTP server that speaks the Anthropic Messages streaming wire format: named SSE
 * events (`message_start`, `content_block_start` / `_delta` / `_stop` per block, `ping`,
 * `message_delta`, `message_stop`), thinking with signatures, redacted thinking, tool input
 * streamed as JSON pieces, cache usage, and faults: HTTP errors with the API's error body,
 * `event: error` mid-stream, streams cut short, delays. A reply may also be a recorded stream,
 * sent event by event as it is, to replay what a real server sent. Point any Anthropic client
 * at `server.url`.
 *
 * @module
 */

import { type MockRequest, mockSseBody, serveMock } from "./mock_http.ts";

/** A tool call the mock server streams as a `tool_use` block. */
export interface MockAnthropicToolCall {
  /** The tool's name. */
  name: string;
  /** The input: a value to encode, or a JSON text sent as is (even if invalid). */
  input?: Record<string, unknown> | string;
  /** The block id (default `toolu_mock_<n>`). */
  id?: string;
}

/** The thinking that opens a reply: readable with a signature, or redacted. */
export type MockAnthropicThinking =
  | { text: string | string[]; signature: string }
  | { redacted: string };

/** Usage as the API reports it. */
export interface MockAnthropicUsage {
  /** Uncached input tokens. */
  input_tokens: number;
  /** Output tokens. */
  output_tokens: number;
  /** Input tokens read from the cache. */
  cache_read_input_tokens?: number;
  /** Input tokens written to the cache. */
  cache_creation_input_tokens?: number;
}

/** One raw stream event, as the API sends it: its SSE name is its `type`. */
export type MockAnthropicEvent = { type: string; [key: string]: unknown };

/** The answer to one request. */
export interface MockAnthropicReply {
  /**
   * A recorded stream to send as it is, each event framed as SSE under its `type`, in place of
   * the stream the other fields describe (the faults and delays still apply).
   */
  events?: readonly MockAnthropicEvent[];
  /** A thinking block before the text. */
  thinking?: MockAnthropicThinking;
  /** The answer's text, as one text or as its deltas. */
  text?: string | string[];
  /** Tool calls, after the text; each input arrives as several `input_json_delta` pieces. */
  toolCalls?: MockAnthropicToolCall[];
  /** The `stop_reason` (default `tool_use` with calls, else `end_turn`). */
  stopReason?: string;
  /** The usage reported (default derived from the sizes). */
  usage?: MockAnthropicUsage;
  /** Answer with this HTTP status and an error body instead. */
  status?: number;
  /** The error body (default `{"type":"error","error":{"type":…,"message":…}}`). */
  errorBody?: unknown;
  /** Response headers, e.g. `retry-after`. */
  headers?: Record<string, string>;
  /** Send `event: error` with `{"type":"error","error": error}` after this many events, then close. */
  errorAfter?: { events: number; error: unknown };
  /** Close the stream after this many events (pings not counted), before `message_stop`. */
  cutAfter?: number;
  /** A wait before the response starts. */
  delayMs?: number;
  /** A wait between events. */
  eventDelayMs?: number;
  /** `ping` events right after `message_start` (default 1), e.g. to fill a long pause. */
  pings?: number;
}

/** Options of {@link startMockAnthropicServer}. */
export interface MockAnthropicServerOptions {
  /** The replies, one per request in order, or a function of the request body and its index. */
  replies:
    | readonly MockAnthropicReply[]
    | ((body: Record<string, unknown>, index: number) => MockAnthropicReply);
  /** The model name in `message_start` (default the request's). */
  model?: string;
}

/** A running mock Anthropic server. */
export interface MockAnthropicServer extends AsyncDisposable {
  /** The API root, without `/v1` (like `ANTHROPIC_BASE_URL`). */
  readonly url: string;
  /** Every `POST /v1/messages` received, in order. */
  readonly requests: MockRequest[];
  /** Stops the server. */
  close(): Promise<void>;
}

/**
 * Starts the mock server on a free loopback port.
 *
 * @example
 * ```ts
 * import { startMockAnthropicServer } from "./mock_anthropic_server.ts";
 * await using server = startMockAnthropicServer({ replies: [{ text: "Hi" }] });
 * const response = await fetch(`${server.url}/v1/messages`, {
 *   method: "POST",
 *   body: JSON.stringify({ model: "m", max_tokens: 10, messages: [], stream: true }),
 * });
 * const body = await response.text();
 * if (!body.includes("event: message_stop") || !body.includes('"text":"Hi"')) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function startMockAnthropicServer(
  options: MockAnthropicServerOptions,
): MockAnthropicServer {
  const server = serveMock<MockAnthropicReply>({
    route: (path) => path === "/v1/messages",
    replies: options.replies,
    error: (status, message) =>
      _error(status, { type: status === 404 ? "not_found_error" : "api_error", message }),
    respond: (reply, body, index, closing) => {
      if (reply.status) {
        const error = { type: _ERROR_TYPES[reply.status] ?? "api_error", message: _message(reply) };
        return _error(reply.status, error, reply.errorBody, reply.headers);
      }
      const headers = new Headers(reply.headers);
      headers.set("content-type", "text/event-stream; charset=utf-8");
      headers.set("cache-control", "no-cache");
      headers.set("request-id", `req_mock_${index + 1}`);
      const model = options.model ?? String(body.model ?? "mock");
      const events = reply.events?.map((data) => ({ event: data.type, data })) ??
        _events(reply, model, body);
      return new Response(_sse(events, reply, closing), { headers });
    },
  });
  return { ...server, url: server.origin };
}

type _Event = { event: string; data: unknown };

const _ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error",
};

function _message(reply: MockAnthropicReply): string {
  if (reply.status === 529) return "Overloaded";
  if (reply.status === 401) return "invalid x-api-key";
  return `mock error ${reply.status}`;
}

function _error(
  status: number,
  error: { type: string; message: string },
  body?: unknown,
  headers?: Record<string, string>,
): Response {
  const all = new Headers(headers);
  all.set("content-type", "application/json");
  all.set("request-id", "req_mock_error");
  return new Response(JSON.stringify(body ?? { type: "error", error }), { status, headers: all });
}

function _deltas(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return typeof value === "string" ? [value] : value;
}

/** Splits a text into `count` pieces (the first one empty, as the API starts tool input). */
function _pieces(text: string, count = 3): string[] {
  const size = Math.max(1, Math.ceil(text.length / count));
  const pieces = [""];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
  return pieces;
}

/** The events of a streamed reply, pings included. */
function _events(
  reply: MockAnthropicReply,
  model: string,
  body: Record<string, unknown>,
): _Event[] {
  const events: _Event[] = [];
  const usage = reply.usage ?? {
    input_tokens: JSON.stringify(body.messages ?? []).length >> 2,
    output_tokens: 0,
  };
  events.push({
    event: "message_start",
    data: {
      type: "message_start",
      message: {
        id: "msg_mock",
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: usage.input_tokens,
          cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
          cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
          output_tokens: 1,
        },
      },
    },
  });
  for (let i = 0; i < (reply.pings ?? 1); i++) {
    events.push({ event: "ping", data: { type: "ping" } });
  }
  let index = 0;
  const block = (start: Record<string, unknown>, deltas: Record<string, unknown>[]) => {
    const at = index++;
    events.push({
      event: "content_block_start",
      data: { type: "content_block_start", index: at, content_block: start },
    });
    for (const delta of deltas) {
      events.push({
        event: "content_block_delta",
        data: { type: "content_block_delta", index: at, delta },
      });
    }
    events.push({ event: "content_block_stop", data: { type: "content_block_stop", index: at } });
    events.push({ event: "ping", data: { type: "ping" } });
  };

  const thinking = reply.thinking;
  if (thinking && "redacted" in thinking) {
    block({ type: "redacted_thinking", data: thinking.redacted }, []);
  } else if (thinking) {
    block({ type: "thinking", thinking: "", signature: "" }, [
      ..._deltas(thinking.text).map((text) => ({ type: "thinking_delta", thinking: text })),
      { type: "signature_delta", signature: thinking.signature },
    ]);
  }
  const text = _deltas(reply.text);
  if (text.length > 0) {
    block(
      { type: "text", text: "", citations: null },
      text.map((piece) => ({ type: "text_delta", text: piece })),
    );
  }
  const calls = reply.toolCalls ?? [];
  for (const [i, call] of calls.entries()) {
    const input = typeof call.input === "string" ? call.input : JSON.stringify(call.input ?? {});
    block(
      { type: "tool_use", id: call.id ?? `toolu_mock_${i + 1}`, name: call.name, input: {} },
      _pieces(input).map((piece) => ({ type: "input_json_delta", partial_json: piece })),
    );
  }
  const stopReason = reply.stopReason ?? (calls.length > 0 ? "tool_use" : "end_turn");
  const stopSequences = body.stop_sequences as string[] | undefined;
  events.push({
    event: "message_delta",
    data: {
      type: "message_delta",
      delta: {
        stop_reason: stopReason,
        stop_sequence: stopReason === "stop_sequence" ? stopSequences?.[0] ?? "STOP" : null,
        stop_details: null,
      },
      usage: { output_tokens: reply.usage?.output_tokens ?? events.length },
    },
  });
  events.push({ event: "message_stop", data: { type: "message_stop" } });
  return events;
}

/** Frames events as an SSE body, with the reply's faults. */
function _sse(
  events: _Event[],
  reply: MockAnthropicReply,
  signal: AbortSignal,
): ReadableStream<Uint8Array> {
  const frames: Array<string | "cut"> = [];
  const frame = (event: string, data: unknown) =>
    `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
  let sent = 0;
  for (const event of events) {
    if (event.event !== "ping") {
      if (reply.cutAfter === sent) frames.push("cut");
      if (reply.errorAfter?.events === sent) {
        frames.push(frame("error", { type: "error", error: reply.errorAfter.error }), "cut");
      }
      sent++;
    }
    frames.push(frame(event.event, event.data));
  }
  return mockSseBody(frames, reply.eventDelayMs, signal);
}
