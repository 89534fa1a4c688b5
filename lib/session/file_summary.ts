/**
 * What a session file says of itself without being read whole: its header, message count, last
 * update and title, from its first and last few KB; and the folders and files of a sessions
 * directory (`<dir>/<project>/<id>.jsonl`).
 *
 * @module
 */

import { join } from "node:path";
import { infoFromTail, parseHeaderLine, parseSessionText, titleFromHead } from "./jsonl.ts";
import { replaySession, SessionError, type SessionInfo, titleOf } from "./store.ts";

/** A session file's listing, and the state of the file it was read from. */
export interface FileSummary {
  /** The session as listed, and its file. */
  info: SessionInfo & { path: string };
  /** Whether the file ends with a newline (false when a crash cut its last line). */
  endsWithNewline: boolean;
  /** The file's size in bytes when it was read. */
  size: number;
  /** The file's last modification (ms since the epoch; -1 when unknown) when it was read. */
  mtime: number;
}

const _decoder = new TextDecoder();
const HEAD_BYTES = 8192;
const TAIL_BYTES = 4096;

/**
 * A session's listing, from the first and last few KB of its file (all of it if small, or if
 * its end is not a complete entry). A `SessionError` for a file that is not a session.
 *
 * @example
 * ```ts
 * import { summarizeSessionFile } from "./file_summary.ts";
 * const path = await Deno.makeTempFile({ suffix: ".jsonl" });
 * await Deno.writeTextFile(path,
 *   '{"type":"session","version":1,"id":"s1","cwd":"/w","model":"a/b","created":"2025-01-01T00:00:00Z"}\n' +
 *   '{"type":"message","message":{"role":"user","content":"Fix it"},"n":1,"at":"2025-01-02T00:00:00Z"}\n');
 * const { info, size } = await summarizeSessionFile(path);
 * if (info.title !== "Fix it" || info.messages !== 1 || size < 100) throw new Error("unexpected");
 * await Deno.remove(path);
 * ```
 */
export async function summarizeSessionFile(path: string): Promise<FileSummary> {
  using file = await Deno.open(path, { read: true });
  const stat = await file.stat();
  const { size } = stat;
  const mtime = mtimeOf(stat);
  if (size > HEAD_BYTES + TAIL_BYTES) {
    const head = _decoder.decode(await _readAt(file, 0, HEAD_BYTES));
    const tail = infoFromTail(_decoder.decode(await _readAt(file, size - TAIL_BYTES, TAIL_BYTES)));
    const end = head.indexOf("\n");
    const title = titleFromHead(head);
    if (tail && end > 0 && title !== undefined) {
      const header = parseHeaderLine(head.slice(0, end), path);
      const { id, cwd, model, created } = header;
      const info = { id, cwd, model, created, ...tail, title, path };
      return { info, endsWithNewline: true, size, mtime };
    }
  }
  // Small, its end not a complete entry (a crash, another writer), or its title past the first
  // bytes (notes of the program before it): read it all.
  const text = _decoder.decode(await _readAt(file, 0, size));
  const { header, entries } = parseSessionText(text, path);
  const { id, cwd, model, created } = header;
  const loaded = replaySession(header, entries);
  const info = {
    id,
    cwd,
    model,
    created,
    updated: entries.at(-1)?.at || created,
    messages: loaded.messages.length,
    title: titleOf(loaded.messages),
    path,
  };
  return { info, endsWithNewline: text === "" || text.endsWith("\n"), size, mtime };
}

/**
 * A file's last modification in ms since the epoch (-1 when the system does not say).
 *
 * @example
 * ```ts
 * import { mtimeOf } from "./file_summary.ts";
 * if (mtimeOf({ mtime: new Date(5) }) !== 5 || mtimeOf({ mtime: null }) !== -1) throw new Error();
 * ```
 */
export function mtimeOf(stat: Pick<Deno.FileInfo, "mtime">): number {
  return stat.mtime?.getTime() ?? -1;
}

/**
 * The names of the folders in `dir` (none when it does not exist).
 *
 * @example
 * ```ts
 * import { subdirs } from "./file_summary.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.mkdir(`${dir}/p`);
 * if ((await subdirs(dir)).join() !== "p") throw new Error("unexpected");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function subdirs(dir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) if (entry.isDirectory) names.push(entry.name);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return names;
}

/**
 * The session files (`*.jsonl`) in the folders `folders` of `dir`, as paths.
 *
 * @example
 * ```ts
 * import { sessionFiles } from "./file_summary.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.mkdir(`${dir}/p`);
 * await Deno.writeTextFile(`${dir}/p/s1.jsonl`, "");
 * if ((await sessionFiles(dir, ["p", "gone"])).length !== 1) throw new Error("unexpected");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function sessionFiles(dir: string, folders: string[]): Promise<string[]> {
  const paths: string[] = [];
  for (const folder of folders) {
    try {
      for await (const entry of Deno.readDir(join(dir, folder))) {
        if (entry.isFile && entry.name.endsWith(".jsonl")) {
          paths.push(join(dir, folder, entry.name));
        }
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  return paths;
}

/**
 * `undefined` for a file that is not a readable session, or is gone (left out of a listing);
 * any other error is thrown again.
 *
 * @example
 * ```ts
 * import { unreadable } from "./file_summary.ts";
 * if (unreadable(new Deno.errors.NotFound("gone")) !== undefined) throw new Error();
 * ```
 */
export function unreadable(error: unknown): undefined {
  if (error instanceof SessionError || error instanceof Deno.errors.NotFound) return undefined;
  throw error;
}

async function _readAt(file: Deno.FsFile, offset: number, length: number): Promise<Uint8Array> {
  await file.seek(offset, Deno.SeekMode.Start);
  const buffer = new Uint8Array(length);
  let filled = 0;
  while (filled < length) {
    const read = await file.read(buffer.subarray(filled));
    if (read === null) break;
    filled += read;
  }
  return buffer.subarray(0, filled);
}
