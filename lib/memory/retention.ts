/**
 * Retention: how much of the past a memory keeps. A policy bounds the run loops kept by age,
 * by number and by the database's size; what it no longer keeps is dropped oldest first (by
 * the order they were archived), whole: the run loop, its segments, their full-text index rows
 * and their vectors, in one transaction. Nothing is left pointing at what was dropped: a run
 * loop that went on from a dropped one (`seededFrom`) no longer names it. What remains is found
 * by recall as before, its anchors unchanged.
 *
 * Before that, older run loops can be cut down to their outline (`detailDays`): the goal, what
 * the user said and the answers stay, searchable under the same anchors; the reasoning, the
 * tool calls and their results (most of the bytes) go, and the run loop records when
 * (`detailDroppedAt`).
 *
 * A bound in bytes drops the oldest run loops one at a time while the pages in use are more than
 * the bound, read again after each: what a run loop gives back is measured, not guessed from an
 * average (the oldest can be far larger or smaller than the rest), nor from its rows' lengths
 * (a row can hold a page of its own; the full-text index gives back its share only when it is
 * merged). So no more go than it takes, and a dry run (which does the same, then undoes it)
 * says exactly what a pruning would drop.
 *
 * Applied after each archive, a step drops at most {@link PRUNE_STEP} run loops and reads only
 * the oldest ones, through an index, and counters kept by triggers: its cost does not grow with
 * the memory. It waits until a batch is due ({@link pruneBatch}): dropping 64 run loops together
 * costs a fifth as much each as dropping them one archive at a time (the rows of old run loops
 * share pages), and an archive that finds nothing due reads two rows.
 *
 * @module
 */

import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { RunLoop } from "./types.ts";

/** How much a memory keeps; each bound is optional, and none means keep everything. */
export interface RetentionPolicy {
  /**
   * Run loops archived longer ago than this many days are dropped (after an archive, once a
   * batch of them is due or the oldest has been due for a day: see {@link pruneBatch}).
   */
  maxAgeDays?: number;
  /**
   * Only the newest this many run loops are kept. After an archive, the oldest go in batches
   * (see {@link pruneBatch}), so that up to 1% more (at most 63) can wait a while.
   */
  maxRunLoops?: number;
  /**
   * The oldest run loops are dropped while the database holds more than this many bytes (the
   * pages in use; space freed is reused, and given back to the file system by `vacuum()`).
   */
  maxBytes?: number;
  /**
   * Run loops archived longer ago than this many days keep only their outline: their
   * reasoning, tool calls and tool results are dropped.
   */
  detailDays?: number;
}

/** What a pruning dropped (or, on a dry run, would drop). */
export interface PruneResult {
  /** Run loops. */
  runLoops: number;
  /** Run loops cut down to their outline. */
  outlined: number;
  /** The segments dropped, of both. */
  segments: number;
  /** Whether nothing was changed. */
  dryRun: boolean;
}

/** The most run loops a step after an archive drops. */
export const PRUNE_STEP = 64;

/** A day, in milliseconds. */
const _DAY = 86_400_000;

