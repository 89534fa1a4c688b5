/**
 * How a Chat Completions answer ended, as servers say it: the finish reason, the usage (read
 * the same whatever the server's habit of counting reasoning), and an error sent inside the
 * stream.
 *
 * @module
 */

import { ContextLengthError, ProviderError } from "../errors.ts";
import type { FinishReason } from "../model.ts";
import type { Usage } from "../usage.ts";
import { isContextLengthMessage } from "./http_errors.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/**
 * Maps a server's `finish_reason` onto the neutral {@link FinishReason}.
 *
 * @example
 * ```ts
 * import { mapFinishReason } from "./openai_finish.ts";
 * if (mapFinishReason("eos") !== "stop") throw new Error("unexpected");
 * ```
 */
export function mapFinishReason(reason: string | undefined): FinishReason {
  switch (reason) {
    case undefined:
    case "stop":
    case "eos":
    case "eos_token":
    case "end_turn":
    case "stop_sequence":
      return "stop";
    case "length":
    case "max_tokens":
    case "model_length":
      return "length";
    case "tool_calls":
    case "function_call":
    case "tool_use":
      return "tool_calls";
    case "content_filter":
    case "safety":
      return "content_filter";
    default:
      return "other";
  }
}

/**
 * Maps a Chat Completions `usage` object onto {@link Usage}, whose `outputTokens` always count
 * the reasoning. Most servers count reasoning inside `completion_tokens`; xAI leaves it out.
 * Which habit a server has is read from its numbers (a `total_tokens` of prompt, completion and
 * reasoning, or more reasoning than completion), so that a model reached through a router or a
 * proxy reads the same as at its own provider.
 *
 * @example
 * ```ts
 * import { mapUsage } from "./openai_finish.ts";
 * const usage = mapUsage({ prompt_tokens: 10, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 4 } });
 * if (usage.cacheReadTokens !== 4) throw new Error("unexpected");
 * // xAI: 1 token of answer, 290 of reasoning, counted apart.
 * const xai = mapUsage({
 *   prompt_tokens: 12,
 *   completion_tokens: 1,
 *   total_tokens: 303,
 *   completion_tokens_details: { reasoning_tokens: 290 },
 * });
 * if (xai.outputTokens !== 291) throw new Error("unexpected");
 * ```
 */
export function mapUsage(raw: Json): Usage {
  const prompt = _count(raw?.prompt_tokens);
  const completion = _count(raw?.completion_tokens);
  const reasoning = _count(raw?.completion_tokens_details?.reasoning_tokens);
  const total = _count(raw?.total_tokens);
  const reasoningApart = reasoning > 0 &&
    (reasoning > completion || (total > 0 && total === prompt + completion + reasoning));
  const usage: Usage = {
    inputTokens: prompt,
    outputTokens: reasoningApart ? completion + reasoning : completion,
  };
  const cached = _count(
    raw?.prompt_tokens_details?.cached_tokens ?? raw?.prompt_cache_hit_tokens ?? raw?.cached_tokens,
  );
  if (cached) usage.cacheReadTokens = cached;
  const written = _count(raw?.prompt_tokens_details?.cache_creation_input_tokens);
  if (written) usage.cacheWriteTokens = written;
  if (reasoning) usage.reasoningTokens = reasoning;
  return usage;
}

/**
 * The error for an `{"error": …}` object a server sent inside a stream (or in a JSON body).
 * Mid-stream errors are retryable unless they say the request itself is wrong; one that says
 * the conversation is too long is a {@link ContextLengthError}.
 *
 * @example
 * ```ts
 * import { streamError } from "./openai_finish.ts";
 * const error = streamError("test", { message: "Provider disconnected", code: 502 });
 * if (!error.retryable) throw new Error("unexpected");
 * ```
 */
export function streamError(provider: string, error: Json): ProviderError {
  const message = typeof error === "string"
    ? error
    : _text(error?.message) || JSON.stringify(error);
  if (isContextLengthMessage(message, _text(error?.code))) {
    return new ContextLengthError(
      `The conversation is too long for the model's context window (${provider}: ${message})`,
    );
  }
  const code = Number(error?.code ?? error?.status);
  const status = Number.isInteger(code) && code >= 100 && code < 600 ? code : undefined;
  const text = `${provider} sent an error in the stream: ${message}`;
  const retryable = status === undefined ? !/invalid|not supported|unsupported/i.test(message) : (
    status === 408 || status === 409 || status === 429 || status >= 500
  );
  return new ProviderError(text, { status, retryable });
}

function _text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function _count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}
