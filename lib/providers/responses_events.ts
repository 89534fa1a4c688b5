/**
 * Reads the OpenAI Responses stream events into model events: text and reasoning summary
 * deltas as they come; each output item once done, with what must go back to the server on
 * the next turn (the reasoning item as sent, the message's id, the function call's item id);
 * refusals as text with the finish reason `refusal`; the usage and why the answer ended from
 * the final response; `error` events and failed responses as provider errors.
 *
 * @module
 */

import type {
  Response as ResponsesResponse,
  ResponseStreamEvent,
} from "openai/resources/responses/responses";
import { ContextLengthError, ProviderError } from "../errors.ts";
import type { FinishReason, ModelEvent } from "../model.ts";
import type { Usage } from "../usage.ts";
import { isContextLengthMessage } from "./http_errors.ts";
import { toolCallOf } from "./tool_call.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/**
 * The stream events the reader takes something from. The others (`response.created`, parts
 * added and done, texts done, …) carry nothing it needs, and `response.created` and
 * `response.in_progress` carry the whole request's tools and instructions: a stream whose SSE
 * lines name their event need not parse them.
 */
export const RESPONSES_EVENTS_READ: ReadonlySet<string> = new Set([
  "response.output_text.delta",
  "response.refusal.delta",
  "response.reasoning_summary_text.delta",
  "response.reasoning_text.delta",
  "response.output_item.added",
  "response.function_call_arguments.delta",
  "response.function_call_arguments.done",
  "response.output_item.done",
  "response.completed",
  "response.incomplete",
  "response.failed",
  "error",
]);

/** What the reader gives back once the stream has ended. */
export interface ResponsesReaderEnd {
  /** The `finish` event, when the response ended (completed or incomplete). */
  events: ModelEvent[];
  /** Whether the response ended at all. */
  finished: boolean;
}

/** A reader of one streamed Responses answer. */
export interface ResponsesReader {
  /** The model events of one stream event; throws the error a failure event reports. */
  read(event: ResponseStreamEvent): ModelEvent[];
  /** The model events of a whole response object (a server that ignored `stream: true`). */
  readWhole(response: ResponsesResponse): ModelEvent[];
  /** The finish, once the stream has ended. */
  end(): ResponsesReaderEnd;
}

