/**
 * The sessions index: a SQLite database beside the JSONL files of a sessions directory, one row
 * per session file (what a listing shows of it, and the size and modification time of the file
 * it was read from) and one per folder (its modification time when its files were last
 * compared with the rows). It is a cache: the files are the truth, and a damaged index is
 * deleted and built again from them.
 *
 * Being a cache, it is never flushed to the disk (`synchronous = OFF`): a process that stops
 * half-way leaves it whole (SQLite's write-ahead log is in the system's hands), and a run pays
 * no fsync for it. Only a crash of the system itself (a power cut) can leave it damaged, or
 * behind the files. So the index records the boot of the system that wrote it last; opened in
 * another boot, it is checked whole (`integrity_check`: damaged, it is made again) and its
 * folders' times are forgotten, so that each folder's files are compared with its rows again
 * before they are trusted. Where the boot cannot be told (no leave to read it), the index is
 * flushed as SQLite does by default in WAL mode (`synchronous = NORMAL`).
 *
 * Rows sort as listings do (newest first: by last update, then creation, then id, then folder,
 * which the id of a session is unique in) on the negated times, so that a page after a cursor is
 * one range of an index, found without counting the rows before it. A session's id is its file's
 * name (what it is found by), whatever its header says: a copy of a file is a session of its own.
 *
 * @module
 */

import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { ensurePrivateFile } from "../files/private_files.ts";
import type { SessionQuery } from "./page.ts";
import type { SessionInfo } from "./store.ts";

/** The index's file name in the sessions directory; its version is part of the name. */
export const SESSION_INDEX_FILE = "index.v2.sqlite";

/** The index files of earlier versions, deleted when this version's is made. */
export const OLD_SESSION_INDEX_FILES: readonly string[] = ["index.v1.sqlite"];

/** A session as the index keeps it. */
export interface IndexedSession extends SessionInfo {
  /** The project folder its file is in. */
  folder: string;
  /** Its file's name without `.jsonl`: what it is found by. */
  file: string;
  /** Whether the file is a session that can be read (others are kept only to be refused). */
  readable: boolean;
  /** The file's size when it was read. */
  size: number;
  /** The file's modification time (ms) when it was read. */
  mtime: number;
}

/** The rows of a listing, and how many match its filters over all pages. */
export interface IndexPage {
  /** The rows of the page, in order. */
  rows: IndexedSession[];
  /** How many rows the filters match. */
  total: number;
}

/** The index's database and what is asked of it. */
export interface SessionIndexDb {
  /** Whether it is kept in a file (false: in memory, for this process only). */
  readonly persistent: boolean;
  /** A folder's recorded modification time (`""` is the sessions directory itself). */
  dirMtime(name: string): number | undefined;
  /** The folders the index knows. */
  folders(): string[];
  /** The file stamps of a folder's rows, by file id. */
  stamps(folder: string): Map<string, { size: number; mtime: number }>;
  /** Writes rows, removes others, and records folders' times, in one transaction. */
  apply(change: IndexChange): void;
  /** The row of a file id (the first folder's, should two hold one). */
  byFile(file: string): IndexedSession | undefined;
  /** File ids starting with `prefix`, at most `limit`, and how many there are. */
  byPrefix(prefix: string, limit: number): { files: IndexedSession[]; total: number };
  /**
   * A page of readable sessions (`limit` -1: all), of `cwd` when given; `total` is counted only
   * when `counted` (else -1).
   */
  page(
    cwd: string | undefined,
    folder: string | undefined,
    query: SessionQuery,
    counted?: boolean,
  ): IndexPage;
  /** Closes the database. */
  close(): void;
}

/** What {@link SessionIndexDb.apply} writes. */
export interface IndexChange {
  /** Rows written (replacing those of the same folder and file). */
  upsert?: IndexedSession[];
  /** Rows removed. */
  remove?: Array<{ folder: string; file: string }>;
  /** Folders whose rows are all removed, with the folder. */
  dropFolders?: string[];
  /** Folder times recorded (`""`: the sessions directory). */
  dirs?: Array<{ name: string; mtime: number }>;
  /** Folders recorded only if the index does not know them yet (time -1: never compared). */
  addFolders?: string[];
}

