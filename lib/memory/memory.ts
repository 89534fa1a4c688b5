/**
 * What the long-term memory offers: {@link MemoryStore} and its options and results.
 *
 * @module
 */

import type { EmbeddingsOptions } from "./embeddings.ts";
import type { PruneResult, RetentionPolicy } from "./retention.ts";
import type { Anchor, RetrievedSegment, RunLoop, Segment, SegmentType } from "./types.ts";

/** Options of {@link openMemory}. */
export interface MemoryOptions {
  /** The database file (created when missing), or `:memory:`. */
  path: string;
  /** An OpenAI-compatible embeddings endpoint; without it, search is full-text only. */
  embeddings?: EmbeddingsOptions;
  /**
   * Secret values never to store (of 8 characters or more), e.g. the run's API keys: redacted
   * (`[redacted]`) before anything is stored, indexed or embedded, like whatever has the shape
   * of a key or token, which is redacted without being named here.
   */
  secrets?: readonly string[];
  /**
   * How much of the past to keep (default: everything). Applied after each archive, a step at
   * a time (the oldest run loops dropped in batches of up to 64: see `pruneBatch`), at a cost
   * that does not grow with the memory; `prune()` applies it whole and exactly.
   */
  retention?: RetentionPolicy;
}

/** Options of {@link MemoryStore.prune}: a policy to apply (default the store's own). */
export interface PruneOptions extends RetentionPolicy {
  /** Count what would be dropped, and drop nothing. */
  dryRun?: boolean;
}

/** What {@link MemoryStore.vacuum} gave back. */
export interface VacuumResult {
  /** The database and its write-ahead log on disk before, in bytes. */
  bytesBefore: number;
  /** And after. */
  bytesAfter: number;
}

/** What {@link MemoryStore.archive} did. */
export interface ArchiveResult {
  /** How many segments the run loop was cut into. */
  segments: number;
  /** With embeddings: whether they all got their vector (else they get it later). */
  embedded?: boolean;
  /** Why embedding failed. */
  reason?: string;
}

/** Options of {@link MemoryStore.retrieve}. */
export interface RetrieveOptions {
  /** The most segments returned (default 8). */
  limit?: number;
  /** Only segments of these types. */
  types?: readonly SegmentType[];
  /**
   * Leaves out the segments of this run loop (the one being worked on, whose own words would
   * match first): the `limit` best of the others.
   */
  excludeRunLoop?: string;
}

/** Figures about a memory. */
export interface MemoryStats {
  /** Archived run loops. */
  runLoops: number;
  /** Their segments. */
  segments: number;
  /** Segments with a vector of the configured embeddings (0 without). */
  vectors: number;
  /** The database's size in bytes (without its write-ahead log). */
  bytes: number;
  /** Of those, the bytes of free pages (reused by new archives; `vacuum()` gives them back). */
  freeBytes: number;
  /** When the oldest run loop kept was archived (ISO); absent when there is none. */
  oldest?: string;
  /** When the newest was archived (ISO). */
  newest?: string;
}

/** A long-term memory of run loops. */
export interface MemoryStore extends AsyncDisposable {
  /**
   * Stores a run loop, whole and cut into segments, in one transaction (replacing it when it
   * was archived before), then embeds the segments when embeddings are configured. Vectors of
   * unchanged segments are kept. An embedding failure loses nothing: the result says
   * `embedded: false` and why, and the segments are embedded by a later archive (a few hundred
   * at a time) or by `reindex()`.
   */
  archive(loop: RunLoop): Promise<ArchiveResult>;
  /**
   * The segments that best match a query, best first: full-text search ranked by BM25 and, with
   * embeddings, vector search by cosine similarity, fused by reciprocal rank (k = 60). Relevance
   * is the fused score over the best possible one: 1 for first in every ranking, at most 0.5
   * for a segment that only one of two rankings found. When the query cannot be embedded, the
   * search is full-text only. The first search with embeddings loads every vector into memory
   * (about a second per 100,000 vectors of 384 dimensions).
   */
  retrieve(query: string, options?: RetrieveOptions): Promise<RetrievedSegment[]>;
  /** The segments around an anchor (`window` before and after, default 3), and its run loop. */
  expand(anchor: Anchor, window?: number): Promise<{ segments: Segment[]; runLoop: RunLoop }>;
  /** An archived run loop, whole. */
  runLoop(id: string): Promise<RunLoop | undefined>;
  /** The latest archived run loops, newest first (default 10). */
  recent(limit?: number): Promise<RunLoop[]>;
  /**
   * Embeds every segment that has no vector of the configured model yet (after an outage, or a
   * change of model); how many it embedded. Throws a `MemoryError` (`embeddings`) when the
   * server fails, keeping what was embedded until then.
   */
  reindex(): Promise<{ embedded: number }>;
  /** Counts and size: one read each, whatever the size of the memory. */
  stats(): MemoryStats;
  /**
   * Drops what a retention policy does not keep, whole and oldest first: `options`' bounds, or
   * else the store's own `retention`. With `dryRun`, counts it and drops nothing.
   */
  prune(options?: PruneOptions): Promise<PruneResult>;
  /**
   * Gives the space freed by pruning back to the file system: merges the full-text index,
   * rewrites the database (SQLite's `VACUUM`) and empties its write-ahead log. Takes time in
   * proportion to the memory's size, and holds the database meanwhile.
   */
  vacuum(): Promise<VacuumResult>;
  /** Stops embedding in progress and closes the database. */
  close(): Promise<void>;
}
