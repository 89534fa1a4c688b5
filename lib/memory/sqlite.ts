/**
 * The long-term memory: run loops archived into SQLite, cut into segments, found again by
 * full-text search (FTS5, BM25) and, with embeddings, by vector search, the two fused.
 *
 * @module
 */

import type { SQLInputValue } from "node:sqlite";
import { openaiEmbedder } from "./embeddings.ts";
import { MemoryError } from "./errors.ts";
import { ftsTerms, fuseRankings } from "./fts_query.ts";
import { ftsSearcher } from "./fts_search.ts";
import { openMemoryDatabase } from "./schema.ts";
import { scrubMemory } from "./scrub.ts";
import { segmentRunLoop } from "./segments.ts";
import { redactValue, secretRedactor } from "../secrets/redact.ts";
import type { ArchiveResult, MemoryOptions, MemoryStore } from "./memory.ts";
import { checkRetention, PRUNE_STEP, pruner } from "./retention.ts";
import type { RetrievedSegment, RunLoop, Segment, SegmentType } from "./types.ts";
import { SEGMENT_TYPES, type SegmentRow, type VectorStore, vectorStore } from "./vector_store.ts";

/** Segments of older run loops embedded along with an archive, when some were missed. */
const _BACKLOG = 256;

/**
 * Opens a memory (creating the database when new). Secrets never reach the database: the values
 * of `options.secrets` and whatever has the shape of a key or token are redacted from a run loop
 * before it is stored, indexed or embedded (and from the query sent to be embedded); a database
 * written before that is scrubbed once, when opened (see `scrubMemory`). What is read back is
 * redacted too, should a secret now known have been stored when it was not. Throws a
 * `MemoryError` for a database of a newer schema or a file that is not one.
 *
 * @example
 * ```ts
 * import { openMemory } from "./sqlite.ts";
 * const memory = await openMemory({ path: ":memory:" });
 * await memory.archive({
 *   id: "r1", goal: "Fix the flaky test", status: "completed", createdAt: "2025-01-01T00:00:00Z",
 *   iterations: [{
 *     index: 0, userMessage: "Fix the flaky test", reasoning: ["The timeout is too short."],
 *     toolCalls: [], toolResults: [], response: "Raised the timeout to 5 s.",
 *     startedAt: "2025-01-01T00:00:00Z", endedAt: "2025-01-01T00:01:00Z",
 *   }],
 * });
 * const [best] = await memory.retrieve("timeout");
 * const { segments } = await memory.expand(best.anchor, 1);
 * if (best.anchor.type !== "reasoning" || segments.length !== 3) throw new Error("unexpected");
 * await memory.close();
 * ```
 */
export function openMemory(options: MemoryOptions): Promise<MemoryStore> {
  return _promise(() => _open(options));
}

