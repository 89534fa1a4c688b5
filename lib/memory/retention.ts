/**
 * Retention: how much of the past a memory keeps. A policy bounds the run loops kept by age,
 * by number and by the database's size; what it no longer keeps is dropped oldest first (by
 * the order they were archived), whole: the run loop, its segments, their full-text index rows
 * and their vectors, in one transaction. Nothing is left pointing at what was dropped: a run
 * loop that went on from a dropped one (`seededFrom`) no longer names it. What remains is found
 * by recall as before, its anchors unchanged.
 *
 * Applied after each archive, a step drops at most {@link PRUNE_STEP} run loops and reads only
 * the oldest ones, through an index, and counters kept by triggers: its cost does not grow with
 * the memory.
 *
 * @module
 */

import type { DatabaseSync, StatementSync } from "node:sqlite";

/** How much a memory keeps; each bound is optional, and none means keep everything. */
export interface RetentionPolicy {
  /** Run loops archived longer ago than this many days are dropped. */
  maxAgeDays?: number;
  /** Only the newest this many run loops are kept. */
  maxRunLoops?: number;
  /**
   * The oldest run loops are dropped while the database holds more than this many bytes (the
   * pages in use; space freed is reused, and given back to the file system by `vacuum()`).
   */
  maxBytes?: number;
}

/** What a pruning dropped (or, on a dry run, would drop). */
export interface PruneResult {
  /** Run loops. */
  runLoops: number;
  /** Their segments. */
  segments: number;
  /** Whether nothing was changed. */
  dryRun: boolean;
}

/** The most run loops a step after an archive drops. */
export const PRUNE_STEP = 64;

/** A day, in milliseconds. */
const _DAY = 86_400_000;

/**
 * Checks a policy: each bound a positive number (`maxRunLoops` and `maxBytes` whole). Throws a
 * `RangeError` naming the bound otherwise; gives the policy.
 *
 * @example
 * ```ts
 * import { checkRetention } from "./retention.ts";
 * checkRetention({ maxAgeDays: 90, maxRunLoops: 5000 });
 * let refused = false;
 * try {
 *   checkRetention({ maxRunLoops: 0 });
 * } catch (error) {
 *   refused = error instanceof RangeError;
 * }
 * if (!refused) throw new Error("unexpected");
 * ```
 */
export function checkRetention(policy: RetentionPolicy): RetentionPolicy {
  if (!policy || typeof policy !== "object") throw new TypeError("A retention policy is an object");
  const { maxAgeDays, maxRunLoops, maxBytes } = policy;
  if (maxAgeDays !== undefined && !(typeof maxAgeDays === "number" && maxAgeDays > 0)) {
    throw new RangeError(`Bad retention maxAgeDays ${maxAgeDays}: use a number of days above 0`);
  }
  for (const [name, value] of [["maxRunLoops", maxRunLoops], ["maxBytes", maxBytes]] as const) {
    if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
      throw new RangeError(`Bad retention ${name} ${value}: use a whole number above 0`);
    }
  }
  return policy;
}

/** What a memory's connection needs to prune: its statements, made once. */
export interface Pruner {
  /**
   * Drops (or counts, with `dryRun`) what `policy` does not keep, oldest first; at most `limit`
   * run loops. `dropped` hears the segment ids of each run loop dropped.
   */
  prune(
    policy: RetentionPolicy,
    options?: { limit?: number; dryRun?: boolean; now?: Date; dropped?: (ids: number[]) => void },
  ): PruneResult;
}

/**
 * A pruner over a memory database opened by `openMemoryDatabase`.
 *
 * @example
 * ```ts
 * import { openMemoryDatabase } from "./schema.ts";
 * import { pruner } from "./retention.ts";
 * const db = openMemoryDatabase(":memory:");
 * db.exec(`INSERT INTO run_loops VALUES ('old', 'completed', '', '2020-01-01T00:00:00Z', 1, '{}');
 *   INSERT INTO run_loops VALUES ('new', 'completed', '', '2026-01-01T00:00:00Z', 2,
 *     '{"seededFrom":"old"}');`);
 * const result = pruner(db).prune({ maxRunLoops: 1 });
 * const kept = db.prepare("SELECT id, json FROM run_loops").all();
 * if (result.runLoops !== 1 || kept.length !== 1 || kept[0].json !== "{}") throw new Error();
 * db.close();
 * ```
 */
