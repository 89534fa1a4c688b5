/**
 * Compaction keeps each request inside the model's context window: older tool outputs are left
 * out of what is sent, then older turns are summarized by the model, while the history itself
 * is never changed. The loop does this on its own (its `compaction` option);
 * {@link compactConversation} does it on demand, and the token counters measure a request.
 *
 * @example
 * ```ts
 * import { compactConversation, loadTokenCounter, requestTokens } from "@x/agent/compaction";
 * import { scriptedModel } from "@x/agent/testing";
 *
 * const messages = [
 *   { role: "user" as const, content: "Plan the release." },
 *   { role: "assistant" as const, content: [{ type: "text" as const, text: "Tag, build, publish." }] },
 * ];
 * const model = scriptedModel([{ text: "The user plans a release: tag, build, publish." }]);
 * const { state, summarizedMessages } = await compactConversation({ model, messages });
 * if (summarizedMessages !== 2 || !state.summary.includes("release")) throw new Error("unexpected");
 *
 * const counter = await loadTokenCounter();
 * if (requestTokens({ messages }, counter) < 5) throw new Error("unexpected");
 * ```
 *
 * @module
 */

export {
  compactConversation,
  type CompactConversationOptions,
  type CompactConversationResult,
} from "./compact.ts";
export { type CompactionLimits, compactionLimits, type CompactionOptions } from "./ledger.ts";
export type { CompactionState } from "../compaction_state.ts";
export {
  loadTokenCounter,
  messageTokens,
  requestTokens,
  type TokenCounter,
  type TokenizedRequest,
  type TokenizerModule,
} from "./tokens.ts";
