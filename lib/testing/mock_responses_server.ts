/**
 * A loopback HTTP server that speaks the OpenAI Responses API (`POST /v1/responses`) as OpenAI
 * streams it (event names in `event:` lines and `type` in the JSON, sequence numbers, the
 * whole response object at the end), with faults. It checks what OpenAI checks of the input
 * when `store` is false: each reasoning item sent back carries the `encrypted_content` the
 * server issued and is followed by the item that followed it in the output, and each function
 * call has its output and each output its call. For tests and benchmarks: point an OpenAI
 * client, or `openaiResponsesModel`, at `server.url`.
 *
 * @module
 */

import { type MockRequest, mockSseBody, serveMock } from "./mock_http.ts";
import {
  type IssuedItem,
  mockIds,
  type MockResponsesEvent,
  type MockResponsesReply,
  replyEvents,
} from "./mock_responses_stream.ts";

export type {
  MockResponsesError,
  MockResponsesReply,
  MockResponsesToolCall,
} from "./mock_responses_stream.ts";

/** Options of {@link startMockResponsesServer}. */
export interface MockResponsesServerOptions {
  /** The replies, one per request in order, or a function of the request body and its index. */
  replies:
    | readonly MockResponsesReply[]
    | ((body: Record<string, unknown>, index: number) => MockResponsesReply);
  /** Server habits applied to every reply. */
  habits?: MockResponsesHabits;
}

/** Habits of real servers the mock can imitate. */
export interface MockResponsesHabits {
  /** SSE comment lines between events (proxies' keep-alives). */
  keepAlive?: boolean;
  /** Lines end with CRLF. */
  crlf?: boolean;
}

/** A request the mock server received. */
export type MockResponsesRequest = MockRequest;

/** A running mock Responses server. */
export interface MockResponsesServer extends AsyncDisposable {
  /** The API root, including `/v1`. */
  readonly url: string;
  /** Every request received, in order, refused ones included. */
  readonly requests: MockResponsesRequest[];
  /** Stops the server. */
  close(): Promise<void>;
}

/**
 * Starts the mock Responses server on a free loopback port.
 *
 * @example
 * ```ts
 * import { startMockResponsesServer } from "./mock_responses_server.ts";
 * await using server = startMockResponsesServer({ replies: [{ text: "Hi" }] });
 * const response = await fetch(`${server.url}/responses`, {
 *   method: "POST",
 *   body: JSON.stringify({ model: "m", input: "Hello", stream: true }),
 * });
 * const body = await response.text();
 * if (!body.includes("event: response.output_text.delta") || !body.includes('"delta":"Hi"')) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function startMockResponsesServer(
  options: MockResponsesServerOptions,
): MockResponsesServer {
  const habits = options.habits ?? {};
  const issued = new Map<string, IssuedItem>();
  const id = mockIds();
  const server = serveMock<MockResponsesReply>({
    route: (path) => path.endsWith("/responses"),
    replies: options.replies,
    error: (status, message) => _error(status, message),
    refuse: (body) => {
      const refused = body.store === false ? checkInput(body.input, issued) : undefined;
      return refused && _error(400, refused.message, refused.param, refused.code);
    },
    respond: (reply, body, _index, closing) => {
      const headers = new Headers(reply.headers);
      if (reply.status) {
        headers.set("content-type", "application/json");
        const error = reply.errorBody ?? {
          error: {
            message: `mock error ${reply.status}`,
            type: "mock_error",
            param: null,
            code: null,
          },
        };
        return new Response(JSON.stringify(error), { status: reply.status, headers });
      }
      const { events, response } = replyEvents(reply, {
        body,
        id,
        issue: (item) => issued.set(String(item.item.id), item),
      });
      if (reply.json) {
        headers.set("content-type", "application/json");
        return new Response(JSON.stringify(response), { headers });
      }
      headers.set("content-type", "text/event-stream; charset=utf-8");
      headers.set("cache-control", "no-cache");
      if (reply.empty) return new Response("", { headers });
      return new Response(_sse(events, reply, habits, closing), { headers });
    },
  });
  return { ...server, url: `${server.origin}/v1` };
}

/** Why OpenAI would refuse an input: its message, and the parameter and code it names. */
export interface InputRefusal {
  /** OpenAI's message. */
  message: string;
  /** The parameter named. */
  param: string | null;
  /** The error code. */
  code: string | null;
}

