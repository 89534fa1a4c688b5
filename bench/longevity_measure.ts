/**
 * How `bench/longevity.ts` measures: timed samples within a budget, figures (median and p95)
 * against their targets printed as a table, the size of a directory, and the pages of a session
 * listing, found out from the store itself (it pages when `list(cwd, options)` gives a page; it
 * lists all otherwise).
 */

import { join } from "node:path";
import type { SessionInfo, SessionStore } from "../lib/session/mod.ts";

/** A measured figure. */
export interface Figure {
  /** What was measured. */
  name: string;
  /** How many samples. */
  samples: number;
  /** Their median, in ms. */
  median: number;
  /** Their 95th percentile, in ms. */
  p95: number;
  /** The target, as said in the table. */
  target?: string;
  /** Whether the median meets the target. */
  ok?: boolean;
}

/** The value at quantile `q` of sorted values (nearest rank). */
function _quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** Figures collected in order, and printed as a table. */
export interface Figures {
  /** Summarises timings as a figure, against a target in ms when given. */
  add(name: string, times: readonly number[], targetMs?: number): Figure;
  /** The table: one line per figure, its samples, median, p95, target, and whether it met it. */
  table(): string;
}

/** Collects figures; each is logged with `log` as it is made. */
export function figures(log: (text: string) => void): Figures {
  const all: Figure[] = [];
  return {
    add(name, times, targetMs) {
      const sorted = [...times].sort((a, b) => a - b);
      const figure: Figure = {
        name,
        samples: sorted.length,
        median: _quantile(sorted, 0.5),
        p95: _quantile(sorted, 0.95),
      };
      if (targetMs !== undefined) {
        figure.target = `≤ ${targetMs} ms`;
        figure.ok = figure.median <= targetMs;
      }
      all.push(figure);
      log(`  ${name}: median ${figure.median.toFixed(2)} ms, p95 ${figure.p95.toFixed(2)} ms`);
      return figure;
    },
    table() {
      const ms = (value: number) => `${value.toFixed(2).padStart(9)} ms`;
      const lines = [
        `${"figure".padEnd(60)} ${"n".padStart(5)} ${"median".padStart(12)} ${
          "p95".padStart(12)
        }  target`,
      ];
      for (const row of all) {
        const verdict = row.ok === undefined ? "" : row.ok ? "  ok" : "  MISSED";
        lines.push(
          `${row.name.padEnd(60)} ${String(row.samples).padStart(5)} ${ms(row.median)} ${
            ms(row.p95)
          }  ${row.target ?? ""}${verdict}`,
        );
      }
      return lines.join("\n");
    },
  };
}

/**
 * Times `work` up to `max` times within `budgetMs` (at least `min` samples whatever the
 * budget), after one call that is not counted (it warms caches); that call's time is `first`.
 */
export async function sample(
  work: () => Promise<unknown>,
  options: { max?: number; min?: number; budgetMs?: number } = {},
): Promise<{ times: number[]; first: number }> {
  const { max = 40, min = 3, budgetMs = 20_000 } = options;
  let start = performance.now();
  await work();
  const first = performance.now() - start;
  const times: number[] = [];
  const begun = performance.now();
  for (let i = 0; i < max; i++) {
    if (i >= min && performance.now() - begun > budgetMs) break;
    start = performance.now();
    await work();
    times.push(performance.now() - start);
  }
  return { times, first };
}

/** Bytes of the files under `path`, and how many files. */
export async function du(path: string): Promise<{ bytes: number; files: number }> {
  let bytes = 0;
  let files = 0;
  for await (const entry of Deno.readDir(path)) {
    const child = join(path, entry.name);
    if (entry.isDirectory) {
      const inner = await du(child);
      bytes += inner.bytes;
      files += inner.files;
    } else if (entry.isFile) {
      bytes += (await Deno.stat(child)).size;
      files++;
    }
  }
  return { bytes, files };
}

/** A page of a listing: its sessions, and the cursor of the next page when there is one. */
export interface Page {
  /** The sessions. */
  items: SessionInfo[];
  /** Where the next page starts. */
  cursor?: unknown;
}

/** How a store pages its listing. */
export interface Paging {
  /** Whether a page can start at an offset (`{ offset }`). */
  offset: boolean;
  /** Whether a page can start at the cursor the page before gave (`{ cursor }`). */
  cursor: boolean;
  /** A page of `limit` sessions (of `cwd`, or all), from `start` (an offset or a cursor). */
  page(
    cwd: string | undefined,
    limit: number,
    start?: { offset?: number; cursor?: unknown },
  ): Promise<Page>;
  /** The cursor of the page at `depth`, found without timing (by offset where it can). */
  cursorAt(cwd: string | undefined, limit: number, depth: number): Promise<unknown>;
}

type _ListWith = (cwd: string | undefined, options: Record<string, unknown>) => Promise<unknown>;

/** A listing's answer as a page: an array, or an object holding the sessions and a cursor. */
function _asPage(result: unknown): Page {
  if (Array.isArray(result)) return { items: result };
  const record = result as Record<string, unknown>;
  const items = (record.sessions ?? record.items ?? record.page ?? record.data) as SessionInfo[];
  if (!Array.isArray(items)) throw new Error("A listing page holds no sessions array");
  const cursor = record.next ?? record.nextCursor ?? record.cursor;
  return cursor === undefined || cursor === null ? { items } : { items, cursor };
}

/**
 * How `store` pages (`list(cwd, { limit, offset })`, `list(cwd, { limit, cursor })`), found by
 * asking for pages of 2 of a project `cwd` known to hold more; nothing when `list` gives all
 * whatever it is asked.
 */
export async function pagingOf(store: SessionStore, cwd: string): Promise<Paging | undefined> {
  const list = store.list as unknown as _ListWith;
  const first = _asPage(await list(cwd, { limit: 2 }));
  if (first.items.length > 2) return undefined;
  const second = await list(cwd, { limit: 2, offset: 2 }).then(_asPage, () => undefined);
  const offset = second !== undefined && second.items[0]?.id !== first.items[0]?.id;
  const cursor = first.cursor !== undefined;
  if (!offset && !cursor) throw new Error("list() pages, but neither by offset nor by cursor");
  const page: Paging["page"] = async (where, limit, start = {}) =>
    _asPage(await list(where, { limit, ...start }));
  return {
    offset,
    cursor,
    page,
    async cursorAt(where, limit, depth) {
      if (depth === 0) return undefined;
      if (offset) return (await page(where, limit, { offset: depth - limit })).cursor;
      let at: unknown;
      for (let seen = 0; seen < depth; seen += limit) {
        at = (await page(where, limit, at === undefined ? {} : { cursor: at })).cursor;
        if (at === undefined) break;
      }
      return at;
    },
  };
}
