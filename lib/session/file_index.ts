/**
 * Finding session files without listing them: the index (`index_db.ts`) kept in step with the
 * files of a sessions directory.
 *
 * The files are the truth; the index is trusted only as far as the file system vouches for it:
 *
 * - A folder's files are compared with its rows only when the folder's modification time is
 *   not the one recorded (a file was added, removed or renamed). A session this library creates
 *   records its row, and the folder's new time when nothing else changed the folder meanwhile,
 *   so its own work never calls for a comparison. It is recorded when the index is next asked
 *   anything, or when its writer first says what it wrote (at the latest when it closes, after
 *   the run's answer), so that a run that looks nothing up opens the index once; a process that
 *   stops before leaves the session to be found as another program's file is. (What this cannot see:
 *   a file another program adds in the same tick of the file system's clock, a few ms, as this
 *   library adds one. Such a file is found by its whole id at once, and listed once its folder
 *   is compared again.)
 * - A row is shown only once its file's size and modification time are those recorded; a file
 *   changed behind the index's back (appended by another program, cut off by a crash) is read
 *   again first. A row whose file is gone sends the lookup to compare the folders.
 * - A writer records what it wrote when it closes (and, while it writes, at most once a second),
 *   so that listings stay in order without reading the files again.
 * - Only regular files are sessions: a link (to a file anywhere) or a folder named like a session
 *   file is neither listed nor found by id.
 *
 * The index lives in the sessions directory when Deno grants reading and writing there; else,
 * or when it cannot be opened, in memory (built from the files once per process). A damaged
 * index file is deleted and built again.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import {
  type IndexedSession,
  isDamagedIndex,
  isIndexError,
  OLD_SESSION_INDEX_FILES,
  openSessionIndexDb,
  SESSION_INDEX_FILE,
  type SessionIndexDb,
} from "./index_db.ts";
import { type FileSummary, mtimeOf, subdirs, summarizeSessionFile } from "./file_summary.ts";
import { sessionCursor, type SessionQuery, sessionSortKey } from "./page.ts";
import { SessionError, type SessionHeader, type SessionInfo, type SessionPage } from "./store.ts";

/** What a writer tells the index of its session. */
export interface WrittenSession {
  /** Messages the session holds. */
  messages: number;
  /** Its last entry's time (ISO 8601). */
  updated: string;
  /** Its title. */
  title: string;
  /** Its file's size and modification time (ms) now. */
  size: number;
  /** Its file's modification time now (ms). */
  mtime: number;
}

/** The index of a sessions directory. */
export interface SessionFileIndex {
  /** The file of the session an id or unique prefix names; a `SessionError` otherwise. */
  find(idOrPrefix: string, hint: string): Promise<string>;
  /**
   * A page of sessions, of `cwd`'s project folder when given (`limit` -1: all); `total` is
   * counted only when `counted` (default true; else -1).
   */
  page(
    cwd: string | undefined,
    folder: string | undefined,
    query: SessionQuery,
    counted?: boolean,
  ): Promise<SessionPage>;
  /**
   * Runs `create` (which makes a session file in `folder`, its header written) so that the
   * folder's change is the index's own, then records the session from the header as written.
   */
  created<T>(
    folder: string,
    create: () => Promise<{ result: T; path: string; header?: SessionHeader }>,
  ): Promise<T>;
  /** Records what a writer wrote (it holds the file, so nothing else writes it). */
  written(path: string, state: WrittenSession): void;
  /** Records that this process removed a session file, the folder's change its own. */
  removed(path: string, before: number | undefined): void;
  /** The index's rows of every readable session, unverified (for pruning, which checks). */
  rows(): Promise<IndexedSession[]>;
  /** Closes the index's database, once what this process does to it is done. */
  close(): Promise<void>;
}

/**
 * How long a tick of the file system's clock may last (ms): a folder's time is trusted only
 * when the folder was read after its tick.
 */
const _TICK_MS = 25;

/** Sessions whose summary is read at once. */
const _BATCH = 64;

/** What one process does to one directory's index, one at a time. */
const _queues = new Map<string, Promise<unknown>>();

