/**
 * Reads the raw events of a streamed Anthropic Messages answer into model events: text and
 * thinking as they come, a thinking block's signature (or a redacted block's data) at its end,
 * each tool call once its streamed JSON input is complete, and the usage and stop reason of
 * `message_start` and `message_delta`. Also maps the errors the API sends inside a stream.
 *
 * @module
 */

import { type AgentError, ConfigError, ContextLengthError, ProviderError } from "../errors.ts";
import type { ToolCallPart } from "../messages.ts";
import type { FinishReason, ModelEvent } from "../model.ts";
import type { Usage } from "../usage.ts";
import { isContextLengthMessage } from "./http_errors.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

type _Block =
  | { kind: "text" }
  | { kind: "thinking"; signature: string }
  | { kind: "redacted"; data: string }
  | { kind: "tool"; id: string; name: string; json: string; initial: unknown }
  | { kind: "other" };

/** A reader of one streamed answer; see {@link anthropicEventReader}. */
export interface AnthropicEventReader {
  /** The model events one raw stream event gives. Throws on an `error` event. */
  read(event: unknown): ModelEvent[];
  /** The `finish` event; throws a retryable error when the stream ended before `message_stop`. */
  end(): ModelEvent[];
}

/**
 * A reader of one streamed answer: `read()` each raw event (as the SDK parses them), then
 * `end()` for the finish.
 *
 * @example
 * ```ts
 * import { anthropicEventReader } from "./anthropic_events.ts";
 * const reader = anthropicEventReader("anthropic");
 * const events = [
 *   { type: "message_start", message: { usage: { input_tokens: 10, output_tokens: 1 } } },
 *   { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_1", name: "ls", input: {} } },
 *   { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"path":' } },
 *   { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '"."}' } },
 *   { type: "content_block_stop", index: 0 },
 *   { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 12 } },
 *   { type: "message_stop" },
 * ].flatMap((event) => reader.read(event));
 * const [call] = events;
 * const [finish] = reader.end();
 * if (call.type !== "tool_call" || (call.call.input as { path: string }).path !== ".") throw new Error("unexpected");
 * if (finish.type !== "finish" || finish.reason !== "tool_calls" || finish.usage.outputTokens !== 12) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function anthropicEventReader(provider: string): AnthropicEventReader {
  const blocks = new Map<number, _Block>();
  const usage: Record<string, Json> = {};
  let stopReason: string | undefined;
  let hasToolCalls = false;
  let stopped = false;

  const mergeUsage = (raw: Json) => {
    if (!raw || typeof raw !== "object") return;
    // message_delta counts are cumulative: the latest non-null value of each stands.
    for (const [key, value] of Object.entries(raw)) if (value !== null) usage[key] = value;
  };

  const start = (index: number, block: Json): ModelEvent[] => {
    switch (block?.type) {
      case "text":
        blocks.set(index, { kind: "text" });
        return _text(block.text) ? [{ type: "text_delta", text: block.text }] : [];
      case "thinking":
        blocks.set(index, { kind: "thinking", signature: _text(block.signature) });
        return _text(block.thinking) ? [{ type: "reasoning_delta", text: block.thinking }] : [];
      case "redacted_thinking":
        blocks.set(index, { kind: "redacted", data: _text(block.data) });
        return [];
      case "tool_use":
        blocks.set(index, {
          kind: "tool",
          id: _text(block.id) || `toolu_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`,
          name: _text(block.name),
          json: "",
          initial: block.input,
        });
        return [];
      default:
        // Server tools (web search, code execution) run at the provider; nothing to do here.
        blocks.set(index, { kind: "other" });
        return [];
    }
  };

  const delta = (block: _Block | undefined, delta: Json): ModelEvent[] => {
    switch (delta?.type) {
      case "text_delta":
        return _text(delta.text) ? [{ type: "text_delta", text: delta.text }] : [];
      case "thinking_delta":
        return _text(delta.thinking) ? [{ type: "reasoning_delta", text: delta.thinking }] : [];
      case "signature_delta":
        if (block?.kind === "thinking") block.signature += _text(delta.signature);
        return [];
      case "input_json_delta":
        if (block?.kind === "tool") block.json += _text(delta.partial_json);
        return [];
      default:
        return [];
    }
  };

  const stop = (block: _Block | undefined): ModelEvent[] => {
    switch (block?.kind) {
      case "thinking":
        return [{
          type: "reasoning_end",
          ...(block.signature ? { signature: block.signature } : {}),
        }];
      case "redacted":
        return [{ type: "reasoning_end", redacted: block.data }];
      case "tool":
        if (!block.name) return [];
        hasToolCalls = true;
        return [{ type: "tool_call", call: _toolCall(block) }];
      default:
        return [];
    }
  };

  const read = (event: Json): ModelEvent[] => {
    if (event === null || typeof event !== "object") return [];
    const index = typeof event.index === "number" ? event.index : 0;
    switch (event.type) {
      case "message_start":
        mergeUsage(event.message?.usage);
        return [];
      case "content_block_start":
        return start(index, event.content_block);
      case "content_block_delta":
        return delta(blocks.get(index), event.delta);
      case "content_block_stop": {
        const block = blocks.get(index);
        blocks.delete(index);
        return stop(block);
      }
      case "message_delta":
        if (_text(event.delta?.stop_reason)) stopReason = event.delta.stop_reason;
        mergeUsage(event.usage);
        return [];
      case "message_stop":
        stopped = true;
        return [];
      case "error":
        throw anthropicStreamError(provider, event.error ?? event);
      default:
        return []; // ping, and event types added later
    }
  };

  const end = (): ModelEvent[] => {
    if (!stopped) {
      throw new ProviderError(`${provider} cut the stream before the answer finished`, {
        retryable: true,
      });
    }
    return [{
      type: "finish",
      reason: mapStopReason(stopReason, hasToolCalls),
      usage: anthropicUsage(usage),
    }];
  };

  return { read, end };
}

/**
 * Maps a Messages API `stop_reason` onto the neutral {@link FinishReason}. Without a reason,
 * an answer with tool calls ended for them, any other stopped naturally.
 *
 * @example
 * ```ts
 * import { mapStopReason } from "./anthropic_events.ts";
 * if (mapStopReason("pause_turn") !== "pause") throw new Error("unexpected");
 * if (mapStopReason("model_context_window_exceeded") !== "length") throw new Error("unexpected");
 * ```
 */
