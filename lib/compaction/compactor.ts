/**
 * The compactor of a run: decides, before each model call, whether to leave old tool outputs
 * out of the request, to summarize older turns, or both, and keeps the state that results.
 *
 * @module
 */

import type { CompactConversationResult } from "./compact.ts";
import { summarize } from "./summary.ts";
import type { CompactionState } from "../compaction_state.ts";
import {
  type CompactionLimits,
  compactionLimits,
  type CompactionOptions,
  ContextLedger,
  type ReportedSize,
  type SentView,
} from "./ledger.ts";
import { ContextLengthError, describeError } from "../errors.ts";
import type { AgentEvent } from "../events.ts";
import type { Message } from "../messages.ts";
import type { Model, ToolDefinition } from "../model.ts";
import type { RetryOptions } from "../retry.ts";
import { addUsage, emptyUsage, type Usage } from "../usage.ts";

/** Why a compaction happened: the request grew too large, the user asked, the provider refused. */
export type CompactionReason = "auto" | "manual" | "overflow";

/** A request ready to send, and the tokens spent on summaries to make it. */
export interface PreparedRequest {
  /** The messages to send. */
  messages: readonly Message[];
  /** What summarizing cost (zero when nothing was summarized). */
  usage: Usage;
}

/** Keeps one run's requests inside the context window. */
export interface Compactor {
  /** The summary in force, if any. */
  readonly state: CompactionState | undefined;
  /**
   * The messages to send for `history`, compacting first when the request would not fit.
   * With `overflow` (the provider refused the request as too long), compacts by force and
   * returns undefined when nothing could be made smaller.
   */
  prepare(
    history: readonly Message[],
    signal: AbortSignal,
    overflow?: ContextLengthError,
  ): AsyncGenerator<AgentEvent, PreparedRequest | undefined>;
  /** Takes the usage the provider reported for the request last prepared. */
  observe(usage: Usage): void;
  /**
   * Summarizes `history` now (the interactive `/compact`), keeping the last `keepRecentTokens`
   * verbatim; throws when the summary call fails.
   */
  compactNow(history: readonly Message[], options: {
    signal: AbortSignal;
    focus?: string;
    keepRecentTokens: number;
  }): Promise<CompactConversationResult>;
}

/** Options of {@link createCompactor}. */
export interface CompactorOptions {
  /** The run's model. */
  model: Model;
  /** The system prompt sent with every request. */
  systemPrompt?: string;
  /** The tools offered with every request. */
  tools?: readonly ToolDefinition[];
  /** The limits; `false` only applies `compactionState`, never compacting. */
  compaction?: CompactionOptions | false;
  /** The summary in force from an earlier run; ignored when it does not fit the history. */
  compactionState?: CompactionState;
  /** The output tokens each request asks for. */
  maxOutputTokens?: number;
  /** How failed summary calls are retried. */
  retry?: RetryOptions;
}

/**
 * Creates the compactor of a run.
 *
 * @example
 * ```ts
 * import { createCompactor } from "./compactor.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const compactor = createCompactor({ model: scriptedModel([]) });
 * const history = [{ role: "user" as const, content: "Hi" }];
 * const prepare = compactor.prepare(history, new AbortController().signal);
 * let step = await prepare.next();
 * while (!step.done) step = await prepare.next();
 * if (step.value?.messages !== history) throw new Error("a small request is sent as it is");
 * ```
 */
export function createCompactor(options: CompactorOptions): Compactor {
  return new _Compactor(options);
}

/** Dropping old tool outputs is enough when the request is then at most this share of the budget. */
const DROP_ENOUGH_SHARE = 0.75;

const _NO_SUMMARY: SentView = { state: undefined, dropBefore: 0 };

class _Compactor implements Compactor {
  readonly #model: Model;
  readonly #summarizer: Model;
  readonly #auto: boolean;
  readonly #options: CompactionOptions;
  readonly #maxOutputTokens: number | undefined;
  readonly #retry: RetryOptions | undefined;
  readonly #ledger: ContextLedger;
  #limits: CompactionLimits;
  /** What is sent; replaced, never changed, so that a reported size names its request. */
  #view: SentView;
  #checked = false;
  #reported: ReportedSize | undefined;
  #sentLength = 0;
  /** Why a summary of this run could not be made; no other is tried then but by force. */
  #summaryFailure: unknown;