/**
 * The index of the sessions directory `dir`, opened on first use.
 *
 * @example
 * ```ts
 * import { sessionFileIndex } from "./file_index.ts";
 * import { sessionQuery } from "./page.ts";
 * const dir = await Deno.makeTempDir();
 * const index = sessionFileIndex(dir);
 * const page = await index.page(undefined, undefined, sessionQuery({}));
 * if (page.total !== 0) throw new Error("unexpected");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function sessionFileIndex(dir: string): SessionFileIndex {
  let opened: SessionIndexDb | undefined;
  /**
   * Sessions made by this process and not recorded yet, by file: recorded when the index is
   * next asked anything, or when their writer says what it wrote (at the latest when it closes,
   * after the run's answer), with what it wrote: one transaction for a run's session, and a run
   * that looks nothing up opens the index once. Should the process stop first, the index finds
   * them as it finds a file another program made.
   */
  const made = new Map<string, _Made>();
  /**
   * Whether the store let go of the index (`close`) and has not been asked anything since: a
   * writer that outlives it records what it wrote and lets go again.
   */
  let released = false;
  const letGo = () => {
    const closing = opened;
    opened = undefined;
    closing?.close();
  };
  const db = (): SessionIndexDb => {
    const index = opened ?? openIndex();
    for (const [path, session] of made) {
      made.delete(path);
      try {
        _record(index, session);
      } catch { /* the index finds it from the files */ }
    }
    return index;
  };
  const openIndex = (): SessionIndexDb => {
    // No directory yet, no sessions: nothing is kept until there is somewhere to keep it.
    if (_mtimeSync(dir) === undefined) return openSessionIndexDb(":memory:");
    const path = join(dir, SESSION_INDEX_FILE);
    const granted = (name: "read" | "write") =>
      Deno.permissions.querySync({ name, path }).state === "granted";
    try {
      if (granted("read") && granted("write")) {
        const made = _mtimeSync(path) === undefined;
        opened = openSessionIndexDb(path);
        // An earlier version's index is left for this one: it goes once this one is made.
        for (const old of made ? OLD_SESSION_INDEX_FILES : []) {
          for (const suffix of ["", "-wal", "-shm"]) {
            try {
              Deno.removeSync(join(dir, old + suffix));
            } catch { /* not there */ }
          }
        }
        return opened;
      }
    } catch {
      // Not ours to open here (a read-only directory, another user's file): kept in memory.
    }
    return opened = openSessionIndexDb(":memory:");
  };
  /** Runs `work` again on a new index when the index fails (damaged: made again from the files). */
  const guarded = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (!isIndexError(error) || !opened) throw error;
      const persistent = opened.persistent && isDamagedIndex(error);
      try {
        opened.close();
      } catch { /* closed */ }
      opened = undefined;
      if (persistent) {
        for (const suffix of ["", "-wal", "-shm"]) {
          await Deno.remove(join(dir, SESSION_INDEX_FILE + suffix)).catch(() => {});
        }
      } else opened = openSessionIndexDb(":memory:");
      return await work();
    }
  };
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const done = (_queues.get(dir) ?? Promise.resolve()).then(() => guarded(work));
    const settled = done.catch(() => {});
    _queues.set(dir, settled);
    settled.then(() => {
      if (_queues.get(dir) === settled) _queues.delete(dir);
    });
    return done;
  };

  /** Brings the rows of `folder` (every folder when undefined) in step with the files. */
  const freshen = async (folder?: string | null): Promise<void> => {
    const index = db();
    const root = await _mtime(dir);
    if (root === undefined) {
      index.apply({ dropFolders: index.folders(), dirs: [{ name: "", mtime: -1 }] });
      return;
    }
    if (index.dirMtime("") !== root) {
      const settled = Date.now() - root > _TICK_MS;
      const names = await subdirs(dir);
      const known = new Set(index.folders());
      const gone = [...known].filter((name) => !names.includes(name));
      const mtime = settled ? root : -1;
      index.apply({ dropFolders: gone, addFolders: names, dirs: [{ name: "", mtime }] });
    }
    if (folder === null) return; // the folders are known: enough to look for one file
    const folders = folder === undefined ? index.folders() : [folder];
    for (let i = 0; i < folders.length; i += _BATCH) {
      const batch = folders.slice(i, i + _BATCH);
      const times = await Promise.all(batch.map((name) => _mtime(join(dir, name))));
      for (const [k, name] of batch.entries()) {
        const time = times[k];
        if (time === undefined) {
          if (index.dirMtime(name) !== undefined) index.apply({ dropFolders: [name] });
        } else if (index.dirMtime(name) !== time) await reconcile(name, time);
      }
    }
  };

  /** Compares a folder's files with its rows: reads the new and changed, drops the gone. */
  const reconcile = async (folder: string, time: number): Promise<void> => {
    const index = db();
    const path = join(dir, folder);
    // A file added in the same tick of the file system's clock as the time read leaves it
    // as it was: that time is recorded only once its tick is over, else compared again.
    const settled = Date.now() - time > _TICK_MS;
    const names: string[] = [];
    try {
      for await (const entry of Deno.readDir(path)) {
        if (entry.isFile && entry.name.endsWith(".jsonl")) names.push(entry.name);
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    const stamps = index.stamps(folder);
    const upsert: IndexedSession[] = [];
    for (let i = 0; i < names.length; i += _BATCH) {
      const batch = names.slice(i, i + _BATCH).map(async (name) => {
        const file = join(path, name);
        const stamp = stamps.get(basename(name, ".jsonl"));
        if (stamp) {
          const now = await Deno.stat(file).catch(() => undefined);
          if (now && now.size === stamp.size && mtimeOf(now) === stamp.mtime) return undefined;
        }
        return await _read(file);
      });
      for (const row of await Promise.all(batch)) if (row) upsert.push(row);
    }
    const present = new Set(names.map((name) => basename(name, ".jsonl")));
    const remove = [...stamps.keys()].filter((file) => !present.has(file))
      .map((file) => ({ folder, file }));
    index.apply({ upsert, remove, dirs: [{ name: folder, mtime: settled ? time : -1 }] });
  };

  /** Reads again the rows whose file changed: whether all were in step, or one is gone. */
  const verify = async (rows: IndexedSession[]): Promise<"ok" | "changed" | "gone"> => {
    const index = db();
    const changed = await Promise.all(rows.map(async (row) => {
      const path = join(dir, row.folder, `${row.file}.jsonl`);
      const now = await Deno.lstat(path).catch(() => undefined);
      if (!now?.isFile) return null;
      if (now.size === row.size && mtimeOf(now) === row.mtime) return undefined;
      return await _read(path);
    }));
    const upsert = changed.filter((row): row is IndexedSession => !!row);
    if (upsert.length) index.apply({ upsert });
    return changed.includes(null) ? "gone" : upsert.length ? "changed" : "ok";
  };

  /** The file of a whole id, looked for in every folder (a row written for it when found). */
  const probe = async (file: string): Promise<IndexedSession | undefined> => {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(file)) return undefined;
    for (const folder of db().folders()) {
      const row = await _read(join(dir, folder, `${file}.jsonl`));
      if (row) {
        db().apply({ upsert: [row] });
        return row;
      }
    }
    return undefined;
  };

  return {
    find: (idOrPrefix, hint) =>
      guarded(async () => {
        released = false;
        const exact = db().byFile(idOrPrefix);
        if (exact && await _isFile(_pathOf(dir, exact))) return _pathOf(dir, exact);
        // A whole id is looked for as a file first: no folder needs comparing to find it.
        await serial(() => freshen(null));
        const file = await probe(idOrPrefix);
        if (file) return _pathOf(dir, file);
        await serial(() => freshen());
        const again = db().byFile(idOrPrefix);
        if (again && await _isFile(_pathOf(dir, again))) return _pathOf(dir, again);
        const { files, total } = idOrPrefix
          ? db().byPrefix(idOrPrefix, 11)
          : { files: [], total: 0 };
        if (total === 1 && await _isFile(_pathOf(dir, files[0]))) return _pathOf(dir, files[0]);
        if (total <= 1) {
          throw new SessionError(`No session matches "${idOrPrefix}". ${hint}`.trim(), {
            reason: "not_found",
          });
        }
        const shown = files.slice(0, 10).map((row) => row.file).join(", ") +
          (total > 10 ? ", …" : "");
        throw new SessionError(
          `Session id "${idOrPrefix}" is ambiguous: it starts ${total} sessions (${shown}). ` +
            `Type more of the id.`,
          { reason: "ambiguous" },
        );
      }),
    page: (cwd, folder, query, counted = true) =>
      guarded(async () => {
        released = false;
        await serial(() => freshen(folder));
        for (let round = 0;; round++) {
          const { rows, total } = db().page(cwd, folder, query, counted);
          // A row whose file changed is read again; then the page is asked again, in order.
          const checked = round === 3 ? "ok" : await verify(rows);
          if (checked === "ok") {
            const more = query.after || !counted
              ? rows.length === query.limit
              : query.offset + rows.length < total;
            const last = rows.at(-1);
            return {
              sessions: rows.map(_info),
              total,
              ...(query.limit > 0 && more && last
                ? { next: sessionCursor({ ...sessionSortKey(last), folder: last.folder }) }
                : {}),
            };
          }
          if (checked === "gone") await serial(() => freshen(folder));
        }
      }),
    created: (folder, create) =>
      serial(async () => {
        released = false;
        // Stats a few µs long, made synchronously: a trip through the I/O threads costs more.
        const before = _mtimeSync(join(dir, folder));
        // A file made in a folder there already leaves the sessions directory as it was.
        const root = before === undefined ? _mtimeSync(dir) : undefined;
        const { result, path, header } = await create();
        try {
          const row = header ? _newRow(folder, path, header) : await _read(path);
          const session: _Made = {
            folder,
            row,
            before,
            now: _mtimeSync(join(dir, folder)),
            root,
            rootNow: before === undefined ? _mtimeSync(dir) : undefined,
          };
          if (row) made.set(path, session);
          else _record(db(), session);
        } catch (error) {
          if (!isIndexError(error)) throw error;
          // The session is made; the index catches up from the files when next asked.
        }
        return result;
      }),
    written(path, state) {
      try {
        const session = made.get(path);
        if (session?.row) {
          // Recorded with those made before it, in the order they were made.
          session.row = { ...session.row, ...state };
          db();
          return;
        }
        const index = db();
        const folder = basename(dirname(path));
        const file = basename(path, ".jsonl");
        const row = index.byFile(file);
        if (!row || row.folder !== folder) return;
        index.apply({ upsert: [{ ...row, ...state }] });
      } catch {
        // The index is a cache: a row out of step is read again from its file.
      } finally {
        if (released) letGo();
      }
    },
    removed(path, before) {
      try {
        const index = db();
        const folder = basename(dirname(path));
        const now = _mtimeSync(dirname(path));
        const dirs = now !== undefined && index.dirMtime(folder) === before
          ? [{ name: folder, mtime: now }]
          : [];
        index.apply({ remove: [{ folder, file: basename(path, ".jsonl") }], dirs });
      } catch {
        // As above: the next lookup compares the folder again.
      } finally {
        if (released) letGo();
      }
    },
    close: () =>
      serial(() => {
        released = true;
        letGo();
        return Promise.resolve();
      }),
    rows: () =>
      guarded(async () => {
        released = false;
        await serial(() => freshen());
        return db().page(undefined, undefined, { limit: -1, offset: 0 }, false).rows;
      }),
  };
}

