/**
 * Long-term memory: run loops (one user goal and everything done for it) archived into SQLite,
 * cut into segments, and found again by full-text search (FTS5, BM25) and, with an
 * OpenAI-compatible embeddings endpoint, by vector search, the two rankings fused.
 *
 * @example
 * ```ts
 * import { openMemory } from "@x/agent/memory";
 *
 * const memory = await openMemory({ path: ":memory:" });
 * const at = "2025-01-01T00:00:00Z";
 * await memory.archive({
 *   id: "r1", goal: "Why is CI slow?", status: "completed", createdAt: at,
 *   iterations: [{
 *     index: 0, userMessage: "Why is CI slow?", reasoning: [], response: "The cache is cold.",
 *     toolCalls: [{ id: "c1", name: "bash", input: { command: "deno task ci" } }],
 *     toolResults: [{ id: "c1", name: "bash", output: "cache miss: 412 modules", isError: false }],
 *     startedAt: at, endedAt: at,
 *   }],
 * });
 * const [hit] = await memory.retrieve("cache miss", { types: ["tool_result"] });
 * if (hit.text !== "bash: cache miss: 412 modules" || hit.anchor.segment !== 2) throw new Error();
 * await memory.close();
 * ```
 *
 * @module
 */

export type {
  Anchor,
  Iteration,
  IterationToolCall,
  IterationToolResult,
  RetrievedSegment,
  RunLoop,
  RunLoopStatus,
  Segment,
  SegmentType,
} from "./types.ts";
export type {
  ArchiveResult,
  MemoryOptions,
  MemoryStats,
  MemoryStore,
  PruneOptions,
  RetrieveOptions,
  VacuumResult,
} from "./memory.ts";
export { checkRetention, pruneBatch, type PruneResult, type RetentionPolicy } from "./retention.ts";
export { openMemory } from "./sqlite.ts";
export { openMemoryInWorker } from "./worker.ts";
export { MemoryError, type MemoryErrorReason } from "./errors.ts";
export type { EmbeddingsOptions } from "./embeddings.ts";
