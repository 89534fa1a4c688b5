/**
 * A loopback HTTP server that speaks the Chat Completions streaming wire format, with switches
 * for the habits of real OpenAI-compatible servers and for faults. For tests and benchmarks:
 * point any OpenAI client at `server.url`.
 *
 * @module
 */

import { type MockRequest, mockSseBody, serveMock } from "./mock_http.ts";

export type { MockRequest };

/** A tool call the mock server streams. */
export interface MockToolCall {
  /** The tool's name. */
  name: string;
  /** The arguments: a JSON text (sent as is, even if invalid) or a value to encode. */
  arguments?: string | Record<string, unknown>;
  /** The call id (default `call_<n>`). */
  id?: string;
}

/** The answer to one request. */
export interface MockReply {
  /**
   * A recorded stream: these chunks are sent as they are, one `data:` event each, in place of
   * the ones the other fields would build (faults and habits of framing still apply).
   */
  chunks?: readonly unknown[];
  /** Answer with this JSON body at once, as a server that ignores `stream: true` does. */
  body?: unknown;
  /** The answer's text, as one text or as its deltas. */
  text?: string | string[];
  /** Reasoning, as one text or as its deltas. */
  reasoning?: string | string[];
  /** Tool calls, after the text. */
  toolCalls?: MockToolCall[];
  /** The `finish_reason` (default `tool_calls` with calls, else `stop`); `null` sends none. */
  finishReason?: string | null;
  /** The usage reported (default derived from the sizes). */
  usage?: Record<string, unknown>;
  /** Answer with this HTTP status and an error body instead. */
  status?: number;
  /** The error body (default `{ error: { message, type, code } }`). */
  errorBody?: unknown;
  /** Response headers, e.g. `retry-after`. */
  headers?: Record<string, string>;
  /** Close the stream cleanly after this many data events, before the finish. */
  cutAfter?: number;
  /** Break the connection after this many data events. */
  resetAfter?: number;
  /** Send `data: {"error": …}` after this many data events, then close. */
  errorAfter?: { events: number; error: unknown };
  /** A wait before the response starts. */
  delayMs?: number;
  /** A wait between events. */
  eventDelayMs?: number;
}

/** Habits of real servers the mock can imitate. */
export interface MockHabits {
  /** Tool-call deltas carry no `index` (Gemini). */
  noIndex?: boolean;
  /** Every tool call uses index 0 (Ollama, vLLM). */
  sameIndex?: boolean;
  /** Tool calls carry no `id`. */
  noId?: boolean;
  /** The `id` is repeated on every delta (sglang). */
  repeatId?: boolean;
  /** The name is repeated on every delta (older llama.cpp). */
  repeatName?: boolean;
  /** Each call's arguments arrive whole, in one delta (Groq, xAI). */
  wholeArguments?: boolean;
  /** Arguments arrive as a JSON object, not a string (Ollama's native shape). */
  objectArguments?: boolean;
  /** Each arguments delta repeats everything sent so far (DeepSeek "cumulative" servers). */
  cumulativeArguments?: boolean;
  /** The complete arguments are sent once more with the finish (vLLM). */
  resendArguments?: boolean;
  /** `finish_reason` is `stop` although tool calls were sent (Gemini, Ollama, sometimes OpenAI). */
  stopWithToolCalls?: boolean;
  /** SSE comment lines between events (OpenRouter's `: OPENROUTER PROCESSING`). */
  keepAlive?: boolean;
  /** `event: ping` events with non-JSON data (sse-starlette servers). */
  pings?: boolean;
  /** Where reasoning goes: `reasoning_content` (DeepSeek), `reasoning` (OpenRouter, Ollama, vLLM), or `<think>` tags in the content. */
  reasoningField?: "reasoning_content" | "reasoning" | "think_tags";
  /** No `data: [DONE]` at the end. */
  noDone?: boolean;
  /** Running usage totals in every chunk. */
  usageInEveryChunk?: boolean;
  /** A first chunk with empty `choices` (Azure's content filter results). */
  emptyChoicesFirst?: boolean;
  /** The server ignores `stream: true` and answers with one JSON body. */
  ignoreStream?: boolean;
  /** Lines end with CRLF. */
  crlf?: boolean;
}

