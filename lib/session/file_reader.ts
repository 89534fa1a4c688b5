/**
 * A session file read entry by entry, a chunk of the file at a time: what serves a session of
 * any size in memory bounded by a chunk and the longest line (`read`), and what `load` reads
 * before it keeps the messages (never the whole file as one string, nor its lines at once).
 * Lines are read as `parseSessionText` reads them: one cut off at the end (a crash mid-write),
 * one that is not JSON or not of an entry's shape is skipped, and said in `warnings`.
 *
 * @module
 */

import { parseHeaderLine } from "./jsonl.ts";
import { checkEntryLine } from "./schema.ts";
import type { SessionEntry, SessionHeader, SessionReader } from "./store.ts";

/** Bytes read from the file at a time. */
const CHUNK_BYTES = 64 * 1024;

/**
 * Opens the session file at `path` and reads its header; its entries are read as they are
 * iterated (once). A `SessionError` when the file is not a session; `Deno.errors.NotFound` when
 * it is gone.
 *
 * @example
 * ```ts
 * import { readSessionFile } from "./file_reader.ts";
 * const path = await Deno.makeTempFile({ suffix: ".jsonl" });
 * await Deno.writeTextFile(path,
 *   '{"type":"session","version":1,"id":"s1","cwd":"/w","model":"a/b","created":"2025-01-01T00:00:00Z"}\n' +
 *   '{"type":"message","message":{"role":"user","content":"Fix it"},"n":1,"at":"2025-01-02T00:00:00Z"}\n' +
 *   '{"type":"mess');
 * await using reader = await readSessionFile(path);
 * const entries = await Array.fromAsync(reader);
 * if (reader.header.id !== "s1" || entries.length !== 1) throw new Error("unexpected");
 * if (!reader.warnings[0].includes("cut off")) throw new Error("the cut line is reported");
 * await Deno.remove(path);
 * ```
 */
export async function readSessionFile(
  path: string,
  options: { chunkBytes?: number } = {},
): Promise<SessionReader> {
  const file = await Deno.open(path, { read: true });
  const lines = _lines(file, options.chunkBytes ?? CHUNK_BYTES);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    try {
      file.close();
    } catch { /* closed already */ }
  };
  let header: SessionHeader;
  let size: number;
  try {
    size = (await file.stat()).size;
    const first = await lines.next();
    header = parseHeaderLine(first.done ? "" : first.value.text, path);
  } catch (error) {
    close();
    throw error;
  }
  const warnings: string[] = [];
  let iterated = false;
  async function* entries(): AsyncGenerator<SessionEntry> {
    try {
      for (let step = await lines.next(); !step.done && !closed; step = await lines.next()) {
        const { text, number, cut } = step.value;
        if (text.trim() === "") continue;
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          warnings.push(
            cut
              ? `the last line of ${path} was cut off (the agent probably stopped mid-write); ` +
                `it was skipped`
              : `line ${number} of ${path} is not valid JSON (probably cut off by a crash); ` +
                `it was skipped`,
          );
          continue;
        }
        const checked = checkEntryLine(value);
        if (checked.entry) yield checked.entry;
        else {
          warnings.push(
            `line ${number} of ${path} is not a session entry (${checked.problem}); it was skipped`,
          );
        }
      }
    } finally {
      close();
    }
  }
  return {
    header,
    warnings,
    size,
    [Symbol.asyncIterator]() {
      if (iterated || closed) {
        throw new TypeError(`The entries of ${path} are read once, and not once closed`);
      }
      iterated = true;
      return entries();
    },
    close: () => Promise.resolve(close()),
    [Symbol.asyncDispose]: () => Promise.resolve(close()),
  };
}

/** A line of the file: its text, its number (from 1), and whether the file ended inside it. */
interface _Line {
  text: string;
  number: number;
  cut: boolean;
}

/** The file's lines, read a chunk at a time. */
async function* _lines(file: Deno.FsFile, chunkBytes: number): AsyncGenerator<_Line> {
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(chunkBytes);
  /** The start of a line whose end is not read yet, in pieces. */
  let pending: string[] = [];
  let number = 0;
  while (true) {
    const read = await file.read(buffer);
    if (read === null) break;
    const text = decoder.decode(buffer.subarray(0, read), { stream: true });
    let start = 0;
    for (let end = text.indexOf("\n"); end >= 0; end = text.indexOf("\n", start)) {
      const piece = text.slice(start, end);
      const line = pending.length ? pending.join("") + piece : piece;
      pending = [];
      start = end + 1;
      yield { text: line, number: ++number, cut: false };
    }
    if (start < text.length) pending.push(text.slice(start));
  }
  const rest = pending.join("") + decoder.decode();
  if (rest !== "") yield { text: rest, number: ++number, cut: true };
}
