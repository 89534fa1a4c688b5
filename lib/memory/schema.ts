/**
 * The memory's SQLite database: pragmas, tables, and the schema version check.
 *
 * Tables: `run_loops` keeps each run loop whole as JSON; `segments` its pieces with their
 * anchors; `segments_fts` an FTS5 index over the segments' text; `vectors` their embeddings.
 *
 * `segments_fts` is a contentless FTS5 table (`content=''`, `contentless_delete=1`): the text is
 * stored once, in `segments`, and rows are deleted by rowid alone. An external-content table
 * would also store the text once, but deleting a row from it means handing it the old text to
 * tokenize again, which doubles the cost of archiving a run loop again; what it offers in
 * exchange (`snippet()`, reading the text back through the index) the memory does not use, and
 * the index can be rebuilt from `segments` all the same. The archive transaction keeps the index
 * in step itself: a trigger doing the same measured twice as slow. The index has two columns:
 * the segment's `text`, and its `type` so that a filter by type is part of the MATCH (ranked
 * with weight 0: `bm25(1.0, 0.0)`). The `porter unicode61` tokenizer folds case and diacritics
 * and stems English words, so that "locking" finds "locked".
 *
 * `memory_counts` and `vector_counts` hold how many run loops, segments and vectors (per
 * embedder) there are, so that the counts cost one read however big the memory grows
 * (`count(*)` reads a whole index). Triggers keep the counts of run loops and vectors; the
 * segments are counted by the statements that add and remove them, once per archive (a trigger
 * on each segment's row measured as slow as the insert itself), and counted again by `vacuum()`
 * should a writer that does not count them (an older library) have been at work. An index on each run loop's `seededFrom` finds
 * the run loops that went on from one being dropped; `detail` (and a partial index on it) the
 * oldest run loops whose detail the retention has not dropped yet. These were added to
 * databases of version 1 without a new version: an older library reading the database ignores
 * them.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { ensurePrivateFile } from "../files/private_files.ts";
import { MemoryError } from "./errors.ts";
import { SCRUBBED_MARK } from "./scrub.ts";

/** The version of the database schema this library writes and reads. */
export const MEMORY_SCHEMA_VERSION = 1;

const _SCHEMA = `
CREATE TABLE run_loops (
  id TEXT PRIMARY KEY,
  status TEXT NOT NULL,
  created_at TEXT NOT NULL,
  archived_at TEXT NOT NULL,
  archive_seq INTEGER NOT NULL,
  json TEXT NOT NULL
);
CREATE INDEX run_loops_by_archive ON run_loops(archive_seq);
CREATE TABLE segments (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_loop_id TEXT NOT NULL REFERENCES run_loops(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  iteration INTEGER NOT NULL,
  type TEXT NOT NULL
    CHECK (type IN ('user', 'reasoning', 'tool_call', 'tool_result', 'response')),
  timestamp TEXT NOT NULL,
  text TEXT NOT NULL,
  UNIQUE (run_loop_id, seq)
);
CREATE VIRTUAL TABLE segments_fts USING fts5(
  text,
  type,
  content = '',
  contentless_delete = 1,
  tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO segments_fts (segments_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0)');
CREATE TABLE vectors (
  segment_id INTEGER PRIMARY KEY REFERENCES segments(id) ON DELETE CASCADE,
  model TEXT NOT NULL,
  vector BLOB NOT NULL
);
CREATE INDEX vectors_by_model ON vectors(model);
`;

/** Added to a database of version 1 that lacks them (see the module's doc). */
const _COUNTS = `
CREATE TABLE memory_counts (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  run_loops INTEGER NOT NULL,
  segments INTEGER NOT NULL
);
INSERT INTO memory_counts VALUES (1, (SELECT count(*) FROM run_loops), (SELECT count(*) FROM segments));
CREATE TABLE vector_counts (model TEXT PRIMARY KEY, n INTEGER NOT NULL);
INSERT INTO vector_counts SELECT model, count(*) FROM vectors GROUP BY model;
CREATE TRIGGER run_loops_counted AFTER INSERT ON run_loops
  BEGIN UPDATE memory_counts SET run_loops = run_loops + 1; END;
CREATE TRIGGER run_loops_uncounted AFTER DELETE ON run_loops
  BEGIN UPDATE memory_counts SET run_loops = run_loops - 1; END;
CREATE TRIGGER vectors_counted AFTER INSERT ON vectors
  BEGIN INSERT INTO vector_counts VALUES (new.model, 1)
    ON CONFLICT (model) DO UPDATE SET n = n + 1; END;
CREATE TRIGGER vectors_uncounted AFTER DELETE ON vectors
  BEGIN UPDATE vector_counts SET n = n - 1 WHERE model = old.model; END;
CREATE TRIGGER vectors_recounted AFTER UPDATE OF model ON vectors WHEN old.model <> new.model
  BEGIN
    UPDATE vector_counts SET n = n - 1 WHERE model = old.model;
    INSERT INTO vector_counts VALUES (new.model, 1) ON CONFLICT (model) DO UPDATE SET n = n + 1;
  END;
CREATE INDEX IF NOT EXISTS run_loops_by_seed ON run_loops (json_extract(json, '$.seededFrom'));
`;

