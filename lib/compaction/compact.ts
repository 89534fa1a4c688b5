/**
 * Context compaction: keeps every request inside the model's context window. Before each model
 * call, when the request would pass the budget (`contextWindow − reserveTokens`), the outputs of
 * older tool calls (outside the last `keepRecentTokens`) are left out of what is sent; when that
 * does not bring the request under 3/4 of the budget, the older turns are summarized by the
 * model too, and the request becomes the summary followed by the recent turns. The history is
 * never changed: a {@link CompactionState} says what is sent in place of its beginning.
 *
 * @module
 */

import { type Compactor, createCompactor } from "./compactor.ts";
import type { CompactionState } from "../compaction_state.ts";
import { ContextLengthError } from "../errors.ts";
import type { AgentEvent } from "../events.ts";
import type { Message } from "../messages.ts";
import { callModel, type ModelCallResult } from "../model_call.ts";
import type { Model, ModelRequest, ToolDefinition } from "../model.ts";
import type { RetryOptions } from "../retry.ts";
import { addUsage, emptyUsage, type Usage } from "../usage.ts";

export {
  type CompactionReason,
  type Compactor,
  type CompactorOptions,
  createCompactor,
  type PreparedRequest,
} from "./compactor.ts";
export {
  COMPACTION_DEFAULTS,
  type CompactionLimits,
  compactionLimits,
  type CompactionOptions,
} from "./ledger.ts";

/**
 * One model call of a run, with its request kept inside the context window: compacts first
 * when needed, and when the provider still refuses the request as too long, compacts by force
 * and tries once more (a `retry` event voids what the refused attempt streamed). The usage
 * returned includes what summaries cost.
 *
 * @example
 * ```ts
 * import { callModelInContext, createCompactor } from "./compact.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const model = scriptedModel([{ text: "Hi!" }]);
 * const call = callModelInContext(model, {
 *   messages: [{ role: "user", content: "Hi" }],
 *   tools: [],
 *   signal: new AbortController().signal,
 * }, createCompactor({ model }));
 * let step = await call.next();
 * while (!step.done) step = await call.next();
 * if (step.value.content[0].type !== "text") throw new Error("unexpected");
 * ```
 */
export async function* callModelInContext(
  model: Model,
  request: ModelRequest & { signal: AbortSignal },
  compactor: Compactor | undefined,
  retry?: RetryOptions,
): AsyncGenerator<AgentEvent, ModelCallResult> {
  if (!compactor) return yield* callModel(model, request, retry);
  const usage = emptyUsage();
  const prepared = yield* compactor.prepare(request.messages, request.signal);
  addUsage(usage, prepared!.usage);
  let answer: ModelCallResult;
  try {
    answer = yield* callModel(model, { ...request, messages: prepared!.messages }, retry);
  } catch (error) {
    if (!(error instanceof ContextLengthError) || request.signal.aborted) throw error;
    const forced = yield* compactor.prepare(request.messages, request.signal, error);
    if (!forced) throw error;
    addUsage(usage, forced.usage);
    yield { type: "retry", attempt: 1, delayMs: 0, error: error.message };
    answer = yield* callModel(model, { ...request, messages: forced.messages }, retry);
  }
  if (!answer.aborted) compactor.observe(answer.usage);
  return { ...answer, usage: addUsage(usage, answer.usage) };
}

/** Options of {@link compactConversation}. */
export interface CompactConversationOptions {
  /** The model that writes the summary. */
  model: Model;
  /** The whole history. */
  messages: readonly Message[];
  /** The system prompt, counted in the token figures. */
  systemPrompt?: string;
  /** The tool definitions, counted in the token figures. */
  tools?: readonly ToolDefinition[];
  /** The summary in force, folded into the new one. */
  state?: CompactionState;
  /** What the summary should focus on. */
  focus?: string;
  /** Tokens of recent messages kept verbatim (default 0: everything is summarized). */
  keepRecentTokens?: number;
  /** The context window (default `model.info.contextWindow`, else 128,000). */
  contextWindow?: number;
  /** Cancels the summary. */
  signal?: AbortSignal;
  /** How failed calls are retried. */
  retry?: RetryOptions;
}

/** What {@link compactConversation} did. */
export interface CompactConversationResult {
  /** The new state, to pass as `compactionState` to the next run. */
  state: CompactionState;
  /** Estimated tokens of the request before. */
  tokensBefore: number;
  /** Estimated tokens of the request after. */
  tokensAfter: number;
  /** What the summary cost. */
  usage: Usage;
  /** Messages newly folded into the summary (0 when there was nothing to compact). */
  summarizedMessages: number;
}

/**
 * Compacts a conversation now, outside a run (the interactive `/compact [focus]`): summarizes
 * it, steered by `focus`, folding in the summary in force. Throws when the summary call fails.
 *
 * @example
 * ```ts
 * import { compactConversation } from "./compact.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const model = scriptedModel([{ text: "## Goal\nRename the parser" }]);
 * const { state } = await compactConversation({
 *   model,
 *   messages: [{ role: "user", content: "Rename the parser" }, {
 *     role: "assistant",
 *     content: [{ type: "text", text: "Done." }],
 *   }],
 *   focus: "naming",
 * });
 * if (state.replaces !== 2 || !state.summary.includes("Rename")) throw new Error("unexpected");
 * ```
 */
export async function compactConversation(
  options: CompactConversationOptions,
): Promise<CompactConversationResult> {
  const compactor = createCompactor({
    model: options.model,
    systemPrompt: options.systemPrompt,
    tools: options.tools,
    compaction: { contextWindow: options.contextWindow },
    compactionState: options.state,
    retry: options.retry,
  });
  return await compactor.compactNow(options.messages, {
    signal: options.signal ?? new AbortController().signal,
    focus: options.focus,
    keepRecentTokens: options.keepRecentTokens ?? 0,
  });
}