/**
 * A reader of one streamed answer: `read()` each stream event, then `end()` for the finish.
 * `origin` names the provider data put on the parts (see `responsesOrigin`).
 *
 * @example
 * ```ts
 * import { responsesReader } from "./responses_events.ts";
 * import type { ResponseStreamEvent } from "openai/resources/responses/responses";
 * const reader = responsesReader("openai", "openai-responses:openai:gpt-5");
 * const events = [
 *   { type: "response.output_text.delta", delta: "Hi" },
 *   { type: "response.completed", response: { status: "completed", usage: { input_tokens: 3, output_tokens: 1 } } },
 * ] as unknown as ResponseStreamEvent[];
 * const [delta] = reader.read(events[0]);
 * reader.read(events[1]);
 * const [finish] = reader.end().events;
 * if (delta.type !== "text_delta" || finish.type !== "finish" || finish.reason !== "stop") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function responsesReader(provider: string, origin: string): ResponsesReader {
  const calls = new Map<string, { name: string; callId: string; args: string }>();
  const texted = new Set<string>(); // the message items that streamed text
  let summary: { item: string; index: number } | undefined;
  let hasCalls = false;
  let refused = false;
  let finish: { reason: FinishReason; usage: Usage } | undefined;

  const reasoningDelta = (event: Json): ModelEvent[] => {
    const text = _text(event.delta);
    if (text === "") return [];
    const at = { item: _text(event.item_id), index: Number(event.summary_index ?? 0) };
    // A paragraph break between two parts of one item's summary.
    const next = summary !== undefined && summary.item === at.item && summary.index !== at.index;
    summary = at;
    return [{ type: "reasoning_delta", text: next ? `\n\n${text}` : text }];
  };

  const itemDone = (item: Json): ModelEvent[] => {
    if (!item || typeof item !== "object") return [];
    switch (item.type) {
      case "reasoning": {
        // A summary that was not streamed (a whole response) is read from the item.
        const streamed = summary?.item === _text(item.id);
        const text = streamed ? "" : _summaryText(item);
        summary = undefined;
        const end: ModelEvent = { type: "reasoning_end", origin, extra: { item } };
        return text === "" ? [end] : [{ type: "reasoning_delta", text }, end];
      }
      case "message": {
        // Only a message with text makes a part to carry the id: an empty one gives nothing.
        if (!texted.has(_text(item.id))) return [];
        const extra: Record<string, unknown> = { id: item.id };
        if (typeof item.phase === "string") extra.phase = item.phase;
        return [{ type: "text_end", origin, extra }];
      }
      case "function_call": {
        const streamed = calls.get(_text(item.id));
        const name = _text(item.name) || streamed?.name || "";
        if (name === "") return [];
        hasCalls = true;
        const id = _text(item.call_id) || streamed?.callId || _text(item.id);
        const args = typeof item.arguments === "string" ? item.arguments : streamed?.args ?? "";
        const call = toolCallOf(id, name, args);
        call.origin = origin;
        if (typeof item.id === "string") call.extra = { itemId: item.id };
        return [{ type: "tool_call", call }];
      }
      default:
        return [];
    }
  };

  const ended = (response: Json): void => {
    const status = _text(response?.status);
    const reason: FinishReason = hasCalls
      ? "tool_calls"
      : refused
      ? "refusal"
      : status === "incomplete"
      ? _incompleteReason(response?.incomplete_details?.reason)
      : "stop";
    finish = { reason, usage: mapResponsesUsage(response?.usage) };
  };

  const read = (raw: ResponseStreamEvent): ModelEvent[] => {
    const event = raw as Json;
    if (!event || typeof event !== "object") return [];
    switch (event.type) {
      case "response.output_text.delta":
      case "response.refusal.delta":
        if (event.type === "response.refusal.delta") refused = true;
        if (_text(event.delta) === "") return [];
        texted.add(_text(event.item_id));
        return [{ type: "text_delta", text: event.delta }];
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        return reasoningDelta(event);
      case "response.output_item.added":
        if (event.item?.type === "function_call") {
          calls.set(_text(event.item.id), {
            name: _text(event.item.name),
            callId: _text(event.item.call_id),
            args: _text(event.item.arguments),
          });
        }
        return [];
      case "response.function_call_arguments.delta": {
        const call = calls.get(_text(event.item_id));
        if (call) call.args += _text(event.delta);
        return [];
      }
      case "response.function_call_arguments.done": {
        const call = calls.get(_text(event.item_id));
        if (call && typeof event.arguments === "string") call.args = event.arguments;
        return [];
      }
      case "response.output_item.done":
        return itemDone(event.item);
      case "response.completed":
      case "response.incomplete":
        ended(event.response);
        return [];
      case "response.failed":
        throw responsesError(provider, event.response?.error ?? undefined);
      case "error":
        throw responsesError(provider, event.error ?? { code: event.code, message: event.message });
      default:
        return [];
    }
  };

  const readWhole = (response: ResponsesResponse): ModelEvent[] => {
    const whole = response as Json;
    if (whole?.error && whole.status !== "failed") throw responsesError(provider, whole.error);
    const events: ModelEvent[] = [];
    for (const item of Array.isArray(whole?.output) ? whole.output : []) {
      if (item?.type === "message" && Array.isArray(item.content)) {
        for (const part of item.content) {
          const item_id = item.id;
          if (part?.type === "output_text") {
            const type = "response.output_text.delta";
            events.push(...read({ type, item_id, delta: part.text } as Json));
          }
          if (part?.type === "refusal") {
            const type = "response.refusal.delta";
            events.push(...read({ type, item_id, delta: part.refusal } as Json));
          }
        }
      }
      events.push(...itemDone(item));
    }
    const status = _text(whole?.status);
    if (status === "failed") throw responsesError(provider, whole.error ?? undefined);
    if (status === "completed" || status === "incomplete") ended(whole);
    return events;
  };

  const end = (): ResponsesReaderEnd => ({
    events: finish ? [{ type: "finish", ...finish }] : [],
    finished: finish !== undefined,
  });

  return { read, readWhole, end };
}

/**
 * Maps a Responses `usage` object onto {@link Usage}: output tokens include the reasoning
 * tokens, input tokens the cached ones.
 *
 * @example
 * ```ts
 * import { mapResponsesUsage } from "./responses_events.ts";
 * const usage = mapResponsesUsage({
 *   input_tokens: 100, input_tokens_details: { cached_tokens: 40 },
 *   output_tokens: 30, output_tokens_details: { reasoning_tokens: 20 },
 * });
 * if (usage.cacheReadTokens !== 40 || usage.reasoningTokens !== 20 || usage.outputTokens !== 30) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function mapResponsesUsage(raw: Json): Usage {
  const usage: Usage = {
    inputTokens: _count(raw?.input_tokens),
    outputTokens: _count(raw?.output_tokens),
  };
  const cached = _count(raw?.input_tokens_details?.cached_tokens);
  if (cached) usage.cacheReadTokens = cached;
  const reasoning = _count(raw?.output_tokens_details?.reasoning_tokens);
  if (reasoning) usage.reasoningTokens = reasoning;
  return usage;
}

/** Error codes of a failed response worth another try. */
const _RETRYABLE = /^(server_error|rate_limit_exceeded|overloaded|server_is_overloaded|slow_down)$/;