/**
 * Added to a database that lacks it: the words of searches found in more segments than a search
 * ranks, and the newest segment then (see `fts_search.ts`). Only words that many segments hold
 * are kept: nothing of a search that is not in the memory already.
 */
const _COMMON_TERMS = `
CREATE TABLE IF NOT EXISTS fts_common_terms (term TEXT PRIMARY KEY, seen INTEGER NOT NULL)
  WITHOUT ROWID;
`;

/** Added to a database that lacks it: which run loops still have their detail. */
const _DETAIL = `
ALTER TABLE run_loops ADD COLUMN detail INTEGER NOT NULL DEFAULT 1;
CREATE INDEX run_loops_with_detail ON run_loops (archive_seq) WHERE detail = 1;
`;

/**
 * Opens (creating when new) a memory database at `path` (a file, or `:memory:`), in WAL mode,
 * with foreign keys on. The file, its write-ahead log and its shared-memory file are private to
 * the user (0600): created so, and made so when an earlier version left them readable by
 * others. Throws a {@link MemoryError}: `unsupported_version` for a database
 * written by a newer version of the library, `invalid` for a file that is not one.
 *
 * @example
 * ```ts
 * import { MEMORY_SCHEMA_VERSION, openMemoryDatabase } from "./schema.ts";
 * const db = openMemoryDatabase(":memory:");
 * const row = db.prepare("SELECT max(version) AS version FROM schema_version").get();
 * if (row?.version !== MEMORY_SCHEMA_VERSION) throw new Error("unexpected");
 * db.close();
 * ```
 */
export function openMemoryDatabase(path: string): DatabaseSync {
  let db: DatabaseSync;
  try {
    _privateFiles(path);
    db = new DatabaseSync(path);
  } catch (error) {
    throw new MemoryError(`Cannot open the memory database ${path}: ${_message(error)}`, {
      reason: "invalid",
      cause: error,
    });
  }
  try {
    db.exec(`
      PRAGMA busy_timeout = 5000;
      PRAGMA journal_mode = WAL;
      PRAGMA synchronous = NORMAL;
      PRAGMA foreign_keys = ON;
      PRAGMA temp_store = MEMORY;
      PRAGMA cache_size = -32000;
    `);
    _migrate(db, path);
    return db;
  } catch (error) {
    db.close();
    if (error instanceof MemoryError) throw error;
    throw new MemoryError(
      `${path} is not a memory database, or is damaged: ${_message(error)}`,
      { reason: "invalid", cause: error },
    );
  }
}

function _migrate(db: DatabaseSync, path: string): void {
  db.exec("BEGIN IMMEDIATE");
  try {
    db.exec(
      "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL)",
    );
    const row = db.prepare("SELECT max(version) AS version FROM schema_version").get();
    const version = row?.version as number | null | undefined;
    if (version === null || version === undefined) {
      db.exec(_SCHEMA);
      db.prepare("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)")
        .run(MEMORY_SCHEMA_VERSION, new Date().toISOString());
      // Nothing to scrub of secrets in a new database.
      db.exec(`PRAGMA user_version = ${SCRUBBED_MARK}`);
    } else if (version > MEMORY_SCHEMA_VERSION) {
      throw new MemoryError(
        `The memory database ${path} has schema version ${version}, newer than this library's ` +
          `${MEMORY_SCHEMA_VERSION}: upgrade @x/agent to open it, or use another file`,
        { reason: "unsupported_version" },
      );
    } else if (version < 1) {
      throw new MemoryError(`The memory database ${path} has a bad schema version ${version}`, {
        reason: "invalid",
      });
    }
    const counted = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'memory_counts'").get();
    if (!counted) db.exec(_COUNTS);
    // Segments counted by a trigger per row, as a version in development did: counted anew.
    if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'segments_counted'").get()) {
      db.exec(`DROP TRIGGER segments_counted; DROP TRIGGER IF EXISTS segments_uncounted;
        UPDATE memory_counts SET segments = (SELECT count(*) FROM segments);`);
    }
    const detail = db.prepare("SELECT 1 FROM pragma_table_info('run_loops') WHERE name = 'detail'");
    if (!detail.get()) db.exec(_DETAIL);
    db.exec(_COMMON_TERMS);
    db.exec("COMMIT");
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}

/**
 * Creates the database file private to the user when it is new (SQLite gives its log and
 * shared-memory files the database's mode), and makes the three private when they exist.
 */
function _privateFiles(path: string): void {
  if (path === "" || path === ":memory:" || path.startsWith("file:")) return;
  try {
    Deno.openSync(path, { createNew: true, write: true, mode: 0o600 }).close();
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`]) ensurePrivateFile(file);
}

function _message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