/** A session this process made: its row, and the times of its folders around its making. */
interface _Made {
  folder: string;
  row: IndexedSession | undefined;
  /** The folder's time before (undefined: it was made for the session), and after. */
  before: number | undefined;
  now: number | undefined;
  /** The sessions directory's, when the folder was made. */
  root: number | undefined;
  rootNow: number | undefined;
}

/**
 * Records a session this process made: its row, and the folders' new times when nothing but
 * its making changed them since the index last recorded them.
 */
function _record(index: SessionIndexDb, session: _Made): void {
  const { folder, row, before, now, root, rootNow } = session;
  const dirs: Array<{ name: string; mtime: number }> = [];
  if (rootNow !== undefined && index.dirMtime("") === root) dirs.push({ name: "", mtime: rootNow });
  if (now !== undefined && (before === undefined || index.dirMtime(folder) === before)) {
    dirs.push({ name: folder, mtime: now });
  }
  index.apply({ upsert: row ? [row] : [], addFolders: [folder], dirs });
}

function _pathOf(dir: string, row: IndexedSession): string {
  return join(dir, row.folder, `${row.file}.jsonl`);
}

function _info(row: IndexedSession): SessionInfo {
  const { id, cwd, model, created, updated, messages, title } = row;
  return { id, cwd, model, created, updated, messages, title };
}

