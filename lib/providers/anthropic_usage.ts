/**
 * The usage the Messages API reports, as the neutral {@link Usage}: uncached input, cache reads
 * and cache writes summed into the input total, and a turn that ran several sampling
 * iterations at the provider (server-side compaction, then the message) counted whole.
 *
 * @module
 */

import type { Usage } from "../usage.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/**
 * Maps a Messages API `usage` object onto {@link Usage}. The API counts uncached input apart
 * from cache reads and writes; `inputTokens` is their sum. When the provider sampled more than
 * once for the turn (`usage.iterations`: a compaction, then the message), the top-level counts
 * are the last iteration's only, and the turn's usage is the sum of the iterations. Iterations
 * of an advisor model are left out (they are billed at that model's rates), and so is the list
 * when a fallback model served the turn (the top-level counts are then the served answer's).
 *
 * @example
 * ```ts
 * import { anthropicUsage } from "./anthropic_usage.ts";
 * const usage = anthropicUsage({
 *   input_tokens: 5,
 *   cache_creation_input_tokens: 100,
 *   cache_read_input_tokens: 1000,
 *   output_tokens: 7,
 * });
 * if (usage.inputTokens !== 1105 || usage.cacheReadTokens !== 1000) throw new Error("unexpected");
 * const compacted = anthropicUsage({
 *   input_tokens: 600,
 *   output_tokens: 2800,
 *   iterations: [
 *     { type: "compaction", input_tokens: 60000, output_tokens: 500 },
 *     { type: "message", input_tokens: 600, output_tokens: 2800 },
 *   ],
 * });
 * if (compacted.inputTokens !== 60600 || compacted.outputTokens !== 3300) throw new Error("unexpected");
 * ```
 */
export function anthropicUsage(reported: unknown): Usage {
  const raw = reported as Json;
  const counted = _iterations(raw?.iterations) ?? [raw];
  const input = _sum(counted, "input_tokens");
  const output = _sum(counted, "output_tokens");
  // Iterations that say nothing of the cache leave the top-level cache counts standing.
  const cacheRead = _sum(
    _saying(counted, "cache_read_input_tokens", raw),
    "cache_read_input_tokens",
  );
  const cacheWrite = _sum(
    _saying(counted, "cache_creation_input_tokens", raw),
    "cache_creation_input_tokens",
  );
  const usage: Usage = {
    inputTokens: input + cacheRead + cacheWrite,
    outputTokens: output,
  };
  if (cacheRead) usage.cacheReadTokens = cacheRead;
  if (cacheWrite) usage.cacheWriteTokens = cacheWrite;
  const reasoning = _count(raw?.output_tokens_details?.thinking_tokens);
  if (reasoning) usage.reasoningTokens = reasoning;
  return usage;
}

/** The iterations that add up to the turn's usage, or none when the top-level counts stand. */
function _iterations(iterations: unknown): Json[] | undefined {
  if (!Array.isArray(iterations) || iterations.length === 0) return undefined;
  if (iterations.some((part) => part?.type === "fallback_message")) return undefined;
  const counted = iterations.filter((part) =>
    part !== null && typeof part === "object" && part.type !== "advisor_message"
  );
  return counted.length > 0 ? counted : undefined;
}

/** `counted` when one of them reports `key`, else the top-level usage alone. */
function _saying(counted: Json[], key: string, raw: Json): Json[] {
  return counted.some((part) => typeof part?.[key] === "number") ? counted : [raw];
}

function _sum(parts: Json[], key: string): number {
  return parts.reduce((total: number, part) => total + _count(part?.[key]), 0);
}

function _count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}