/** Options of {@link startMockOpenAIServer}. */
export interface MockServerOptions {
  /** The replies, one per request in order, or a function of the request body and its index. */
  replies: readonly MockReply[] | ((body: Record<string, unknown>, index: number) => MockReply);
  /** Server habits applied to every reply. */
  habits?: MockHabits;
  /** The model name echoed in chunks (default the request's). */
  model?: string;
}

/** A running mock server. */
export interface MockServer extends AsyncDisposable {
  /** The API root, including `/v1`. */
  readonly url: string;
  /** Every chat request received, in order. */
  readonly requests: MockRequest[];
  /** Stops the server. */
  close(): Promise<void>;
}

/**
 * Starts the mock server on a free loopback port.
 *
 * @example
 * ```ts
 * import { startMockOpenAIServer } from "./mock_openai_server.ts";
 * await using server = startMockOpenAIServer({ replies: [{ text: "Hi" }] });
 * const response = await fetch(`${server.url}/chat/completions`, {
 *   method: "POST",
 *   body: JSON.stringify({ model: "m", messages: [], stream: true }),
 * });
 * if (!(await response.text()).includes('"content":"Hi"')) throw new Error("unexpected");
 * ```
 */
export function startMockOpenAIServer(options: MockServerOptions): MockServer {
  const habits = options.habits ?? {};
  const server = serveMock<MockReply>({
    route: (path) => path.endsWith("/chat/completions"),
    replies: options.replies,
    error: (status, message) => Response.json({ error: { message } }, { status }),
    respond: (reply, body, _index, closing) => {
      const headers = new Headers(reply.headers);
      if (reply.status) {
        headers.set("content-type", "application/json");
        const error = reply.errorBody ??
          { error: { message: `mock error ${reply.status}`, type: "mock_error", code: null } };
        return new Response(JSON.stringify(error), { status: reply.status, headers });
      }
      const model = options.model ?? String(body.model ?? "mock");
      if (reply.body !== undefined) {
        headers.set("content-type", "application/json");
        return new Response(JSON.stringify(reply.body), { headers });
      }
      const chunks = reply.chunks
        ? [...reply.chunks] as _Chunk[]
        : _chunks(reply, habits, model, body);
      if (habits.ignoreStream) {
        headers.set("content-type", "application/json");
        return new Response(JSON.stringify(_whole(reply, model)), { headers });
      }
      headers.set("content-type", "text/event-stream");
      headers.set("cache-control", "no-cache");
      return new Response(_sse(chunks, reply, habits, closing), { headers });
    },
  });
  return { ...server, url: `${server.origin}/v1` };
}

type _Chunk = Record<string, unknown>;

function _deltas(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return typeof value === "string" ? [value] : value;
}

function _args(call: MockToolCall): string {
  return typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {});
}