/** The row of a session file just made: what reading it back would say (no message yet). */
function _newRow(folder: string, path: string, header: SessionHeader): IndexedSession {
  const stat = Deno.lstatSync(path);
  const file = basename(path, ".jsonl");
  const { cwd, model, created } = header;
  return {
    folder,
    file,
    id: file,
    readable: true,
    cwd,
    model,
    created,
    updated: created,
    messages: 0,
    title: "",
    size: stat.size,
    mtime: mtimeOf(stat),
  };
}

/**
 * A file's row, read from it; a row that is not readable when it is not a session; none when it
 * is gone or is not a regular file (a link is not followed).
 */
async function _read(path: string): Promise<IndexedSession | undefined> {
  const folder = basename(dirname(path));
  const file = basename(path, ".jsonl");
  if (!await _isFile(path)) return undefined;
  let summary: FileSummary;
  try {
    summary = await summarizeSessionFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    if (!(error instanceof SessionError)) throw error;
    const stat = await Deno.stat(path).catch(() => undefined);
    if (!stat) return undefined;
    return {
      folder,
      file,
      id: file,
      readable: false,
      cwd: "",
      model: "",
      created: "",
      updated: "",
      messages: 0,
      title: "",
      size: stat.size,
      mtime: mtimeOf(stat),
    };
  }
  // Its id is its file's name, what it is found by, whatever the header says (a copied file).
  const { path: _path, ...info } = summary.info;
  const { size, mtime } = summary;
  return { ...info, id: file, folder, file, readable: true, size, mtime };
}

/** Whether `path` is a regular file (not a link to one: links are not followed). */
async function _isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.lstat(path)).isFile;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return false;
    }
    throw error;
  }
}

async function _mtime(path: string): Promise<number | undefined> {
  try {
    return mtimeOf(await Deno.stat(path));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return undefined;
    }
    throw error;
  }
}

function _mtimeSync(path: string): number | undefined {
  try {
    return mtimeOf(Deno.statSync(path));
  } catch {
    return undefined;
  }
}
