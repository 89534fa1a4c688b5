/**
 * Scrubbing a memory written before secrets were redacted: once per database, every segment and
 * run loop holding a secret is redacted in place, the full-text index is rebuilt from the
 * redacted text, and the vectors of the changed segments are dropped (to be embedded again from
 * the redacted text). The old text is overwritten on disk (`secure_delete`), and the write-ahead
 * log that held it is emptied. `PRAGMA user_version` marks a database scrubbed; new databases
 * are marked when created, so that opening one costs a single read of that mark.
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";
import { redactJsonLine } from "../secrets/redact.ts";

/** The `user_version` of a memory database whose text has been scrubbed of secrets. */
export const SCRUBBED_MARK = 1;

/** What {@link scrubMemory} changed. */
export interface ScrubResult {
  /** Segments redacted (their index rows rebuilt, their vectors dropped). */
  segments: number;
  /** Run loops redacted. */
  runLoops: number;
}

/**
 * Redacts, once, the secrets a memory database holds (see the module's doc). Returns what it
 * changed: nothing when the database was scrubbed before.
 *
 * @example
 * ```ts
 * import { openMemoryDatabase } from "./schema.ts";
 * import { scrubMemory } from "./scrub.ts";
 * import { secretRedactor } from "../secrets/redact.ts";
 * const db = openMemoryDatabase(":memory:");
 * db.exec(`PRAGMA user_version = 0;
 *   INSERT INTO run_loops (id, status, created_at, archived_at, archive_seq, json)
 *     VALUES ('r1', 'completed', '', '', 1, '{"goal":"key corp-secret-1"}');
 *   INSERT INTO segments VALUES (1, 'r1', 0, 0, 'user', '', 'key corp-secret-1');`);
 * const result = scrubMemory(db, secretRedactor(["corp-secret-1"]));
 * const text = db.prepare("SELECT text FROM segments").get()?.text;
 * if (result.segments !== 1 || text !== "key [redacted]") throw new Error(String(text));
 * if (scrubMemory(db, secretRedactor(["corp-secret-1"])).segments !== 0) throw new Error();
 * db.close();
 * ```
 */
export function scrubMemory(db: DatabaseSync, redact: (text: string) => string): ScrubResult {
  const none = { segments: 0, runLoops: 0 };
  if (_scrubbed(db)) return none;
  db.exec("BEGIN IMMEDIATE");
  let result = none;
  try {
    // Another process may have done it while this one waited.
    if (!_scrubbed(db)) result = _scrub(db, redact);
    db.exec(`PRAGMA user_version = ${SCRUBBED_MARK}`);
    db.exec("COMMIT");
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  } finally {
    db.exec("PRAGMA secure_delete = OFF");
  }
  if (result.segments + result.runLoops > 0) {
    // The log held the old pages: copy the new ones into the database and empty it.
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  return result;
}

function _scrubbed(db: DatabaseSync): boolean {
  return (db.prepare("PRAGMA user_version").get()?.user_version as number) >= SCRUBBED_MARK;
}

function _scrub(db: DatabaseSync, redact: (text: string) => string): ScrubResult {
  const segments: Array<{ id: number; text: string }> = [];
  for (const row of db.prepare("SELECT id, text FROM segments").iterate()) {
    const text = redact(row.text as string);
    if (text !== row.text) segments.push({ id: row.id as number, text });
  }
  const loops: Array<{ id: string; json: string }> = [];
  for (const row of db.prepare("SELECT id, json FROM run_loops").iterate()) {
    const json = redactJsonLine(row.json as string, redact);
    if (json !== row.json) loops.push({ id: row.id as string, json });
  }
  if (segments.length + loops.length === 0) return { segments: 0, runLoops: 0 };
  // What is deleted or rewritten from here on is overwritten with zeros, not left in free pages.
  db.exec("PRAGMA secure_delete = ON");
  const setText = db.prepare("UPDATE segments SET text = ? WHERE id = ?");
  const dropVector = db.prepare("DELETE FROM vectors WHERE segment_id = ?");
  for (const { id, text } of segments) {
    setText.run(text, id);
    dropVector.run(id);
  }
  const setJson = db.prepare("UPDATE run_loops SET json = ? WHERE id = ?");
  for (const { id, json } of loops) setJson.run(json, id);
  if (segments.length > 0) {
    // The index keeps the words of the old text: build it again from the redacted one.
    db.exec(`INSERT INTO segments_fts (segments_fts) VALUES ('delete-all');
      INSERT INTO segments_fts (rowid, text, type) SELECT id, text, type FROM segments;`);
  }
  return { segments: segments.length, runLoops: loops.length };
}
