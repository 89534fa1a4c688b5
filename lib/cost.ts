/**
 * What tokens cost.
 *
 * @module
 */

import type { Pricing } from "./model.ts";
import type { Usage } from "./usage.ts";

/**
 * The cost in US dollars of `usage` at `pricing` (per million tokens). Cached input is charged
 * at the cache prices, the rest of the input at the input price.
 *
 * @example
 * ```ts
 * import { costOf } from "./cost.ts";
 * const usd = costOf(
 *   { inputTokens: 1_000_000, outputTokens: 100_000, cacheReadTokens: 500_000 },
 *   { input: 3, output: 15, cacheRead: 0.3 },
 * );
 * if (Math.abs(usd - (1.5 + 1.5 + 0.15)) > 1e-9) throw new Error(String(usd));
 * ```
 */
export function costOf(usage: Usage, pricing: Pricing): number {
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  const fresh = Math.max(0, usage.inputTokens - read - write);
  return (
    fresh * pricing.input +
    read * (pricing.cacheRead ?? pricing.input) +
    write * (pricing.cacheWrite ?? pricing.input) +
    usage.outputTokens * pricing.output
  ) / 1_000_000;
}
