/**
 * The token budget of requests ({@link compactionLimits}) and the accounting of a conversation
 * as it is sent: running sums over the history (in characters always, in tokens once a precise
 * figure is needed), so that the size of any request made of it (a summary, then the messages
 * after it, with older tool outputs left out) is known without going over the history again.
 *
 * @module
 */

import { summaryMessage } from "./summary.ts";
import type { CompactionState } from "../compaction_state.ts";
import type { Message, ToolMessage, UserMessage } from "../messages.ts";
import type { Model, ToolDefinition } from "../model.ts";
import {
  countTokensInSlices,
  ESTIMATE_COUNTER,
  MESSAGE_OVERHEAD_TOKENS,
  messageChars,
  messageTokens,
  messageTokensInSlices,
  type TokenCounter,
  TOOL_CALL_OVERHEAD_TOKENS,
  toolTokens,
} from "./tokens.ts";

/** How compaction keeps requests inside the context window. */
export interface CompactionOptions {
  /** The context window in tokens (default `model.info.contextWindow`, else 128,000). */
  contextWindow?: number;
  /**
   * Tokens kept free for the answer (default the output limit, the run's `maxOutputTokens`
   * or else the model's, capped at 20% of the window; at most half the window).
   */
  reserveTokens?: number;
  /**
   * Tokens of the latest messages that are never summarized and keep their tool outputs,
   * unless nothing else makes the request fit (default 30% of the window).
   */
  keepRecentTokens?: number;
  /** The model that writes summaries (default the run's). */
  model?: Model;
}

/** The defaults of {@link CompactionOptions}. */
export const COMPACTION_DEFAULTS: {
  readonly contextWindow: number;
  readonly reserveShare: number;
  readonly keepRecentShare: number;
} = { contextWindow: 128_000, reserveShare: 0.2, keepRecentShare: 0.3 };

/** The token limits compaction works to. */
export interface CompactionLimits {
  /** The context window. */
  contextWindow: number;
  /** Tokens kept free for the answer. */
  reserveTokens: number;
  /** The most tokens a request may hold before it is compacted: window − reserve. */
  budget: number;
  /** Tokens of recent messages kept verbatim. */
  keepRecentTokens: number;
}

/**
 * The limits for a model, with the options' overrides (see {@link CompactionOptions}).
 *
 * @example
 * ```ts
 * import { compactionLimits } from "./compact.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const limits = compactionLimits(scriptedModel([]), { contextWindow: 10_000 });
 * if (limits.budget !== 8_000 || limits.keepRecentTokens !== 3_000) throw new Error("unexpected");
 * ```
 */
export function compactionLimits(
  model: Model,
  options: CompactionOptions = {},
  maxOutputTokens?: number,
): CompactionLimits {
  const contextWindow = options.contextWindow ?? model.info?.contextWindow ??
    COMPACTION_DEFAULTS.contextWindow;
  const { reserveTokens: reserve, keepRecentTokens: keep } = options;
  const given = { contextWindow, reserveTokens: reserve, keepRecentTokens: keep };
  for (const [name, value] of Object.entries(given)) {
    if (value !== undefined && !(Number.isInteger(value) && value >= 0)) {
      throw new RangeError(`compaction.${name} must be a whole number ≥ 0, got ${value}`);
    }
  }
  if (contextWindow < 1) throw new RangeError("compaction.contextWindow must be at least 1");
  const output = maxOutputTokens ?? model.info?.maxOutputTokens ?? Infinity;
  const reserveTokens = Math.min(
    options.reserveTokens ??
      Math.floor(Math.min(output, contextWindow * COMPACTION_DEFAULTS.reserveShare)),
    Math.floor(contextWindow / 2),
  );
  const budget = contextWindow - reserveTokens;
  const keepRecentTokens = options.keepRecentTokens ??
    Math.floor(contextWindow * COMPACTION_DEFAULTS.keepRecentShare);
  return { contextWindow, reserveTokens, budget, keepRecentTokens };
}

/** What is sent of a history: the summary in force, and where tool outputs stop being left out. */
export interface SentView {
  /** The summary standing in for the first `state.replaces` messages. */
  readonly state: CompactionState | undefined;
  /** The outputs of tool results before this index are left out. */
  readonly dropBefore: number;
}

