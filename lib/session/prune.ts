/**
 * Pruning a sessions directory: removing the session files (and their rows of the index) that
 * are older than an age, or past the newest few of each project. A session another process
 * writes is never removed: its writer holds a lock on the file (see `writer_lock.ts`), which
 * pruning takes before it removes a file, and a file it cannot lock is left as it is.
 *
 * @module
 */

import { join } from "node:path";
import { sessionFileIndex } from "./file_index.ts";
import type { IndexedSession } from "./index_db.ts";
import { mtimeOf, summarizeSessionFile } from "./file_summary.ts";
import { SessionError } from "./store.ts";
import { lockSessionFile } from "./writer_lock.ts";

/** Options of {@link pruneSessions}. */
export interface PruneSessionsOptions {
  /** Remove only sessions last updated longer ago than this (ms). */
  olderThan?: number;
  /** Keep the newest this many sessions of each project, whatever their age. */
  keep?: number;
  /** Say what would be removed, and remove nothing. */
  dryRun?: boolean;
  /** The time ages are counted from (default: now). */
  now?: Date;
}

/** A session pruning removed (or would remove, or left because it is being written). */
export interface PrunedSession {
  /** The session id. */
  id: string;
  /** Its project's directory. */
  cwd: string;
  /** Its last update (ISO 8601). */
  updated: string;
  /** The size of its file. */
  bytes: number;
}

/** A session pruning picked but could not remove, and why. */
export interface KeptSession extends PrunedSession {
  /** Why it is kept, as the system said (e.g. the user may not write its file). */
  reason: string;
}

/** What {@link pruneSessions} did. */
export interface PruneResult {
  /** The sessions removed (with `dryRun`: those that would be). */
  removed: PrunedSession[];
  /** The sessions the rules picked that another process is writing: left as they are. */
  busy: PrunedSession[];
  /**
   * The sessions the rules picked that could not be removed (a file the user may not write,
   * or may not remove): left as they are, and the others removed all the same.
   */
  kept: KeptSession[];
  /** The bytes freed (with `dryRun`: that would be). */
  bytes: number;
}

/**
 * Removes the sessions of the directory `dir` (as `fileSessionStore` keeps them) that are
 * older than `olderThan` and not among the `keep` newest of their project (each rule applies
 * when given; one of them must be). Newest means last updated. A session being written is left,
 * and so is one whose file cannot be written or removed (said in `kept`). A dry run needs only
 * leave to read: it opens no file for writing unless Deno grants writing it.
 *
 * @example
 * ```ts
 * import { fileSessionStore } from "./file_store.ts";
 * import { pruneSessions } from "./prune.ts";
 * const dir = await Deno.makeTempDir();
 * const store = fileSessionStore({ dir });
 * for (let i = 0; i < 3; i++) await (await store.create({ cwd: "/w", model: "a/b" })).close();
 * const { removed, bytes } = await pruneSessions(dir, { keep: 1 });
 * if (removed.length !== 2 || bytes <= 0 || (await store.list("/w")).length !== 1) {
 *   throw new Error("unexpected");
 * }
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function pruneSessions(
  dir: string,
  options: PruneSessionsOptions,
): Promise<PruneResult> {
  const { olderThan, keep, dryRun = false } = options;
  if (olderThan === undefined && keep === undefined) {
    throw new TypeError("Say which sessions to remove: those older than an age, or past a number");
  }
  if (olderThan !== undefined && !(olderThan >= 0)) {
    throw new RangeError(`An age is ≥ 0 ms, not ${olderThan}`);
  }
  if (keep !== undefined && !(Number.isInteger(keep) && keep >= 0)) {
    throw new RangeError(`The sessions kept are a whole number ≥ 0, not ${keep}`);
  }
  const cutoff = olderThan === undefined ? undefined : (options.now ?? new Date()).getTime() -
    olderThan;
  const old = (updated: string) => cutoff === undefined || _ms(updated) < cutoff;
  const index = sessionFileIndex(dir);
  const seen = new Map<string, number>();
  const picked: IndexedSession[] = [];
  for (const row of await index.rows()) {
    const project = `${row.folder}\n${row.cwd}`;
    const rank = (seen.get(project) ?? 0) + 1;
    seen.set(project, rank);
    if ((keep === undefined || rank > keep) && old(row.updated)) picked.push(row);
  }
  const result: PruneResult = { removed: [], busy: [], kept: [], bytes: 0 };
  try {
    await _remove(picked);
  } finally {
    await index.close();
  }
  return result;

  async function _remove(picked: IndexedSession[]): Promise<void> {
    for (const row of picked) {
      const path = join(dir, row.folder, `${row.file}.jsonl`);
      const session = { id: row.id, cwd: row.cwd, updated: row.updated, bytes: row.size };
      const keep = (error: unknown) => result.kept.push({ ...session, reason: _reason(error) });
      // Opened for writing as a check that it may be removed, but by a dry run only when Deno
      // grants writing it: a dry run needs no more than leave to read.
      const write = !dryRun ||
        Deno.permissions.querySync({ name: "write", path }).state === "granted";
      let file: Deno.FsFile;
      try {
        if (!(await Deno.lstat(path)).isFile) continue; // not a session file (a link)
        file = await Deno.open(path, { read: true, write });
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) keep(error);
        continue;
      }
      try {
        try {
          lockSessionFile(file, row.id);
        } catch (error) {
          if (!(error instanceof SessionError && error.reason === "busy")) throw error;
          result.busy.push(session);
          continue;
        }
        // Held now: what the file says is final. Written since it was listed, it may be new.
        const now = await summarizeSessionFile(path).catch(() => undefined);
        if (!now || !old(now.info.updated)) continue;
        session.updated = now.info.updated;
        session.bytes = now.size;
        if (!dryRun) {
          const before = _mtime(join(dir, row.folder));
          try {
            await Deno.remove(path);
          } catch (error) {
            if (!(error instanceof Deno.errors.NotFound)) keep(error);
            continue;
          }
          index.removed(path, before);
        }
        result.removed.push(session);
        result.bytes += session.bytes;
      } finally {
        file.close();
      }
    }
  }
}

/** What the system said of a file, without the file's path (a report names the session). */
function _reason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/: \w+ '[^']*'$/, "").replace(/ to "[^"]*"/, "");
}

function _ms(iso: string): number {
  const time = Date.parse(iso);
  return Number.isNaN(time) ? 0 : time;
}

function _mtime(path: string): number | undefined {
  try {
    return mtimeOf(Deno.statSync(path));
  } catch {
    return undefined;
  }
}
