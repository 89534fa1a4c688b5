/**
 * The memory's vectors: stored in the `vectors` table (f32 BLOBs, keyed by segment, tagged with
 * the embedder's key), embedded through an {@link Embedder}, and searched through a
 * {@link VectorIndex} loaded on first use and kept in step with this connection's writes (and
 * reloaded when another connection wrote to the database).
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";
import type { Embedder } from "./embeddings.ts";
import type { SegmentType } from "./types.ts";
import { type VectorHit, type VectorIndex, vectorIndex } from "./vector_index.ts";

/** The segment types, in the order of their tags in the vector index. */
export const SEGMENT_TYPES: readonly SegmentType[] = [
  "user",
  "reasoning",
  "tool_call",
  "tool_result",
  "response",
];

/** A segment to embed. */
export interface SegmentRow {
  /** The segment's row id. */
  id: number;
  /** Its type. */
  type: SegmentType;
  /** Its text. */
  text: string;
}

/** The vectors of one embedder in a memory database. */
export interface VectorStore {
  /** The embedder's key: vectors of other keys are ignored. */
  readonly key: string;
  /** The vectors of a run loop's segments by text, to keep them when it is archived again. */
  saved(runLoopId: string): Map<string, Uint8Array>;
  /** Stores a vector for a segment still in the database (whether it was stored). */
  put(segment: SegmentRow, vector: Uint8Array | Float32Array): boolean;
  /** Drops segments from the index (their rows are gone, the vectors deleted with them). */
  forget(ids: readonly number[]): void;
  /** Drops the index, to be loaded again on the next search (e.g. after a rollback). */
  invalidate(): void;
  /** Up to `limit` segments without a vector, by id, after `afterId`. */
  missing(afterId: number, limit: number): SegmentRow[];
  /** Embeds a query. */
  embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array>;
  /** Embeds segments and stores their vectors, in one transaction; how many were stored. */
  embed(segments: readonly SegmentRow[], signal?: AbortSignal): Promise<number>;
  /** How many segments have a vector. */
  count(): number;
  /** Whether there are vectors to search (loads the index when needed). */
  searchable(): boolean;
  /** The segments closest to an embedded query, best first. */
  search(query: Float32Array, limit: number, types?: readonly SegmentType[]): VectorHit[];
}

/**
 * The vectors of `embedder` in a memory database opened by `openMemoryDatabase`.
 *
 * @example
 * ```ts
 * import { openMemoryDatabase } from "./schema.ts";
 * import { vectorStore } from "./vector_store.ts";
 * const db = openMemoryDatabase(":memory:");
 * db.exec(`INSERT INTO run_loops (id, status, created_at, archived_at, archive_seq, json)
 *     VALUES ('r1', 'completed', '', '', 1, '{}');
 *   INSERT INTO segments VALUES (1, 'r1', 0, 0, 'user', '', 'sqlite locks');`);
 * const embedder = {
 *   key: "toy",
 *   embed: (texts: readonly string[]) => Promise.resolve(texts.map(() => Float32Array.of(1, 0))),
 * };
 * const vectors = vectorStore(db, embedder);
 * const stored = await vectors.embed(vectors.missing(0, 10));
 * const [hit] = vectors.search(Float32Array.of(1, 0), 5);
 * if (stored !== 1 || hit.id !== 1 || vectors.missing(0, 10).length !== 0) throw new Error();
 * db.close();
 * ```
 */