/** The size the provider reported for a request: the view and the history length it had. */
export interface ReportedSize {
  /** What was sent. */
  readonly view: SentView;
  /** How many messages of the history it covered. */
  readonly length: number;
  /** The input tokens the provider counted. */
  readonly inputTokens: number;
}

/** Tool outputs at most this long are never left out: the note would save little. */
export const DROP_MIN_CHARS = 500;

/**
 * The sizes of the requests made of one growing history. The history may only grow between
 * calls; another history starts the sums over.
 *
 * @example
 * ```ts
 * import { ContextLedger } from "./ledger.ts";
 * const ledger = new ContextLedger(undefined, []);
 * const history = [{ role: "user" as const, content: "Hello there" }];
 * await ledger.count(history);
 * const view = { state: undefined, dropBefore: 0 };
 * if (ledger.estimate(view, 1) !== 2 + 4) throw new Error("unexpected");
 * if (ledger.messages(history, view) !== history) throw new Error("sent as it is");
 * ```
 */
export class ContextLedger {
  readonly #system: string | undefined;
  readonly #tools: readonly ToolDefinition[];
  readonly #counter: TokenCounter = ESTIMATE_COUNTER;
  #fixedChars: number | undefined;
  #fixedCounted = false;
  #fixedTokens = 0;
  // Running sums over the history: characters; tokens as is; tokens with the output left
  // out; outputs that can be left out.
  #chars = [0];
  #full = [0];
  #dropped = [0];
  #droppable = [0];

  /** Creates the ledger of requests with this system prompt and these tools. */
  constructor(system: string | undefined, tools: readonly ToolDefinition[]) {
    this.#system = system;
    this.#tools = tools;
  }

  /** Adds the characters of messages added since the last call; false when it started over. */
  sync(history: readonly Message[]): boolean {
    let same = true;
    if (history.length < this.#chars.length - 1) {
      this.#chars = [0];
      this.#full = [0];
      this.#dropped = [0];
      this.#droppable = [0];
      same = false;
    }
    for (let i = this.#chars.length - 1; i < history.length; i++) {
      this.#chars.push(this.#chars[i] + messageChars(history[i]));
    }
    return same;
  }

