/**
 * Reads the raw events of a streamed Anthropic Messages answer into model events: text and
 * thinking as they come, a thinking block's signature (or a redacted block's data) at its end,
 * each tool call once its streamed JSON input is complete, server tool blocks whole at their
 * end, and the usage and stop reason of `message_start` and `message_delta`. A message may
 * also come whole inside `message_start` (its blocks and stop reason, with no block events).
 * Also maps the errors the API sends inside a stream.
 *
 * @module
 */

import { type AgentError, ConfigError, ContextLengthError, ProviderError } from "../errors.ts";
import type { ToolCallPart } from "../messages.ts";
import type { FinishReason, ModelEvent } from "../model.ts";
import { anthropicOrigin, serverBlockEvent } from "./anthropic_server_blocks.ts";
import { anthropicUsage } from "./anthropic_usage.ts";
import { isContextLengthMessage } from "./http_errors.ts";
import { toolCallOf } from "./tool_call.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

type _Block =
  | { kind: "text" }
  | { kind: "thinking"; signature: string }
  | { kind: "redacted"; data: string }
  | { kind: "tool"; id: string; name: string; json: string; initial: unknown; caller?: unknown }
  | { kind: "server"; block: Record<string, unknown>; json: string };

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
  const origin = anthropicOrigin(provider);
  const blocks = new Map<number, _Block>();
  const usage: Record<string, Json> = {};
  let messageId: string | undefined;
  let container: string | undefined;
  let started = false;
  let blocksSeen = false;
  let stopReason: string | undefined;
  let hasToolCalls = false;
  let stopped = false;

  const mergeUsage = (raw: Json) => {
    if (!raw || typeof raw !== "object") return;
    // message_delta counts are cumulative: the latest non-null value of each stands.
    for (const [key, value] of Object.entries(raw)) if (value !== null) usage[key] = value;
  };

  /** The state of a block that starts, and the events its start gives. */
  const open = (block: Json): [_Block, ModelEvent[]] => {
    switch (block?.type) {
      case "text":
        return [
          { kind: "text" },
          _text(block.text) ? [{ type: "text_delta", text: block.text }] : [],
        ];
      case "thinking":
        return [
          { kind: "thinking", signature: _text(block.signature) },
          _text(block.thinking) ? [{ type: "reasoning_delta", text: block.thinking }] : [],
        ];
      case "redacted_thinking":
        return [{ kind: "redacted", data: _text(block.data) }, []];
      case "tool_use":
        return [{
          kind: "tool",
          id: _text(block.id) || `toolu_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`,
          name: _text(block.name),
          json: "",
          initial: block.input,
          caller: block.caller ?? undefined,
        }, []];
      default:
        // A server tool's use or result, or a block type added later: kept whole for its end.
        return [{ kind: "server", block: _isObject(block) ? { ...block } : {}, json: "" }, []];
    }
  };

  const start = (index: number, block: Json): ModelEvent[] => {
    blocksSeen = true;
    const [state, events] = open(block);
    blocks.set(index, state);
    return events;
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
        if (block?.kind === "tool" || block?.kind === "server") {
          block.json += _text(delta.partial_json);
        }
        return [];
      default:
        return [];
    }
  };

  const stop = (block: _Block | undefined): ModelEvent[] => {
    switch (block?.kind) {
      case "text":
        // Closes the text part, so that a server block that follows is a part of its own.
        return [{ type: "text_end" }];
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
        return [{ type: "tool_call", call: _toolCall(block, origin, container) }];
      case "server":
        return [serverBlockEvent(_serverBlock(block), origin)];
      default:
        return [];
    }
  };

  const messageStart = (message: Json): ModelEvent[] => {
    const id = _text(message?.id) || undefined;
    if (started) {
      // The same message announced again before any block: nothing new.
      if (!blocksSeen && id === messageId) return [];
      throw new ProviderError(
        `${provider} sent a second message (${id ?? "no id"}) inside message ` +
          `${messageId ?? "(no id)"}: the stream mixes two answers`,
        { retryable: true },
      );
    }
    started = true;
    messageId = id;
    container = _text(message?.container?.id) || undefined;
    mergeUsage(message?.usage);
    if (_text(message?.stop_reason)) stopReason = message.stop_reason;
    // Blocks that come whole with the message, without block events of their own.
    const content: Json[] = Array.isArray(message?.content) ? message.content : [];
    if (content.length > 0) blocksSeen = true;
    return content.flatMap((raw) => {
      const [block, events] = open(raw);
      return [...events, ...stop(block)];
    });
  };

  const read = (event: Json): ModelEvent[] => {
    if (event === null || typeof event !== "object") return [];
    const index = typeof event.index === "number" ? event.index : 0;
    switch (event.type) {
      case "message_start":
        return messageStart(event.message);
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

function _toolCall(
  block: Extract<_Block, { kind: "tool" }>,
  origin: string,
  container: string | undefined,
): ToolCallPart {
  const call: ToolCallPart = { type: "tool_call", id: block.id, name: block.name, input: {} };
  // A call made by code running at the provider names its caller, which must go back with it,
  // and the container the code runs in, which the next request names to go on there.
  if (block.caller !== undefined) {
    call.origin = origin;
    call.extra = { caller: block.caller, ...(container ? { container } : {}) };
  }
  if (block.json.trim() === "") {
    // The whole input came with the block's start (or there is none).
    if (_isObject(block.initial)) call.input = block.initial;
    return call;
  }
  const { input, invalidInput } = toolCallOf(block.id, block.name, block.json);
  call.input = input;
  if (invalidInput !== undefined) call.invalidInput = invalidInput;
  return call;
}

/** A finished server block: its input, when it streamed, parsed into it. */
function _serverBlock(block: Extract<_Block, { kind: "server" }>): Record<string, unknown> {
  const raw = block.json.trim();
  if (raw === "") return block.block;
  try {
    return { ...block.block, input: JSON.parse(raw) };
  } catch {
    return block.block; // the input as the block started, rather than text the API refuses
  }
}

function _isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function _text(value: unknown): string {
  return typeof value === "string" ? value : "";
}