function _open(options: MemoryOptions): MemoryStore {
  const redact = secretRedactor(options.secrets ?? []);
  const db = openMemoryDatabase(options.path);
  try {
    scrubMemory(db, redact);
  } catch (error) {
    db.close();
    throw new MemoryError(
      `Cannot scrub the memory database ${options.path} of secrets: ${(error as Error).message}`,
      { reason: "invalid", cause: error },
    );
  }
  const vectors: VectorStore | undefined = options.embeddings
    ? vectorStore(db, openaiEmbedder(options.embeddings))
    : undefined;
  const sql = (text: string) => db.prepare(text);
  const oldIds = sql("SELECT id FROM segments WHERE run_loop_id = ?");
  const deleteSegments = sql("DELETE FROM segments WHERE run_loop_id = ?");
  const unindex = sql(
    "DELETE FROM segments_fts WHERE rowid IN (SELECT id FROM segments WHERE run_loop_id = ?)",
  );
  const index = sql("INSERT INTO segments_fts (rowid, text, type) VALUES (?, ?, ?)");
  const upsertRunLoop = sql(
    `INSERT INTO run_loops (id, status, created_at, archived_at, archive_seq, json, detail)
     VALUES (?, ?, ?, ?, (SELECT coalesce(max(archive_seq), 0) + 1 FROM run_loops), ?, 1)
     ON CONFLICT (id) DO UPDATE SET status = excluded.status, created_at = excluded.created_at,
       archived_at = excluded.archived_at, archive_seq = excluded.archive_seq, json = excluded.json,
       detail = 1`,
  );
  const countSegments = sql("UPDATE memory_counts SET segments = segments + ?");
  const insertSegment = sql(
    `INSERT INTO segments (run_loop_id, seq, iteration, type, timestamp, text)
     VALUES (?, ?, ?, ?, ?, ?)`,
  );
  const columns = "id, run_loop_id, iteration, seq, type, timestamp, text";
  const byIds = sql(
    `SELECT ${columns} FROM segments WHERE id IN (SELECT value FROM json_each(?))`,
  );
  const around = sql(
    `SELECT ${columns} FROM segments WHERE run_loop_id = ? AND seq BETWEEN ? AND ? ORDER BY seq`,
  );
  const loopJson = sql("SELECT json FROM run_loops WHERE id = ?");
  const segmentsOf = sql("SELECT count(*) AS n FROM segments WHERE run_loop_id = ?");
  const recentJson = sql("SELECT json FROM run_loops ORDER BY archive_seq DESC LIMIT ?");
  // Counts kept by triggers, and the two ends of an index: one read each, whatever the size.
  const counts = sql(
    `SELECT run_loops AS runLoops, segments,
       (SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()) AS bytes,
       (SELECT freelist_count * page_size FROM pragma_freelist_count(), pragma_page_size())
         AS freeBytes,
       (SELECT archived_at FROM run_loops ORDER BY archive_seq LIMIT 1) AS oldest,
       (SELECT archived_at FROM run_loops ORDER BY archive_seq DESC LIMIT 1) AS newest
     FROM memory_counts`,
  );
  const ftsSearch = ftsSearcher(db);
  const retention = options.retention && checkRetention(options.retention);
  const prunes = pruner(db);
  const forget = (ids: number[]) => vectors?.forget(ids);

  let closed = false;
  let backlog: boolean | undefined = undefined; // whether older segments lack vectors
  const stopping = new AbortController();
  const pending = new Set<Promise<unknown>>();
  const open = () => {
    if (closed) throw new MemoryError("The memory is closed", { reason: "closed" });
  };
  const track = <T>(work: Promise<T>): Promise<T> => {
    pending.add(work);
    return work.finally(() => pending.delete(work));
  };

  /**
   * Stores the run loop and its segments, and keeps the retention policy a step; the segments
   * that still need a vector.
   */
  const store = (loop: RunLoop, segments: Segment[]): SegmentRow[] => {
    const unembedded: SegmentRow[] = [];
    let removed: number[];
    let dropped: number[] = [];
    db.exec("BEGIN IMMEDIATE");
    try {
      const saved = vectors?.saved(loop.id) ?? new Map<string, Uint8Array>();
      removed = (oldIds.all(loop.id) as Array<{ id: number }>).map((row) => row.id);
      unindex.run(loop.id);
      deleteSegments.run(loop.id);
      upsertRunLoop.run(
        loop.id,
        loop.status,
        loop.createdAt,
        new Date().toISOString(),
        JSON.stringify(loop),
      );
      for (const { anchor, text } of segments) {
        const { lastInsertRowid } = insertSegment.run(
          loop.id,
          anchor.segment,
          anchor.iteration,
          anchor.type,
          anchor.timestamp,
          text,
        );
        const row = { id: Number(lastInsertRowid), type: anchor.type, text };
        index.run(row.id, text, anchor.type);
        const vector = saved.get(text);
        if (!vector || !vectors?.put(row, vector)) unembedded.push(row);
      }
      countSegments.run(segments.length - removed.length);
      // The oldest run loops dropped once a batch of them is due, read through an index: in
      // the same transaction, whose pages are written once.
      if (retention) {
        prunes.prune(retention, {
          limit: PRUNE_STEP,
          batched: true,
          dropped: (ids) => dropped = ids,
        });
      }
      db.exec("COMMIT");
    } catch (error) {
      if (db.isTransaction) db.exec("ROLLBACK");
      vectors?.invalidate();
      throw error;
    }
    vectors?.forget([...removed, ...dropped]);
    return unembedded;
  };

  const embed = async (rows: SegmentRow[]): Promise<Omit<ArchiveResult, "segments">> => {
    if (!vectors) return {};
    try {
      await vectors.embed(rows, stopping.signal);
    } catch (error) {
      backlog = true;
      const reason = closed
        ? "The memory was closed before the segments were embedded"
        : error instanceof Error
        ? error.message
        : String(error);
      return { embedded: false, reason };
    }
    // Whether an earlier failure left segments without a vector: two counts, not a scan.
    backlog ??= vectors.count() < Number(counts.get()?.segments);
    if (backlog && !closed) {
      // Catch up on segments an earlier failure left without a vector, a few at a time.
      const older = vectors.missing(0, _BACKLOG);
      if (older.length < _BACKLOG) backlog = false;
      await vectors.embed(older, stopping.signal).catch(() => backlog = true);
    }
    return { embedded: true };
  };

  const memory: MemoryStore = {
    async archive(loop) {
      open();
      const clean = redactValue(loop, redact);
      const segments = segmentRunLoop(clean);
      const unembedded = store(clean, segments);
      return { segments: segments.length, ...await track(embed(unembedded)) };
    },

    async retrieve(query, given) {
      open();
      if (typeof query !== "string") throw new TypeError("retrieve() needs a query text");
      const options = given ?? {};
      const limit = _count(options.limit ?? 8, "limit");
      const exclude = options.excludeRunLoop;
      if (exclude !== undefined && typeof exclude !== "string") {
        throw new TypeError("excludeRunLoop must be a run loop's id");
      }
      if (options.types !== undefined && !Array.isArray(options.types)) {
        throw new TypeError(`types must be an array of segment types: ${SEGMENT_TYPES.join(", ")}`);
      }
      const types = [...new Set(options.types ?? [])];
      for (const type of types) {
        if (!SEGMENT_TYPES.includes(type)) {
          throw new TypeError(
            `Unknown segment type ${JSON.stringify(type)}: use ${SEGMENT_TYPES.join(", ")}`,
          );
        }
      }
      // As many more as the run loop left out has segments, so that they cannot crowd the
      // others out.
      const own = exclude ? Number(segmentsOf.get(exclude)?.n ?? 0) : 0;
      const depth = Math.min(Math.max(limit * 4, 40) + own, 10_000);
      // The query's embedding is on its way while full-text search runs. If it fails, the
      // search is full-text only.
      const embedding = vectors?.searchable() && query.trim()
        ? track(vectors.embedQuery(redact(query), stopping.signal)).catch(() => undefined)
        : undefined;
      const rankings = [ftsSearch(ftsTerms(query), types, depth)];
      const queryVector = await embedding;
      open();
      if (queryVector && vectors) {
        rankings.push(vectors.search(queryVector, depth, types).map((hit) => hit.id));
      }
      // Only the rows returned are read, best first: those of a run loop left out are made up
      // for from the next best.
      const fused = fuseRankings(rankings);
      const kept: RetrievedSegment[] = [];
      for (let at = 0; at < fused.length && kept.length < limit;) {
        const next = fused.slice(at, at += limit - kept.length);
        const rows = byIds.all(JSON.stringify(next.map(({ id }) => id))) as unknown as _Row[];
        const found = new Map(rows.map((row) => [row.id, row]));
        for (const { id, relevance } of next) {
          const row = found.get(id);
          if (row && row.run_loop_id !== exclude) {
            kept.push({ ..._segment(row, redact), relevance });
          }
        }
      }
      return kept;
    },

    expand(anchor, window = 3) {
      return _promise(() => {
        open();
        _count(window, "window", 0);
        const json = loopJson.get(anchor.runLoopId)?.json as string | undefined;
        if (json === undefined) {
          throw new MemoryError(`No archived run loop ${anchor.runLoopId}`, {
            reason: "not_found",
          });
        }
        const from = anchor.segment - window;
        const rows = around.all(anchor.runLoopId, from, anchor.segment + window) as unknown[];
        const segments = (rows as _Row[]).map((row) => _segment(row, redact));
        return { segments, runLoop: _loop(json, redact) };
      });
    },

    runLoop(id) {
      return _promise(() => {
        open();
        const json = loopJson.get(id)?.json as string | undefined;
        return json === undefined ? undefined : _loop(json, redact);
      });
    },

    recent(limit = 10) {
      return _promise(() => {
        open();
        const rows = recentJson.all(_count(limit, "limit")) as Array<{ json: string }>;
        return rows.map((row) => _loop(row.json, redact));
      });
    },

    async reindex() {
      open();
      if (!vectors) {
        throw new MemoryError("No embeddings configured: pass `embeddings` to openMemory()", {
          reason: "embeddings",
        });
      }
      let embedded = 0;
      for (let after = 0;;) {
        const rows = vectors.missing(after, 512);
        if (rows.length === 0) break;
        embedded += await track(vectors.embed(rows, stopping.signal));
        after = rows[rows.length - 1].id;
      }
      backlog = false;
      return { embedded };
    },

    stats() {
      open();
      const row = counts.get() as Record<string, SQLInputValue>;
      return {
        runLoops: Number(row.runLoops),
        segments: Number(row.segments),
        vectors: vectors?.count() ?? 0,
        bytes: Number(row.bytes),
        freeBytes: Number(row.freeBytes),
        ...(row.oldest === null ? {} : { oldest: String(row.oldest), newest: String(row.newest) }),
      };
    },

    prune(policy) {
      return _promise(() => {
        open();
        const { dryRun, ...bounds } = policy ?? {};
        const given = Object.values(bounds).some((value) => value !== undefined);
        return prunes.prune(given ? bounds : retention ?? {}, { dryRun, dropped: forget });
      });
    },

    vacuum() {
      return _promise(() => {
        open();
        const before = _fileBytes(options.path);
        // The full-text index is merged into one b-tree (dropping what deletions left in it),
        // the file rewritten without its free pages, and the write-ahead log emptied.
        db.exec("INSERT INTO segments_fts (segments_fts) VALUES ('optimize')");
        // The words searches found common are counted again in what is kept.
        db.exec("DELETE FROM fts_common_terms");
        // Counted again, whoever wrote meanwhile.
        db.exec(`BEGIN IMMEDIATE;
          UPDATE memory_counts SET run_loops = (SELECT count(*) FROM run_loops),
            segments = (SELECT count(*) FROM segments);
          DELETE FROM vector_counts;
          INSERT INTO vector_counts SELECT model, count(*) FROM vectors GROUP BY model;
          COMMIT;`);
        db.exec("VACUUM");
        db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
        return { bytesBefore: before, bytesAfter: _fileBytes(options.path) };
      });
    },

    async close() {
      if (closed) return;
      closed = true;
      stopping.abort();
      await Promise.allSettled([...pending]);
      db.close();
    },

    [Symbol.asyncDispose]() {
      return memory.close();
    },
  };
  return memory;
}