  /**
   * Counts the tokens of the messages not counted yet, a long text in slices so that other
   * work goes on meanwhile. Returns false, leaving the rest uncounted, when `signal` aborts.
   */
  async count(history: readonly Message[], signal?: AbortSignal): Promise<boolean> {
    this.sync(history);
    const counter = this.#counter;
    try {
      if (!this.#fixedCounted) {
        const system = this.#system;
        this.#fixedTokens = toolTokens(this.#tools, counter) +
          (system
            ? await countTokensInSlices(system, counter, signal) + MESSAGE_OVERHEAD_TOKENS
            : 0);
        this.#fixedCounted = true;
      }
      for (let i = this.#full.length - 1; i < history.length; i++) {
        const message = history[i];
        const tokens = await messageTokensInSlices(message, counter, signal);
        const droppable = isDroppable(message);
        this.#full.push(this.#full[i] + tokens);
        this.#dropped.push(
          this.#dropped[i] + (droppable ? messageTokens(droppedOutput(message), counter) : tokens),
        );
        this.#droppable.push(this.#droppable[i] + (droppable ? 1 : 0));
      }
    } catch (error) {
      if (signal?.aborted) return false;
      throw error;
    }
    return true;
  }

  /** The token counter. */
  get counter(): TokenCounter {
    return this.#counter;
  }

  /**
   * Whether the request for the first `n` messages surely holds at most `budget` tokens,
   * judged without the tokenizer: from the reported size plus what was added since, or from
   * the characters, at two tokens per character at most (true of BPE tokenizers but for rare
   * characters; a refusal by the provider covers the rest).
   */
  surelyFits(view: SentView, n: number, budget: number, reported?: ReportedSize): boolean {
    const perMessage = MESSAGE_OVERHEAD_TOKENS + TOOL_CALL_OVERHEAD_TOKENS;
    if (reported && reported.view === view && reported.length <= n) {
      const added = 2 * (this.#chars[n] - this.#chars[reported.length]) +
        perMessage * (n - reported.length);
      return reported.inputTokens + added <= budget;
    }
    this.#fixedChars ??= (this.#system?.length ?? 0) + JSON.stringify(this.#tools).length;
    const from = view.state?.replaces ?? 0;
    const summary = view.state ? messageChars(summaryMessageOf(view.state)) : 0;
    const chars = this.#fixedChars + summary + this.#chars[n] - this.#chars[from];
    return 2 * chars + perMessage * (n - from + 2) <= budget;
  }

  /**
   * The estimated tokens of the request for the first `n` messages (counted first): the
   * tokenizer's count, scaled by how the provider's count of the `reported` request compared.
   */
  estimate(view: SentView, n: number, reported?: ReportedSize): number {
    const scale = reported
      ? Math.min(2, Math.max(0.5, reported.inputTokens / this.#raw(reported.view, reported.length)))
      : 1;
    return Math.ceil(this.#raw(view, n) * scale);
  }

  /** Tokens of the messages from `i` to `n`, as they are. */
  tokensBetween(i: number, n: number): number {
    return this.#full[n] - this.#full[i];
  }

  /** The first index from `from` on where the messages up to `n` hold at most `keep` tokens. */
  recentStart(n: number, from: number, keep: number): number {
    let low = from;
    let high = n;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.#full[n] - this.#full[middle] <= keep) high = middle;
      else low = middle + 1;
    }
    return low;
  }

  /** Tool outputs the view leaves out of the first `n` messages. */
  droppedOutputs(view: SentView, n: number): number {
    const from = view.state?.replaces ?? 0;
    return this.#droppable[Math.max(from, Math.min(view.dropBefore, n))] - this.#droppable[from];
  }

  /** The messages sent for `history` in this view. */
  messages(history: readonly Message[], view: SentView): readonly Message[] {
    const { state, dropBefore } = view;
    if (!state && dropBefore === 0) return history;
    const messages: Message[] = state ? [summaryMessageOf(state)] : [];
    for (let i = state?.replaces ?? 0; i < history.length; i++) {
      const message = history[i];
      messages.push(i < dropBefore && isDroppable(message) ? droppedOutput(message) : message);
    }
    return messages;
  }

  #raw(view: SentView, n: number): number {
    const from = view.state?.replaces ?? 0;
    const drop = Math.max(from, Math.min(view.dropBefore, n));
    const summary = view.state ? messageTokens(summaryMessageOf(view.state), this.#counter) : 0;
    return this.#fixedTokens + summary + this.#dropped[drop] - this.#dropped[from] +
      this.#full[n] - this.#full[drop];
  }
}

/**
 * Whether compaction may leave a message's content out: a tool result longer than
 * {@link DROP_MIN_CHARS}.
 *
 * @example
 * ```ts
 * import { isDroppable } from "./ledger.ts";
 * const result = { role: "tool" as const, toolCallId: "1", name: "read", isError: false };
 * if (isDroppable({ ...result, content: "short" })) throw new Error("unexpected");
 * if (!isDroppable({ ...result, content: "x".repeat(501) })) throw new Error("unexpected");
 * ```
 */
export function isDroppable(message: Message): message is ToolMessage {
  return message.role === "tool" && message.content.length > DROP_MIN_CHARS;
}

const _dropped = new WeakMap<ToolMessage, ToolMessage>();

/**
 * A tool result with its output left out and a note saying so (the same object for the same
 * result).
 *
 * @example
 * ```ts
 * import { droppedOutput } from "./ledger.ts";
 * const note = droppedOutput({
 *   role: "tool", toolCallId: "1", name: "read", content: "x".repeat(12_345), isError: false,
 * });
 * if (!note.content.startsWith("[output of read dropped to save context: 12,345 characters")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function droppedOutput(message: ToolMessage): ToolMessage {
  let dropped = _dropped.get(message);
  if (!dropped) {
    const size = message.content.length.toLocaleString("en-US");
    dropped = {
      ...message,
      content: `[output of ${message.name} dropped to save context: ${size} characters; call ` +
        `the tool again if you need it]`,
    };
    _dropped.set(message, dropped);
  }
  return dropped;
}

const _summaries = new WeakMap<CompactionState, UserMessage>();

/**
 * The message carrying a state's summary (the same object for the same state).
 *
 * @example
 * ```ts
 * import { summaryMessageOf } from "./ledger.ts";
 * const state = { summary: "## Goal\nShip it", replaces: 4 };
 * if (summaryMessageOf(state) !== summaryMessageOf(state)) throw new Error("unexpected");
 * ```
 */
export function summaryMessageOf(state: CompactionState): UserMessage {
  let message = _summaries.get(state);
  if (!message) _summaries.set(state, message = summaryMessage(state.summary));
  return message;
}
