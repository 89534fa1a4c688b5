/**
 * One model call as the loop sees it: streamed deltas, retries with backoff, and the assembled
 * assistant message.
 *
 * @module
 */

import { abortable, sleep } from "./async.ts";
import { ProviderError } from "./errors.ts";
import type { AgentEvent } from "./events.ts";
import type { AssistantPart, ReasoningPart, TextPart } from "./messages.ts";
import type { FinishReason, Model, ModelEvent, ModelRequest } from "./model.ts";
import { isRetryable, RETRY_DEFAULTS, retryDelay, type RetryOptions } from "./retry.ts";
import type { Usage } from "./usage.ts";

/** The outcome of a model call. */
export interface ModelCallResult {
  /** The answer's parts, in the order they came. */
  content: AssistantPart[];
  /** Why the answer ended; absent when the call was aborted. */
  finishReason?: FinishReason;
  /** Tokens the successful attempt used. */
  usage: Usage;
  /** Whether the signal aborted the call; `content` then holds what arrived before. */
  aborted: boolean;
}

/** The events a model call streams to the run. */
export type ModelCallEvent = Extract<
  AgentEvent,
  { type: "text_delta" | "reasoning_delta" | "retry" }
>;

/**
 * Calls the model, streaming its deltas, and tries again after retryable failures. Deltas of a
 * failed attempt were already streamed; the `retry` event that follows voids them, and the
 * returned content holds only the successful attempt's parts.
 *
 * @example
 * ```ts
 * import { callModel } from "./model_call.ts";
 * import { scriptedModel } from "./testing/scripted_model.ts";
 * const call = callModel(scriptedModel([{ text: "hi" }]), {
 *   messages: [],
 *   tools: [],
 *   signal: new AbortController().signal,
 * });
 * let step = await call.next();
 * while (!step.done) step = await call.next();
 * if (step.value.content[0].type !== "text") throw new Error("unexpected");
 * ```
 */
export async function* callModel(
  model: Model,
  request: ModelRequest & { signal: AbortSignal },
  retry: RetryOptions = {},
): AsyncGenerator<ModelCallEvent, ModelCallResult> {
  const maxRetries = retry.maxRetries ?? RETRY_DEFAULTS.maxRetries;
  let emptyRetried = false;
  for (let attempt = 0;; attempt++) {
    const parts = new _Parts();
    let finish: { reason: FinishReason; usage: Usage } | undefined;
    try {
      for await (const event of abortable(model.stream(request), request.signal)) {
        switch (event.type) {
          case "text_delta":
            if (event.text === "") break;
            parts.text(event.text);
            yield event;
            break;
          case "reasoning_delta":
            if (event.text === "") break;
            parts.reasoning(event.text);
            yield event;
            break;
          case "reasoning_end":
            parts.endReasoning(event);
            break;
          case "text_end":
            parts.endText(event);
            break;
          case "tool_call":
            parts.toolCall(event.call);
            break;
          case "finish":
            finish = { reason: event.reason, usage: event.usage };
            break;
        }
      }
      if (request.signal.aborted) {
        return { content: parts.done(), usage: { inputTokens: 0, outputTokens: 0 }, aborted: true };
      }
      if (!finish) {
        throw new ProviderError(`${model.provider} ended the answer before it finished`, {
          retryable: true,
        });
      }
      const content = parts.done();
      // Only an answer that claims to be complete yet holds nothing is treated as a failure;
      // a refusal, a cut or a pause says why it is empty.
      const claimsDone = finish.reason === "stop" || finish.reason === "other";
      if (claimsDone && !content.some(_isSubstantial)) {
        // Nothing to show and nothing to do: worth one more try, then a clear failure.
        const retryable = !emptyRetried;
        emptyRetried = true;
        throw new ProviderError(`${model.provider}/${model.id} returned an empty answer`, {
          retryable,
        });
      }
      return { content, finishReason: finish.reason, usage: finish.usage, aborted: false };
    } catch (error) {
      if (request.signal.aborted) {
        return { content: parts.done(), usage: { inputTokens: 0, outputTokens: 0 }, aborted: true };
      }
      if (!isRetryable(error) || attempt >= maxRetries) throw error;
      const delayMs = retryDelay(attempt + 1, error, retry);
      yield { type: "retry", attempt: attempt + 1, delayMs, error: error.message };
      try {
        await sleep(delayMs, request.signal);
      } catch {
        return { content: [], usage: { inputTokens: 0, outputTokens: 0 }, aborted: true };
      }
    }
  }
}

type _PartEnd = Extract<ModelEvent, { type: "text_end" }>;
type _ReasoningEnd = Extract<ModelEvent, { type: "reasoning_end" }>;

/** Puts a block's provider data on its part. */
function _mark(part: TextPart | ReasoningPart, end: _PartEnd | _ReasoningEnd): void {
  if (end.origin !== undefined) part.origin = end.origin;
  if (end.extra !== undefined) part.extra = end.extra;
}

/**
 * Whether a part gives the caller something: visible text, a tool call, or a block of the
 * answer without text that the provider made and needs back (e.g. a server tool's use or result).
 */
function _isSubstantial(part: AssistantPart): boolean {
  if (part.type === "tool_call") return true;
  return part.type === "text" && (part.text.trim() !== "" || part.extra !== undefined);
}

/** Assembles streamed deltas into message parts, merging consecutive deltas of one kind. */
class _Parts {
  #parts: AssistantPart[] = [];
  #pieces: string[] = [];
  #kind: "text" | "reasoning" | undefined;

  text(text: string): void {
    this.#piece("text", text);
  }

  reasoning(text: string): void {
    this.#piece("reasoning", text);
  }

  endReasoning(end: _ReasoningEnd): void {
    if (this.#kind !== "reasoning") {
      this.#flush();
      this.#kind = "reasoning"; // a block without deltas, e.g. redacted reasoning
    }
    const part = this.#flush() as ReasoningPart;
    if (end.signature !== undefined) part.signature = end.signature;
    if (end.redacted !== undefined) part.redacted = end.redacted;
    _mark(part, end);
  }

  /**
   * Ends the text block being assembled. A block without text is kept only when it carries
   * provider data (a block the provider made and needs back), as a text part without text.
   */
  endText(end: _PartEnd): void {
    if (this.#kind !== "text") {
      if (end.extra === undefined) return;
      this.#flush();
      this.#kind = "text";
    }
    _mark(this.#flush() as TextPart, end);
  }

  toolCall(call: AssistantPart): void {
    this.#flush();
    this.#parts.push(call);
  }

  done(): AssistantPart[] {
    this.#flush();
    return this.#parts;
  }

  #piece(kind: "text" | "reasoning", text: string): void {
    if (this.#kind !== kind) this.#flush();
    this.#kind = kind;
    this.#pieces.push(text);
  }

  #flush(): AssistantPart | undefined {
    const kind = this.#kind;
    if (kind === undefined) return undefined;
    const text = this.#pieces.join("");
    this.#pieces = [];
    this.#kind = undefined;
    const part: AssistantPart = kind === "text"
      ? { type: "text", text }
      : { type: "reasoning", text };
    this.#parts.push(part);
    return part;
  }
}