/**
 * What OpenAI refuses in the `input` of a request made with `store: false`, given the items
 * the server issued: a reasoning item without its `encrypted_content`, with one the server did
 * not issue, or not followed by the item that followed it in the output; a function call
 * without its output, an output without its call.
 *
 * @example
 * ```ts
 * import { checkInput } from "./mock_responses_server.ts";
 * const issued = new Map([["rs_1", { item: { id: "rs_1", type: "reasoning" }, following: "fc_1" }]]);
 * const refusal = checkInput([{ id: "rs_1", type: "reasoning", summary: [] }], issued);
 * if (!refusal?.message.includes("rs_1")) throw new Error("unexpected");
 * ```
 */
export function checkInput(
  input: unknown,
  issued: ReadonlyMap<string, IssuedItem>,
): InputRefusal | undefined {
  if (!Array.isArray(input)) return undefined;
  const calls = new Set<string>();
  const answered = new Set<string>();
  for (const [i, item] of input.entries()) {
    if (item?.type === "function_call") calls.add(String(item.call_id));
    if (item?.type === "function_call_output") {
      if (!calls.has(String(item.call_id))) {
        return {
          message: `No tool call found for function call output with call_id ${item.call_id}.`,
          param: "input",
          code: null,
        };
      }
      answered.add(String(item.call_id));
    }
    if (item?.type !== "reasoning") continue;
    const id = String(item.id);
    if (typeof item.encrypted_content !== "string") {
      return {
        message: `Item with id '${id}' not found. Items are not persisted when \`store\` is set ` +
          "to false. Try again with `store` set to true, or remove this item from your input.",
        param: "input",
        code: null,
      };
    }
    const known = issued.get(id);
    if (!known || known.item.encrypted_content !== item.encrypted_content) {
      return {
        message: `The encrypted content for item ${id} could not be verified.`,
        param: null,
        code: "invalid_encrypted_content",
      };
    }
    if (known.following !== undefined && input[i + 1]?.id !== known.following) {
      return {
        message: `Item '${id}' of type 'reasoning' was provided without its required following ` +
          "item.",
        param: "input",
        code: null,
      };
    }
  }
  for (const call of calls) {
    if (!answered.has(call)) {
      return {
        message: `No tool output found for function call ${call}.`,
        param: "input",
        code: null,
      };
    }
  }
  return undefined;
}

function _error(
  status: number,
  message: string,
  param: string | null = null,
  code = null as string | null,
): Response {
  const type = status === 400 ? "invalid_request_error" : "mock_error";
  return Response.json({ error: { message, type, param, code } }, { status });
}

/** Frames events as an SSE body, with the reply's faults and the server's habits. */
function _sse(
  events: MockResponsesEvent[],
  reply: MockResponsesReply,
  habits: MockResponsesHabits,
  signal: AbortSignal,
): ReadableStream<Uint8Array> {
  const eol = habits.crlf ? "\r\n" : "\n";
  const frame = (event: MockResponsesEvent) =>
    `event: ${event.type}${eol}data: ${JSON.stringify(event)}${eol}${eol}`;
  const frames: Array<string | "cut" | "reset"> = [];
  for (const [sent, event] of events.entries()) {
    if (reply.cutAfter === sent) frames.push("cut");
    if (reply.resetAfter === sent) frames.push("reset");
    if (reply.errorAfter?.events === sent) {
      const { code, message } = reply.errorAfter;
      frames.push(
        frame({ type: "error", sequence_number: sent, code, message, param: null }),
        "cut",
      );
    }
    if (habits.keepAlive) frames.push(`: keep-alive${eol}${eol}`);
    frames.push(frame(event));
  }
  return mockSseBody(frames, reply.eventDelayMs, signal);
}