  constructor(options: CompactorOptions) {
    this.#model = options.model;
    this.#auto = options.compaction !== false;
    this.#options = options.compaction || {};
    this.#summarizer = this.#options.model ?? options.model;
    this.#maxOutputTokens = options.maxOutputTokens;
    this.#retry = options.retry;
    this.#ledger = new ContextLedger(options.systemPrompt, options.tools ?? []);
    this.#limits = compactionLimits(options.model, this.#options, options.maxOutputTokens);
    const state = options.compactionState;
    this.#view = state && state.summary !== "" && state.replaces > 0
      ? { state, dropBefore: state.replaces }
      : _NO_SUMMARY;
  }

  get state(): CompactionState | undefined {
    return this.#view.state;
  }

  async *prepare(
    history: readonly Message[],
    signal: AbortSignal,
    overflow?: ContextLengthError,
  ): AsyncGenerator<AgentEvent, PreparedRequest | undefined> {
    this.#sync(history);
    const usage = emptyUsage();
    const n = this.#sentLength = history.length;
    const ledger = this.#ledger;
    // Cancelled while counting: the model call that follows ends the run as aborted.
    const cancelled = () => ({ messages: ledger.messages(history, this.#view), usage });
    if (overflow) {
      if (!this.#auto) return undefined;
      if (!await ledger.count(history, signal)) return cancelled();
      // The refused request is an upper bound of the window.
      const sent = ledger.estimate(this.#view, n, this.#reported);
      if (sent < this.#limits.contextWindow) {
        const options = { ...this.#options, contextWindow: sent };
        this.#limits = compactionLimits(this.#model, options, this.#maxOutputTokens);
      }
    } else {
      const { budget } = this.#limits;
      if (!this.#auto || ledger.surelyFits(this.#view, n, budget, this.#reported)) {
        return { messages: ledger.messages(history, this.#view), usage };
      }
      if (!await ledger.count(history, signal)) return cancelled();
      if (ledger.estimate(this.#view, n, this.#reported) <= budget) {
        return { messages: ledger.messages(history, this.#view), usage };
      }
    }
    const done = yield* this.#compact(history, overflow ? "overflow" : "auto", signal, usage);
    if (overflow && !done) return undefined;
    return { messages: ledger.messages(history, this.#view), usage };
  }

  observe(usage: Usage): void {
    if (usage.inputTokens <= 0) return;
    this.#reported = { view: this.#view, length: this.#sentLength, inputTokens: usage.inputTokens };
  }

  async compactNow(history: readonly Message[], options: {
    signal: AbortSignal;
    focus?: string;
    keepRecentTokens: number;
  }): Promise<CompactConversationResult> {
    const { signal, focus, keepRecentTokens } = options;
    this.#sync(history);
    if (!await this.#ledger.count(history, signal)) signal.throwIfAborted();
    const usage = emptyUsage();
    const tokensBefore = this.#estimate(history.length);
    const from = this.state?.replaces ?? 0;
    const events = this.#compact(history, "manual", signal, usage, { focus, keepRecentTokens });
    let step = await events.next();
    while (!step.done) step = await events.next();
    return {
      state: this.state ?? { summary: "", replaces: 0 },
      tokensBefore,
      tokensAfter: this.#estimate(history.length),
      usage,
      summarizedMessages: (this.state?.replaces ?? 0) - from,
    };
  }

  /**
   * Drops old tool outputs, then summarizes the older turns if that is not enough (always,
   * when forced), then drops the recent turns' outputs too if still needed. Returns whether
   * the request changed: it became smaller, or a summary was made.
   */
  async *#compact(
    history: readonly Message[],
    reason: CompactionReason,
    signal: AbortSignal,
    usage: Usage,
    manual?: { focus?: string; keepRecentTokens: number },
  ): AsyncGenerator<AgentEvent, boolean> {
    const n = history.length;
    const { budget, contextWindow } = this.#limits;
    const from = this.state?.replaces ?? 0;
    const before = this.#estimate(n);
    const keep = manual ? manual.keepRecentTokens : this.#limits.keepRecentTokens;
    const lastTurn = manual ? n : _lastTurnStart(history, from);
    const recent = Math.min(this.#ledger.recentStart(n, from, keep), lastTurn);
    if (!manual) this.#dropBefore(recent);

    // Dropping is enough when it leaves room for a good many turns; else summarize too.
    if (manual || reason === "overflow" || this.#estimate(n) > budget * DROP_ENOUGH_SHARE) {
      const tokensAfter = (i: number) => this.#ledger.tokensBetween(i, n);
      const split = _splitPoint(history, from, recent, lastTurn, tokensAfter, keep);
      if (split > from && (reason !== "auto" || this.#summaryFailure === undefined)) {
        try {
          const made = await this.#summarize(history.slice(from, split), signal, manual?.focus);
          addUsage(usage, made.usage);
          const state = { summary: made.summary, replaces: split };
          this.#view = { state, dropBefore: Math.max(this.#view.dropBefore, split) };
        } catch (error) {
          if (manual) throw error;
          // Cancelled: the model call that follows ends the run as aborted.
          if (signal.aborted) return false;
          this.#summaryFailure = error;
          yield {
            type: "notice",
            kind: "compaction_failed",
            message: `Summarizing the earlier conversation failed (${
              describeError(error).message
            }); older tool outputs are left out instead.`,
          };
        }
      }
    }
    // Last resort: the outputs of the recent turns too, all but the last turn's.
    if (!manual && this.#estimate(n) > budget) this.#dropBefore(lastTurn);

    const after = this.#estimate(n);
    const summarizedMessages = (this.state?.replaces ?? 0) - from;
    if (manual) return summarizedMessages > 0;
    const failure = this.#summaryFailure;
    if (failure !== undefined && reason === "auto" && after > contextWindow) {
      throw new ContextLengthError(
        `The conversation (about ${after} tokens) does not fit the context window of ` +
          `${contextWindow} tokens, and summarizing it failed: ${describeError(failure).message}`,
        { cause: failure },
      );
    }
    if (summarizedMessages === 0 && after >= before) return false;
    yield {
      type: "compaction",
      reason,
      tokensBefore: before,
      tokensAfter: after,
      state: this.state ?? { summary: "", replaces: 0 },
      droppedToolOutputs: this.#ledger.droppedOutputs(this.#view, n),
      summarizedMessages,
    };
    return true;
  }

  #summarize(
    messages: readonly Message[],
    signal: AbortSignal,
    focus?: string,
  ): Promise<{ summary: string; usage: Usage }> {
    const model = this.#summarizer;
    const window = model === this.#model
      ? this.#limits.contextWindow
      : model.info?.contextWindow ?? this.#limits.contextWindow;
    const maxOutputTokens = Math.min(
      model.info?.maxOutputTokens ?? Infinity,
      Math.max(256, Math.min(Math.floor(window * 0.15), 8_192)),
    );
    return summarize({
      model,
      messages,
      previous: this.state?.summary,
      focus,
      counter: this.#ledger.counter,
      inputTokens: window - maxOutputTokens - Math.ceil(window * 0.05),
      maxOutputTokens,
      maxToolChars: Math.max(200, Math.min(Math.floor(window / 10), 2_000)),
      signal,
      retry: this.#retry,
    });
  }

  #estimate(n: number): number {
    return this.#ledger.estimate(this.#view, n, this.#reported);
  }

  /** Leaves out the tool outputs before `index` too. */
  #dropBefore(index: number): void {
    if (index > this.#view.dropBefore) this.#view = { ...this.#view, dropBefore: index };
  }

  #sync(history: readonly Message[]): void {
    if (!this.#ledger.sync(history)) this.#reported = undefined;
    if (!this.#checked) {
      this.#checked = true;
      const state = this.#view.state;
      // A summary of some other history: send this one whole.
      if (state && !_validSplit(history, state.replaces)) this.#view = _NO_SUMMARY;
    }
  }
}

/** Whether the messages from `index` on can follow a summary: none is a result without its call. */
function _validSplit(history: readonly Message[], index: number): boolean {
  return index <= history.length && history[index]?.role !== "tool";
}

/** Where the last turn starts: its assistant message, or the last user message. */
function _lastTurnStart(history: readonly Message[], from: number): number {
  let i = history.length - 1;
  while (i > from && history[i].role === "tool") i--;
  return Math.max(i, from);
}

/**
 * Where the summary ends and the verbatim messages begin: never at a tool result, so a call
 * and its results stay together; at a user message when one keeps at least half the recent
 * budget, else at the first assistant message from `recent` on.
 */
function _splitPoint(
  history: readonly Message[],
  from: number,
  recent: number,
  limit: number,
  tokensAfter: (i: number) => number,
  keep: number,
): number {
  if (limit <= from) return from;
  let first = -1;
  for (let i = Math.max(recent, from + 1); i <= limit; i++) {
    if (i === history.length) return first >= 0 ? first : i;
    const role = history[i].role;
    if (role === "tool") continue;
    if (first < 0) first = i;
    if (tokensAfter(i) < keep / 2) break;
    if (role === "user") return i;
  }
  return first >= 0 ? first : from;
}