export function mapStopReason(reason: string | undefined, hasToolCalls = false): FinishReason {
  switch (reason) {
    case undefined:
      return hasToolCalls ? "tool_calls" : "stop";
    case "end_turn":
    case "stop_sequence":
      return "stop";
    case "tool_use":
      return "tool_calls";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "pause_turn":
      return "pause";
    case "refusal":
      return "content_filter";
    default:
      return "other";
  }
}

/**
 * Maps a Messages API `usage` object onto {@link Usage}. The API counts uncached input apart
 * from cache reads and writes; `inputTokens` is their sum.
 *
 * @example
 * ```ts
 * import { anthropicUsage } from "./anthropic_events.ts";
 * const usage = anthropicUsage({
 *   input_tokens: 5,
 *   cache_creation_input_tokens: 100,
 *   cache_read_input_tokens: 1000,
 *   output_tokens: 7,
 * });
 * if (usage.inputTokens !== 1105 || usage.cacheReadTokens !== 1000) throw new Error("unexpected");
 * ```
 */
export function anthropicUsage(reported: unknown): Usage {
  const raw = reported as Json;
  const cacheRead = _count(raw?.cache_read_input_tokens);
  const cacheWrite = _count(raw?.cache_creation_input_tokens);
  const usage: Usage = {
    inputTokens: _count(raw?.input_tokens) + cacheRead + cacheWrite,
    outputTokens: _count(raw?.output_tokens),
  };
  if (cacheRead) usage.cacheReadTokens = cacheRead;
  if (cacheWrite) usage.cacheWriteTokens = cacheWrite;
  const reasoning = _count(raw?.output_tokens_details?.thinking_tokens);
  if (reasoning) usage.reasoningTokens = reasoning;
  return usage;
}

/** Error types after which the same request may succeed. */
const _RETRYABLE: Record<string, number> = {
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/**
 * The error for an error object (`{ type, message }`) the API sent inside a stream: overload,
 * rate limits and server faults are retryable, a too-long prompt is a
 * {@link ContextLengthError}, rejected credentials a {@link ConfigError}; anything else is
 * not retried.
 *
 * @example
 * ```ts
 * import { ProviderError } from "../errors.ts";
 * import { anthropicStreamError } from "./anthropic_events.ts";
 * const error = anthropicStreamError("anthropic", { type: "overloaded_error", message: "Overloaded" });
 * if (!(error instanceof ProviderError) || !error.retryable) throw new Error("unexpected");
 * ```
 */
export function anthropicStreamError(
  provider: string,
  sent: unknown,
  keyEnv = "ANTHROPIC_API_KEY",
): AgentError {
  const error = sent as Json;
  const type = _text(error?.type);
  const message = typeof error === "string"
    ? error
    : _text(error?.message) || type || JSON.stringify(error);
  if (isContextLengthMessage(message)) {
    return new ContextLengthError(
      `The conversation is too long for the model's context window (${provider}: ${message})`,
    );
  }
  if (type === "authentication_error" || type === "permission_error") {
    return new ConfigError(
      `${provider} refused the request (${type}): ${message}. The key is wrong or lacks ` +
        `access: check ${keyEnv}.`,
    );
  }
  const status = _RETRYABLE[type];
  return new ProviderError(
    `${provider} sent an error in the stream: ${type ? `${type}: ` : ""}${message}`,
    { status, retryable: status !== undefined },
  );
}

function _toolCall(block: Extract<_Block, { kind: "tool" }>): ToolCallPart {
  const call: ToolCallPart = { type: "tool_call", id: block.id, name: block.name, input: {} };
  const raw = block.json.trim();
  if (raw === "") {
    // The whole input came with the block's start (or there is none).
    if (_isObject(block.initial)) call.input = block.initial;
    return call;
  }
  try {
    const input = JSON.parse(raw);
    if (_isObject(input)) call.input = input;
    else call.invalidInput = raw;
  } catch {
    call.invalidInput = raw;
  }
  return call;
}

function _isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function _text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function _count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}
