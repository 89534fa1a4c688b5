/**
 * Token usage, summed per turn and per run.
 *
 * @module
 */

/**
 * Tokens a model call consumed. `inputTokens` counts every input token, cached or not;
 * `cacheReadTokens` and `cacheWriteTokens` say how many of them hit or filled a prompt cache.
 */
export interface Usage {
  /** All input (prompt) tokens, including cached ones. */
  inputTokens: number;
  /** Output (completion) tokens, including reasoning tokens. */
  outputTokens: number;
  /** Input tokens read from a prompt cache. */
  cacheReadTokens?: number;
  /** Input tokens written to a prompt cache. */
  cacheWriteTokens?: number;
  /** Output tokens spent on reasoning. */
  reasoningTokens?: number;
}

/**
 * An empty usage record.
 *
 * @example
 * ```ts
 * import { emptyUsage } from "./usage.ts";
 * if (emptyUsage().inputTokens !== 0) throw new Error("unexpected");
 * ```
 */
export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0 };
}

/**
 * Adds `more` into `total` in place and returns `total`. Optional counters appear in the
 * total once any record carries them.
 *
 * @example
 * ```ts
 * import { addUsage, emptyUsage } from "./usage.ts";
 * const total = addUsage(emptyUsage(), { inputTokens: 3, outputTokens: 2, cacheReadTokens: 1 });
 * if (total.inputTokens !== 3 || total.cacheReadTokens !== 1) throw new Error("unexpected");
 * ```
 */
export function addUsage(total: Usage, more: Usage): Usage {
  total.inputTokens += more.inputTokens;
  total.outputTokens += more.outputTokens;
  if (more.cacheReadTokens) {
    total.cacheReadTokens = (total.cacheReadTokens ?? 0) + more.cacheReadTokens;
  }
  if (more.cacheWriteTokens) {
    total.cacheWriteTokens = (total.cacheWriteTokens ?? 0) + more.cacheWriteTokens;
  }
  if (more.reasoningTokens) {
    total.reasoningTokens = (total.reasoningTokens ?? 0) + more.reasoningTokens;
  }
  return total;
}