export function pruner(db: DatabaseSync): Pruner {
  const sql = (text: string): StatementSync => db.prepare(text);
  const counts = sql("SELECT run_loops AS n FROM memory_counts");
  const pages = sql(
    `SELECT (page_count - freelist_count) * page_size AS used FROM pragma_page_count(),
     pragma_freelist_count(), pragma_page_size()`,
  );
  const oldest = sql(
    `SELECT id, archived_at, archive_seq FROM run_loops WHERE archive_seq > ?
     ORDER BY archive_seq LIMIT ?`,
  );
  const segmentIds = sql("SELECT id FROM segments WHERE run_loop_id = ?");
  const unindex = sql(
    "DELETE FROM segments_fts WHERE rowid IN (SELECT id FROM segments WHERE run_loop_id = ?)",
  );
  const drop = sql("DELETE FROM run_loops WHERE id = ?");
  const unseed = sql(
    `UPDATE run_loops SET json = json_remove(json, '$.seededFrom')
     WHERE json_extract(json, '$.seededFrom') = ?`,
  );

  return {
    prune(policy, options = {}) {
      checkRetention(policy);
      const dryRun = options.dryRun ?? false;
      const limit = options.limit ?? Number.MAX_SAFE_INTEGER;
      const total = Number(counts.get()?.n ?? 0);
      let excess = policy.maxRunLoops === undefined ? 0 : total - policy.maxRunLoops;
      if (policy.maxBytes !== undefined && total > 0) {
        const used = Number(pages.get()?.used ?? 0);
        if (used > policy.maxBytes) {
          excess = Math.max(excess, Math.ceil((used - policy.maxBytes) / (used / total)));
        }
      }
      const cutoff = policy.maxAgeDays === undefined
        ? undefined
        : new Date((options.now ?? new Date()).getTime() - policy.maxAgeDays * _DAY)
          .toISOString();
      if (excess <= 0 && cutoff === undefined) return { runLoops: 0, segments: 0, dryRun };
      // Oldest first, a window at a time, until a window holds nothing to drop.
      const victims: string[] = [];
      for (let after = 0, seen = 0; victims.length < limit;) {
        const window = Math.min(Math.max(excess - seen, 0) + PRUNE_STEP, 4096);
        const rows = oldest.all(after, window) as Array<
          { id: string; archived_at: string; archive_seq: number }
        >;
        let found = false;
        for (const row of rows) {
          if (victims.length >= limit) break;
          if (seen++ < excess || (cutoff !== undefined && row.archived_at < cutoff)) {
            victims.push(row.id);
            found = true;
          }
        }
        if (!found || rows.length < window) break;
        after = rows[rows.length - 1].archive_seq;
      }
      let segments = 0;
      if (dryRun) {
        for (const id of victims) segments += segmentIds.all(id).length;
        return { runLoops: victims.length, segments, dryRun };
      }
      if (victims.length === 0) return { runLoops: 0, segments: 0, dryRun };
      db.exec("BEGIN IMMEDIATE");
      const gone: number[] = [];
      try {
        for (const id of victims) {
          const ids = (segmentIds.all(id) as Array<{ id: number }>).map((row) => row.id);
          segments += ids.length;
          gone.push(...ids);
          unindex.run(id);
          drop.run(id); // its segments and their vectors go with it (ON DELETE CASCADE)
          unseed.run(id);
        }
        db.exec("COMMIT");
      } catch (error) {
        if (db.isTransaction) db.exec("ROLLBACK");
        throw error;
      }
      options.dropped?.(gone);
      return { runLoops: victims.length, segments, dryRun };
    },
  };
}