export function vectorStore(db: DatabaseSync, embedder: Embedder): VectorStore {
  const key = embedder.key;
  const savedStatement = db.prepare(
    `SELECT s.text AS text, v.vector AS vector FROM segments s
     JOIN vectors v ON v.segment_id = s.id WHERE s.run_loop_id = ? AND v.model = ?`,
  );
  const putStatement = db.prepare(
    `INSERT INTO vectors (segment_id, model, vector)
     SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM segments WHERE id = ?)
     ON CONFLICT (segment_id) DO UPDATE SET model = excluded.model, vector = excluded.vector`,
  );
  const missingStatement = db.prepare(
    `SELECT id, type, text FROM segments s WHERE id > ? AND NOT EXISTS
     (SELECT 1 FROM vectors v WHERE v.segment_id = s.id AND v.model = ?) ORDER BY id LIMIT ?`,
  );
  const countStatement = db.prepare(
    "SELECT coalesce((SELECT n FROM vector_counts WHERE model = ?), 0) AS n",
  );
  const loadStatement = db.prepare(
    `SELECT v.segment_id AS id, s.type AS type, v.vector AS vector FROM vectors v
     JOIN segments s ON s.id = v.segment_id WHERE v.model = ?`,
  );
  const dataVersion = db.prepare("PRAGMA data_version");
  let index: VectorIndex | undefined;
  let loaded = false;
  let seenVersion: unknown;

  const add = (id: number, type: SegmentType, vector: Float32Array, capacity?: number) => {
    index ??= vectorIndex(vector.length, { capacity });
    if (vector.length === index.dimensions) index.add(id, vector, SEGMENT_TYPES.indexOf(type));
  };

  const load = () => {
    const version = dataVersion.get()?.data_version;
    if (loaded && version === seenVersion) return;
    index = undefined;
    const capacity = countStatement.get(key)?.n as number;
    for (const row of loadStatement.iterate(key)) {
      add(row.id as number, row.type as SegmentType, _floats(row.vector as Uint8Array), capacity);
    }
    loaded = true;
    seenVersion = version;
  };

  const put = (segment: SegmentRow, vector: Uint8Array | Float32Array) => {
    const bytes = vector instanceof Float32Array
      ? new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength)
      : vector;
    const { changes } = putStatement.run(segment.id, key, bytes, segment.id);
    if (changes === 0) return false;
    if (loaded) add(segment.id, segment.type, _floats(bytes));
    return true;
  };

  return {
    key,
    saved(runLoopId) {
      const saved = new Map<string, Uint8Array>();
      for (const row of savedStatement.iterate(runLoopId, key)) {
        saved.set(row.text as string, row.vector as Uint8Array);
      }
      return saved;
    },
    put,
    forget(ids) {
      if (loaded && index) { for (const id of ids) index.remove(id); }
    },
    invalidate() {
      loaded = false;
      index = undefined;
    },
    missing(afterId, limit) {
      return missingStatement.all(afterId, key, limit) as unknown as SegmentRow[];
    },
    async embedQuery(text, signal) {
      const [vector] = await embedder.embed([text], signal);
      return vector;
    },
    async embed(segments, signal) {
      if (segments.length === 0) return 0;
      const vectors = await embedder.embed(segments.map((segment) => segment.text), signal);
      signal?.throwIfAborted();
      let stored = 0;
      db.exec("BEGIN IMMEDIATE");
      try {
        for (const [i, segment] of segments.entries()) if (put(segment, vectors[i])) stored++;
        db.exec("COMMIT");
      } catch (error) {
        if (db.isTransaction) db.exec("ROLLBACK");
        loaded = false; // the index may hold vectors that were rolled back
        throw error;
      }
      return stored;
    },
    count() {
      return countStatement.get(key)?.n as number;
    },
    searchable() {
      load();
      return (index?.size ?? 0) > 0;
    },
    search(query, limit, types) {
      load();
      if (!index || query.length !== index.dimensions) return [];
      const tags = types?.length
        ? types.reduce((mask, type) => mask | (1 << SEGMENT_TYPES.indexOf(type)), 0)
        : undefined;
      return index.search(query, limit, { tags }).filter((hit) => hit.score > 0);
    },
  };
}

/** The f32 vector in a BLOB (copied: a BLOB's bytes need not be aligned). */
function _floats(bytes: Uint8Array): Float32Array {
  return new Float32Array(bytes.slice().buffer);
}