/**
 * The error for an `error` event or a failed response (`{ code, message }`): one about the
 * context window is a {@link ContextLengthError}; a server error, a rate limit or an overload
 * is retryable; anything else (an invalid prompt, a policy refusal) is not. A failure that says
 * nothing is retryable.
 *
 * @example
 * ```ts
 * import { responsesError } from "./responses_events.ts";
 * if (!responsesError("openai", { code: "server_error", message: "oops" }).retryable) {
 *   throw new Error("unexpected");
 * }
 * if (responsesError("openai", { code: "invalid_prompt", message: "flagged" }).retryable) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function responsesError(provider: string, error: Json): ProviderError {
  const message = _text(error?.message) || (error ? JSON.stringify(error) : "");
  const code = _text(error?.code) || _text(error?.type);
  if (isContextLengthMessage(message, code)) {
    return new ContextLengthError(
      `The conversation is too long for the model's context window (${provider}: ${message})`,
    );
  }
  if (message === "") {
    return new ProviderError(`${provider} reported that the response failed`, { retryable: true });
  }
  const retryable = code === "" ? !/invalid|not supported|unsupported/i.test(message) : (
    _RETRYABLE.test(code)
  );
  const text = `${provider} sent an error in the stream: ${message}${code ? ` (${code})` : ""}`;
  return new ProviderError(text, { retryable });
}

/** The text of a reasoning item: its summary's parts (else its full text), a paragraph apart. */
function _summaryText(item: Json): string {
  const parts = Array.isArray(item.summary) && item.summary.length > 0
    ? item.summary
    : Array.isArray(item.content)
    ? item.content
    : [];
  return parts.map((part: Json) => _text(part?.text)).filter((text: string) => text !== "")
    .join("\n\n");
}

function _incompleteReason(reason: unknown): FinishReason {
  switch (reason) {
    case "max_output_tokens":
      return "length";
    case "content_filter":
      return "content_filter";
    default:
      return "other";
  }
}

function _text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function _count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}