/** The bytes of a database file and its write-ahead log on disk (0 in memory). */
function _fileBytes(path: string): number {
  if (path === "" || path === ":memory:" || path.startsWith("file:")) return 0;
  let bytes = 0;
  for (const file of [path, `${path}-wal`]) {
    try {
      bytes += Deno.statSync(file).size;
    } catch {
      // No log.
    }
  }
  return bytes;
}

/** A promise of what `work` returns, rejected with what it throws. */
function _promise<T>(work: () => T): Promise<T> {
  return new Promise((resolve) => resolve(work()));
}

interface _Row {
  id: number;
  run_loop_id: string;
  iteration: number;
  seq: number;
  type: SegmentType;
  timestamp: string;
  text: string;
}

/** A stored run loop, its strings redacted. */
function _loop(json: string, redact: (text: string) => string): RunLoop {
  return redactValue(JSON.parse(json) as RunLoop, redact);
}

function _segment(row: _Row, redact: (text: string) => string): Segment {
  return {
    anchor: {
      runLoopId: row.run_loop_id,
      iteration: row.iteration,
      segment: row.seq,
      type: row.type,
      timestamp: row.timestamp,
    },
    text: redact(row.text),
  };
}

function _count(value: number, name: string, min = 1): number {
  if (!Number.isInteger(value) || value < min || value > 10_000) {
    const shown = typeof value === "number" ? value : JSON.stringify(value);
    throw new RangeError(`Bad ${name} ${shown}: use an integer from ${min} to 10,000`);
  }
  return value;
}