/**
 * How many run loops due to go a step after an archive waits for: 1% of `maxRunLoops`, at
 * most {@link PRUNE_STEP}, at least 1 (then nothing waits); {@link PRUNE_STEP} without a
 * bound by number. Run loops due by age (or their detail, by `detailDays`) also go when the
 * oldest of them has been due for a day. A bound in bytes does not wait.
 *
 * @example
 * ```ts
 * import { pruneBatch } from "./retention.ts";
 * if (pruneBatch({ maxRunLoops: 10_000 }) !== 64) throw new Error("unexpected");
 * if (pruneBatch({ maxRunLoops: 500 }) !== 5 || pruneBatch({ maxRunLoops: 5 }) !== 1) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function pruneBatch(policy: RetentionPolicy): number {
  const { maxRunLoops } = policy;
  if (maxRunLoops === undefined) return PRUNE_STEP;
  return Math.max(1, Math.min(PRUNE_STEP, Math.floor(maxRunLoops / 100)));
}

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
  const { maxAgeDays, maxRunLoops, maxBytes, detailDays } = policy;
  for (const [name, value] of [["maxAgeDays", maxAgeDays], ["detailDays", detailDays]] as const) {
    if (value !== undefined && !(typeof value === "number" && value > 0)) {
      throw new RangeError(`Bad retention ${name} ${value}: use a number of days above 0`);
    }
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
   * Drops what `policy` does not keep, oldest first; at most `limit` run loops dropped (and as
   * many outlined). With `dryRun`, does the same and undoes it, so that it says exactly what
   * would go. `dropped` hears the ids of the segments dropped. Within a transaction the caller
   * holds, it works in that one.
   */
  prune(
    policy: RetentionPolicy,
    options?: {
      limit?: number;
      dryRun?: boolean;
      now?: Date;
      dropped?: (ids: number[]) => void;
      /** Do nothing until a batch is due ({@link pruneBatch}): the step after an archive. */
      batched?: boolean;
    },
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
 * db.exec(`INSERT INTO run_loops (id, status, created_at, archived_at, archive_seq, json) VALUES
 *   ('old', 'completed', '', '2020-01-01T00:00:00Z', 1, '{}'),
 *   ('new', 'completed', '', '2026-01-01T00:00:00Z', 2, '{"seededFrom":"old"}');`);
 * const result = pruner(db).prune({ maxRunLoops: 1 });
 * const kept = db.prepare("SELECT id, json FROM run_loops").all();
 * if (result.runLoops !== 1 || kept.length !== 1 || kept[0].json !== "{}") throw new Error();
 * db.close();
 * ```
 */
export function pruner(db: DatabaseSync): Pruner {
  const sql = (text: string): StatementSync => db.prepare(text);
  const runLoops = sql("SELECT run_loops AS n FROM memory_counts");
  // The pages in use, read again as run loops go: within a transaction, as it stands.
  const usedBytes = sql(
    `SELECT (page_count - freelist_count) * page_size AS used
     FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()`,
  );
  const oldest = sql(
    `SELECT id, archived_at, archive_seq FROM run_loops WHERE archive_seq > ?
     ORDER BY archive_seq LIMIT ?`,
  );
  const detailed = sql(
    `SELECT id, archived_at, archive_seq FROM run_loops WHERE detail = 1 AND archive_seq > ?
     ORDER BY archive_seq LIMIT ?`,
  );
  // When the oldest run loop, or the one at an offset, was archived (of those with detail).
  const oldestAt = sql("SELECT archived_at FROM run_loops ORDER BY archive_seq LIMIT 1 OFFSET ?");
  const detailedAt = sql(
    "SELECT archived_at FROM run_loops WHERE detail = 1 ORDER BY archive_seq LIMIT 1 OFFSET ?",
  );
  const segmentIds = sql("SELECT id FROM segments WHERE run_loop_id = ?");
  const detailIds = sql(
    `SELECT id FROM segments WHERE run_loop_id = ?
     AND type IN ('reasoning', 'tool_call', 'tool_result')`,
  );
  const unindex = sql("DELETE FROM segments_fts WHERE rowid IN (SELECT value FROM json_each(?))");
  const deleteSegments = sql("DELETE FROM segments WHERE id IN (SELECT value FROM json_each(?))");
  const drop = sql("DELETE FROM run_loops WHERE id = ?");
  const unseed = sql(
    `UPDATE run_loops SET json = json_remove(json, '$.seededFrom')
     WHERE json_extract(json, '$.seededFrom') = ?`,
  );
  const loopJson = sql("SELECT json FROM run_loops WHERE id = ?");
  const outline = sql("UPDATE run_loops SET json = ?, detail = 0 WHERE id = ?");
  const uncount = sql("UPDATE memory_counts SET segments = segments - ?");
  // The words searches found common were counted in what goes: they are counted again.
  const forgetCommon = sql("DELETE FROM fts_common_terms");

  /**
   * Oldest first, the run loops `take` picks (and acts on), up to the first it does not: read a
   * window at a time, the first of `first` rows (one more than is known to go: in the steady
   * state, one archive in and one out, two rows are read).
   */
  const walk = (
    statement: StatementSync,
    limit: number,
    take: (row: _Row, position: number) => boolean,
    first: number,
  ): number => {
    let picked = 0;
    for (let after = 0, window = first; picked < limit; window = PRUNE_STEP) {
      const size = Math.min(window, limit - picked + 1, 4096);
      const rows = statement.all(after, size) as unknown as _Row[];
      for (const row of rows) {
        if (picked >= limit || !take(row, picked)) return picked;
        picked++;
      }
      if (rows.length < size) break;
      after = rows[rows.length - 1].archive_seq;
    }
    return picked;
  };
  const ids = (statement: StatementSync, id: string) =>
    (statement.all(id) as Array<{ id: number }>).map((row) => row.id);

  return {
    prune(policy, options = {}) {
      checkRetention(policy);
      const dryRun = options.dryRun ?? false;
      const limit = options.limit ?? Number.MAX_SAFE_INTEGER;
      const now = (options.now ?? new Date()).getTime();
      const before = (days?: number) =>
        days === undefined ? undefined : new Date(now - days * _DAY).toISOString();
      const { maxRunLoops, maxBytes } = policy;
      const cutoff = before(policy.maxAgeDays);
      const detailCutoff = before(policy.detailDays);
      const over = () => maxBytes !== undefined && Number(usedBytes.get()?.used) > maxBytes;
      let total = maxRunLoops === undefined && maxBytes === undefined
        ? 0
        : Number(runLoops.get()?.n ?? 0);
      const excess = maxRunLoops === undefined ? 0 : total - maxRunLoops;
      const result = { runLoops: 0, outlined: 0, segments: 0, dryRun };
      const overBound = over();
      if (excess <= 0 && cutoff === undefined && detailCutoff === undefined && !overBound) {
        return result;
      }
      if (options.batched && !dryRun && !overBound) {
        // A batch is due, or one run loop has been due by age for a day.
        const batch = pruneBatch(policy);
        const at = (statement: StatementSync, offset: number) =>
          statement.get(offset)?.archived_at as string | undefined;
        const dueBy = (statement: StatementSync, before?: string) => {
          if (before === undefined) return false;
          const first = at(statement, 0);
          if (first === undefined || !(first < before)) return false;
          const long = new Date(new Date(before).getTime() - _DAY).toISOString();
          const nth = at(statement, batch - 1);
          return first < long || (nth !== undefined && nth < before);
        };
        if (excess < batch && !dueBy(oldestAt, cutoff) && !dueBy(detailedAt, detailCutoff)) {
          return result;
        }
      }
      if (dryRun && !overBound) {
        // Counted: nothing to measure.
        const victims: string[] = [];
        walk(oldest, limit, (row, i) => {
          if (!(i < excess || (cutoff !== undefined && row.archived_at < cutoff))) return false;
          victims.push(row.id);
          return true;
        }, Math.max(excess, 0) + 1);
        const outlined: string[] = [];
        if (detailCutoff !== undefined) {
          const dropping = new Set(victims);
          walk(detailed, limit + victims.length, (row) => {
            if (dropping.has(row.id)) return true;
            if (!(row.archived_at < detailCutoff)) return false;
            outlined.push(row.id);
            return true;
          }, victims.length + 1);
        }
        result.runLoops = victims.length;
        result.outlined = Math.min(outlined.length, limit);
        for (const id of victims) result.segments += ids(segmentIds, id).length;
        for (const id of outlined.slice(0, limit)) result.segments += ids(detailIds, id).length;
        return result;
      }
      // Inside the caller's transaction (after an archive, its pages are written once), or in
      // one of its own; a dry run over the bound in bytes does the same, then undoes it.
      const own = !db.isTransaction;
      db.exec(own ? "BEGIN IMMEDIATE" : "SAVEPOINT prune");
      const gone: number[] = [];
      const dropLoop = (id: string) => {
        const segments = ids(segmentIds, id);
        gone.push(...segments);
        unindex.run(JSON.stringify(segments));
        drop.run(id); // its segments and their vectors go with it (ON DELETE CASCADE)
        unseed.run(id);
        total--;
      };
      try {
        // By number and by age, then by size: the oldest, one at a time, while the pages in use
        // are more than the bound (what a run loop gives back is measured, not guessed); never
        // the newest, as a bound below one run loop's size keeps that one.
        result.runLoops = walk(oldest, limit, (row, i) => {
          if (!(i < excess || (cutoff !== undefined && row.archived_at < cutoff))) return false;
          dropLoop(row.id);
          return true;
        }, Math.max(excess, 0) + 1);
        if (maxBytes !== undefined) {
          result.runLoops += walk(oldest, limit - result.runLoops, (row) => {
            if (total <= 1 || !over()) return false;
            dropLoop(row.id);
            return true;
          }, 2);
        }
        const at = new Date(now).toISOString();
        result.outlined = detailCutoff === undefined ? 0 : walk(detailed, limit, (row) => {
          if (!(row.archived_at < detailCutoff)) return false;
          const segments = JSON.stringify(ids(detailIds, row.id));
          gone.push(...JSON.parse(segments));
          unindex.run(segments);
          deleteSegments.run(segments); // and their vectors
          const json = loopJson.get(row.id)?.json as string;
          outline.run(JSON.stringify(_outline(JSON.parse(json), at)), row.id);
          return true;
        }, 2);
        uncount.run(gone.length);
        // A step after an archive drops a small part of the memory, and what it recorded ages
        // out as the memory grows (see fts_search.ts); a pruning can drop most of it.
        if (gone.length > 0 && !options.batched) forgetCommon.run();
        result.segments = gone.length;
        if (dryRun) db.exec(own ? "ROLLBACK" : "ROLLBACK TO prune; RELEASE prune");
        else db.exec(own ? "COMMIT" : "RELEASE prune");
      } catch (error) {
        if (own && db.isTransaction) db.exec("ROLLBACK");
        else if (!own) db.exec("ROLLBACK TO prune; RELEASE prune");
        throw error;
      }
      if (!dryRun && gone.length > 0) options.dropped?.(gone);
      return result;
    },
  };
}

interface _Row {
  id: string;
  archived_at: string;
  archive_seq: number;
}

/** A run loop without its reasoning, tool calls and tool results. */
function _outline(loop: RunLoop, at: string): RunLoop {
  return {
    ...loop,
    iterations: loop.iterations.map((iteration) => ({
      ...iteration,
      reasoning: [],
      toolCalls: [],
      toolResults: [],
    })),
    detailDroppedAt: at,
  };
}