const _SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dirs (name TEXT PRIMARY KEY, mtime INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions (
  folder TEXT NOT NULL,
  file TEXT NOT NULL,
  id TEXT NOT NULL,
  readable INTEGER NOT NULL,
  cwd TEXT NOT NULL,
  model TEXT NOT NULL,
  created TEXT NOT NULL,
  updated TEXT NOT NULL,
  neg_created INTEGER NOT NULL,
  neg_updated INTEGER NOT NULL,
  messages INTEGER NOT NULL,
  title TEXT NOT NULL,
  size INTEGER NOT NULL,
  mtime INTEGER NOT NULL,
  PRIMARY KEY (folder, file)
);
CREATE INDEX IF NOT EXISTS sessions_by_file ON sessions(file);
CREATE INDEX IF NOT EXISTS sessions_in_order
  ON sessions(readable, neg_updated, neg_created, id, folder);
CREATE INDEX IF NOT EXISTS sessions_of_cwd_in_order
  ON sessions(cwd, folder, readable, neg_updated, neg_created, id);
`;

const _COLUMNS =
  "folder, file, id, readable, cwd, model, created, updated, neg_created, neg_updated, " +
  "messages, title, size, mtime";

/**
 * Opens the index at `path` (created when new, private to the user), or in memory for
 * `":memory:"`. A file that is not a sessions index of this version, or is damaged, is deleted
 * and made again (it is a cache of the files). Throws when the file cannot be opened at all.
 *
 * @example
 * ```ts
 * import { openSessionIndexDb } from "./index_db.ts";
 * const db = openSessionIndexDb(":memory:");
 * db.apply({ dirs: [{ name: "", mtime: 5 }] });
 * if (db.dirMtime("") !== 5 || db.persistent) throw new Error("unexpected");
 * db.close();
 * ```
 */
export function openSessionIndexDb(path: string): SessionIndexDb {
  try {
    return _open(path);
  } catch (error) {
    if (path === ":memory:" || !isDamagedIndex(error)) throw error;
    for (const file of [path, `${path}-wal`, `${path}-shm`]) {
      try {
        Deno.removeSync(file);
      } catch { /* not there */ }
    }
    return _open(path);
  }
}

/**
 * Whether an error says that a SQLite file is not a database or is damaged.
 *
 * @example
 * ```ts
 * import { isDamagedIndex } from "./index_db.ts";
 * if (!isDamagedIndex(new Error("file is not a database"))) throw new Error("unexpected");
 * ```
 */
export function isDamagedIndex(error: unknown): boolean {
  return error instanceof Error &&
    /not a database|malformed|corrupt|unsupported file format|index version/i.test(error.message);
}

/**
 * Whether an error comes from SQLite (the index), not from the session files.
 *
 * @example
 * ```ts
 * import { isIndexError } from "./index_db.ts";
 * if (isIndexError(new Error("x"))) throw new Error("unexpected");
 * ```
 */
export function isIndexError(error: unknown): boolean {
  return error instanceof Error &&
    ((error as { code?: string }).code === "ERR_SQLITE_ERROR" || isDamagedIndex(error));
}

function _open(path: string): SessionIndexDb {
  const persistent = path !== ":memory:";
  if (persistent) {
    try {
      Deno.openSync(path, { createNew: true, write: true, mode: 0o600 }).close();
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
  }
  const db = new DatabaseSync(path);
  try {
    const boot = persistent ? systemBoot() : undefined;
    db.exec(
      `PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; ` +
        `PRAGMA synchronous = ${boot === undefined ? "NORMAL" : "OFF"};`,
    );
    const version = db.prepare("PRAGMA user_version").get()?.user_version;
    if (version !== 0 && version !== 1) throw new Error(`not a sessions index version 1`);
    db.exec(_SCHEMA);
    if (version === 0) db.exec("PRAGMA user_version = 1");
    if (boot !== undefined) _checkSinceBoot(db, boot);
    if (persistent) { for (const file of [`${path}-wal`, `${path}-shm`]) ensurePrivateFile(file); }
    return _indexDb(db, persistent);
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Checks an index written in another boot of the system (or never told its boot): whole, else
 * an error that says it is damaged (it is made again); its folders' times forgotten, so that
 * the files are compared with the rows again. Then records this boot.
 */
function _checkSinceBoot(db: DatabaseSync, boot: string): void {
  const recorded = () => db.prepare("SELECT value FROM meta WHERE key = 'boot'").get()?.value;
  if (sameBoot(recorded(), boot)) return;
  db.exec("BEGIN IMMEDIATE");
  try {
    // Another process may have checked it meanwhile.
    if (!sameBoot(recorded(), boot)) {
      const problems = db.prepare("PRAGMA integrity_check(1)").all();
      const first = problems[0] ? String(Object.values(problems[0])[0]) : "ok";
      if (first !== "ok") throw new Error(`The sessions index is malformed: ${first}`);
      // Every folder with rows is known again (a page of `dirs` may have come back older than
      // those of `sessions`), then compared with its files: gone, its rows go with it.
      db.exec(
        "INSERT OR IGNORE INTO dirs (name, mtime) SELECT DISTINCT folder, -1 FROM sessions; " +
          "UPDATE dirs SET mtime = -1;",
      );
      db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('boot', ?)").run(boot);
    }
    db.exec("COMMIT");
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  }
}

const _BOOT_ID = "/proc/sys/kernel/random/boot_id";
let _boot: string | null | undefined;

/**
 * What tells this boot of the system from others: Linux's boot id, else the time it booted
 * (`up:<s>`, in seconds); `undefined` when Deno is not allowed to ask (nobody is prompted).
 *
 * @example
 * ```ts
 * import { systemBoot } from "./index_db.ts";
 * const boot = systemBoot();
 * if (boot !== undefined && boot !== systemBoot()) throw new Error("one boot per process");
 * ```
 */
export function systemBoot(): string | undefined {
  if (_boot === undefined) _boot = _readBoot() ?? null;
  return _boot ?? undefined;
}

function _readBoot(): string | undefined {
  const granted = (permission: Deno.PermissionDescriptor) => {
    try {
      return Deno.permissions.querySync(permission).state === "granted";
    } catch {
      return false;
    }
  };
  if (Deno.build.os === "linux" && granted({ name: "read", path: _BOOT_ID })) {
    try {
      const id = Deno.readTextFileSync(_BOOT_ID).trim();
      if (id) return id;
    } catch { /* not there: the boot's time serves */ }
  }
  if (granted({ name: "sys", kind: "osUptime" })) {
    try {
      return `up:${Math.round(Date.now() / 1000 - Deno.osUptime())}`;
    } catch { /* not told */ }
  }
  return undefined;
}

/**
 * Whether the boot an index recorded is `boot`. Boot times a few seconds apart (a step of the
 * clock, the uptime's rounding) are one boot.
 *
 * @example
 * ```ts
 * import { sameBoot } from "./index_db.ts";
 * if (!sameBoot("up:1000", "up:1003") || sameBoot("up:1000", "up:2000")) throw new Error();
 * if (sameBoot(undefined, "b1") || !sameBoot("b1", "b1")) throw new Error("unexpected");
 * ```
 */
export function sameBoot(recorded: unknown, boot: string): boolean {
  if (typeof recorded !== "string") return false;
  if (recorded.startsWith("up:") && boot.startsWith("up:")) {
    return Math.abs(Number(recorded.slice(3)) - Number(boot.slice(3))) <= 10;
  }
  return recorded === boot;
}

function _indexDb(db: DatabaseSync, persistent: boolean): SessionIndexDb {
  const statements = new Map<string, StatementSync>();
  const sql = (text: string): StatementSync => {
    let statement = statements.get(text);
    if (!statement) statements.set(text, statement = db.prepare(text));
    return statement;
  };
  const upsert = `INSERT OR REPLACE INTO sessions (${_COLUMNS}) VALUES (${
    _COLUMNS.split(",").map(() => "?").join(", ")
  })`;
  return {
    persistent,
    dirMtime(name) {
      const row = sql("SELECT mtime FROM dirs WHERE name = ?").get(name);
      return row ? Number(row.mtime) : undefined;
    },
    folders: () =>
      sql("SELECT name FROM dirs WHERE name != ''").all().map((row) => String(row.name)),
    stamps(folder) {
      const stamps = new Map<string, { size: number; mtime: number }>();
      for (
        const row of sql("SELECT file, size, mtime FROM sessions WHERE folder = ?").all(folder)
      ) {
        stamps.set(String(row.file), { size: Number(row.size), mtime: Number(row.mtime) });
      }
      return stamps;
    },
    apply(change) {
      db.exec("BEGIN IMMEDIATE");
      try {
        for (const name of change.dropFolders ?? []) {
          sql("DELETE FROM sessions WHERE folder = ?").run(name);
          sql("DELETE FROM dirs WHERE name = ?").run(name);
        }
        for (const { folder, file } of change.remove ?? []) {
          sql("DELETE FROM sessions WHERE folder = ? AND file = ?").run(folder, file);
        }
        for (const row of change.upsert ?? []) sql(upsert).run(..._values(row));
        for (const name of change.addFolders ?? []) {
          sql("INSERT OR IGNORE INTO dirs (name, mtime) VALUES (?, -1)").run(name);
        }
        for (const { name, mtime } of change.dirs ?? []) {
          sql("INSERT OR REPLACE INTO dirs (name, mtime) VALUES (?, ?)").run(name, mtime);
        }
        db.exec("COMMIT");
      } catch (error) {
        db.exec("ROLLBACK");
        throw error;
      }
    },
    byFile(file) {
      const row = sql(`SELECT ${_COLUMNS} FROM sessions WHERE file = ? ORDER BY folder LIMIT 1`)
        .get(file);
      return row ? _row(row) : undefined;
    },
    byPrefix(prefix, limit) {
      const range = "file >= ? AND file < ?";
      const bounds = [prefix, prefix + "\uffff"];
      const files = sql(
        `SELECT ${_COLUMNS} FROM sessions WHERE ${range} ORDER BY file, folder LIMIT ?`,
      ).all(...bounds, limit).map(_row);
      const total = files.length < limit
        ? files.length
        : Number(sql(`SELECT count(*) AS n FROM sessions WHERE ${range}`).get(...bounds)?.n);
      return { files, total };
    },
    page(cwd, folder, query, counted = true) {
      const where: string[] = [];
      const params: SQLInputValue[] = [];
      if (cwd !== undefined) where.push("cwd = ?", "folder = ?"), params.push(cwd, folder!);
      where.push("readable = 1");
      if (query.model !== undefined) where.push("model = ?"), params.push(query.model);
      if (query.since !== undefined) where.push("neg_updated <= ?"), params.push(-query.since);
      if (query.prefix !== undefined) {
        where.push("id >= ? AND id < ?"), params.push(query.prefix, query.prefix + "\uffff");
      }
      const total = counted
        ? Number(
          sql(`SELECT count(*) AS n FROM sessions WHERE ${where.join(" AND ")}`).get(...params)?.n,
        )
        : -1;
      if (query.after) {
        const { updated, created, id, folder } = query.after;
        if (folder === undefined) {
          where.push("(neg_updated, neg_created, id) > (?, ?, ?)");
          params.push(-updated, -created, id);
        } else {
          where.push("(neg_updated, neg_created, id, folder) > (?, ?, ?, ?)");
          params.push(-updated, -created, id, folder);
        }
      }
      const rows = sql(
        `SELECT ${_COLUMNS} FROM sessions WHERE ${where.join(" AND ")} ` +
          `ORDER BY neg_updated, neg_created, id, folder LIMIT ? OFFSET ?`,
      ).all(...params, query.limit, query.after ? 0 : query.offset).map(_row);
      return { rows, total };
    },
    close: () => db.close(),
  };
}

function _values(row: IndexedSession): SQLInputValue[] {
  return [
    row.folder,
    row.file,
    row.id,
    row.readable ? 1 : 0,
    row.cwd,
    row.model,
    row.created,
    row.updated,
    -_ms(row.created),
    -_ms(row.updated),
    row.messages,
    row.title,
    row.size,
    row.mtime,
  ];
}

function _row(row: Record<string, SQLInputValue>): IndexedSession {
  return {
    folder: String(row.folder),
    file: String(row.file),
    id: String(row.id),
    readable: row.readable === 1,
    cwd: String(row.cwd),
    model: String(row.model),
    created: String(row.created),
    updated: String(row.updated),
    messages: Number(row.messages),
    title: String(row.title),
    size: Number(row.size),
    mtime: Number(row.mtime),
  };
}

function _ms(iso: string): number {
  const time = Date.parse(iso);
  return Number.isNaN(time) ? 0 : time;
}