/** The chunks of a streamed reply, before framing. */
function _chunks(
  reply: MockReply,
  habits: MockHabits,
  model: string,
  body: Record<string, unknown>,
): _Chunk[] {
  const chunk = (delta: unknown, finish: string | null = null): _Chunk => ({
    id: "chatcmpl-mock",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const chunks: _Chunk[] = [];
  if (habits.emptyChoicesFirst) {
    chunks.push({
      id: "",
      object: "",
      created: 0,
      model: "",
      choices: [],
      prompt_filter_results: [],
    });
  }
  chunks.push(chunk({ role: "assistant", content: "" }));
  const reasoning = _deltas(reply.reasoning);
  if (habits.reasoningField === "think_tags" && reasoning.length > 0) {
    chunks.push(chunk({ content: "<think>" }));
    for (const text of reasoning) chunks.push(chunk({ content: text }));
    chunks.push(chunk({ content: "</think>\n\n" }));
  } else {
    const field = habits.reasoningField ?? "reasoning_content";
    for (const text of reasoning) chunks.push(chunk({ [field]: text, content: null }));
  }
  for (const text of _deltas(reply.text)) chunks.push(chunk({ content: text }));

  const calls = reply.toolCalls ?? [];
  for (const [i, call] of calls.entries()) {
    const id = call.id ?? `call_${i + 1}`;
    const base = (first: boolean): Record<string, unknown> => {
      const part: Record<string, unknown> = {};
      if (!habits.noIndex) part.index = habits.sameIndex ? 0 : i;
      if (!habits.noId && (first || habits.repeatId)) part.id = id;
      if (first) part.type = "function";
      return part;
    };
    const fn = (first: boolean, args: unknown): Record<string, unknown> =>
      first || habits.repeatName ? { name: call.name, arguments: args } : { arguments: args };
    const args = _args(call);
    if (habits.objectArguments) {
      const value = typeof call.arguments === "string" ? call.arguments : call.arguments ?? {};
      chunks.push(chunk({ tool_calls: [{ ...base(true), function: fn(true, value) }] }));
    } else if (habits.wholeArguments) {
      chunks.push(chunk({ tool_calls: [{ ...base(true), function: fn(true, args) }] }));
    } else {
      chunks.push(chunk({ tool_calls: [{ ...base(true), function: fn(true, "") }] }));
      const size = Math.max(1, Math.ceil(args.length / 3));
      for (let at = 0; at < args.length; at += size) {
        const piece = habits.cumulativeArguments
          ? args.slice(0, at + size)
          : args.slice(at, at + size);
        chunks.push(chunk({ tool_calls: [{ ...base(false), function: fn(false, piece) }] }));
      }
    }
  }
  const finish = reply.finishReason !== undefined
    ? reply.finishReason
    : calls.length > 0 && !habits.stopWithToolCalls
    ? "tool_calls"
    : "stop";
  // vLLM habit: the finish chunk carries every call's complete arguments once more.
  const resend = habits.resendArguments && calls.length > 0
    ? { tool_calls: calls.map((call, i) => ({ index: i, function: { arguments: _args(call) } })) }
    : undefined;
  if (finish !== null || resend) chunks.push(chunk(resend ?? {}, finish));

  const usage = reply.usage ?? {
    prompt_tokens: JSON.stringify(body.messages ?? []).length >> 2,
    completion_tokens: chunks.length,
    total_tokens: 0,
  };
  if (habits.usageInEveryChunk) {
    chunks.forEach((c, i) => {
      c.usage = {
        ...usage,
        completion_tokens: Math.round((Number(usage.completion_tokens) * (i + 1)) / chunks.length),
      };
    });
  } else if ((body.stream_options as { include_usage?: boolean } | undefined)?.include_usage) {
    chunks.push({
      id: "chatcmpl-mock",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model,
      choices: [],
      usage,
    });
  }
  return chunks;
}

/** A non-streamed completion, for servers that ignore `stream: true`. */
function _whole(reply: MockReply, model: string): _Chunk {
  const calls = (reply.toolCalls ?? []).map((call, i) => ({
    id: call.id ?? `call_${i + 1}`,
    type: "function",
    function: { name: call.name, arguments: _args(call) },
  }));
  return {
    id: "chatcmpl-mock",
    object: "chat.completion",
    created: 1_700_000_000,
    model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: _deltas(reply.text).join("") || null,
        reasoning_content: _deltas(reply.reasoning).join("") || undefined,
        tool_calls: calls.length ? calls : undefined,
      },
      finish_reason: reply.finishReason ?? (calls.length ? "tool_calls" : "stop"),
    }],
    usage: reply.usage ?? { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
}

/** Frames chunks as an SSE body, with the reply's faults and the server's habits. */
function _sse(
  chunks: _Chunk[],
  reply: MockReply,
  habits: MockHabits,
  signal: AbortSignal,
): ReadableStream<Uint8Array> {
  const eol = habits.crlf ? "\r\n" : "\n";
  const frames: Array<string | "cut" | "reset"> = [];
  let sent = 0;
  for (const chunk of chunks) {
    if (reply.cutAfter === sent) frames.push("cut");
    if (reply.resetAfter === sent) frames.push("reset");
    if (reply.errorAfter?.events === sent) {
      frames.push(`data: ${JSON.stringify({ error: reply.errorAfter.error })}${eol}${eol}`, "cut");
    }
    if (habits.keepAlive) frames.push(`: OPENROUTER PROCESSING${eol}${eol}`);
    if (habits.pings) {
      frames.push(`event: ping${eol}data: ${new Date(0).toISOString()}${eol}${eol}`);
    }
    frames.push(`data: ${JSON.stringify(chunk)}${eol}${eol}`);
    sent++;
  }
  if (!habits.noDone) frames.push(`data: [DONE]${eol}${eol}`);
  return mockSseBody(frames, reply.eventDelayMs, signal);
}
