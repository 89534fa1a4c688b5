/**
 * Appending to a session file: one line per entry, in the order of the calls, each written with
 * one `write` before `append` resolves.
 *
 * @module
 */

import { encodeEntry, encodeHeader } from "./jsonl.ts";
import { redactJsonLine } from "../secrets/redact.ts";
import type { Message } from "../messages.ts";
import {
  checkSessionEntry,
  isProgramNote,
  type SessionHeader,
  sessionTitle,
  type SessionWriter,
} from "./store.ts";

/** Options of {@link fileSessionWriter}. */
export interface FileSessionWriterOptions {
  /** The session id. */
  id: string;
  /** The header to write first, for a new session. */
  header?: SessionHeader;
  /** How many messages the file holds already. */
  messages?: number;
  /** Whether the file ends with a newline (false after a crash mid-write). Default true. */
  endsWithNewline?: boolean;
  /** Whether to fsync after each line. */
  sync?: boolean;
  /** Applied to every line before it is written. */
  redact?: (text: string) => string;
  /** The session's title so far ("" when none). */
  title?: string;
  /** The session's last update so far (ISO 8601). */
  updated?: string;
  /**
   * Told what the session holds after each entry is written (`closing` false), and once more
   * before the file is closed (`closing` true); what it throws is ignored.
   */
  onWritten?: (state: WriterState, closing: boolean) => void;
}

/** What a writer's session holds, as {@link FileSessionWriterOptions.onWritten} is told it. */
export interface WriterState {
  /** Messages in the session. */
  messages: number;
  /** The last entry's time (ISO 8601). */
  updated: string;
  /** The session's title: the first line of the user's first message ("" when none). */
  title: string;
  /** The file's state now. */
  stat(): Deno.FileInfo;
}

/**
 * A {@link SessionWriter} appending to a file opened for appending; writes `options.header`
 * first, when given. The file is closed by the writer's `close()` (or here, should the header
 * fail to be written).
 *
 * @example
 * ```ts
 * import { fileSessionWriter } from "./file_writer.ts";
 * const path = await Deno.makeTempFile();
 * const writer = await fileSessionWriter(await Deno.open(path, { append: true }), { id: "s1" });
 * await writer.append({ type: "model", model: "a/b", at: "2025-01-01T00:00:00Z" });
 * await writer.close();
 * if (!(await Deno.readTextFile(path)).startsWith('{"type":"model"')) throw new Error();
 * await Deno.remove(path);
 * ```
 */
export async function fileSessionWriter(
  file: Deno.FsFile,
  options: FileSessionWriterOptions,
): Promise<SessionWriter> {
  const { id, header, redact, sync = false } = options;
  const state: WriterState = {
    messages: options.messages ?? 0,
    updated: options.updated ?? header?.created ?? "",
    title: options.title ?? "",
    stat: () => file.statSync(),
  };
  const told = (closing: boolean) => {
    try {
      options.onWritten?.(state, closing);
    } catch { /* only told */ }
  };
  const lines = _lineWriter(file, sync, options.endsWithNewline ?? true, () => told(true));
  if (header) {
    try {
      const head = encodeHeader(header);
      await lines.write(redact ? redactJsonLine(head, redact) : head);
    } catch (error) {
      await lines.close();
      throw error;
    }
  }
  return _sessionWriter(id, lines, state, redact, () => told(false));
}

const _encoder = new TextEncoder();

interface _LineWriter {
  write(line: string): Promise<void>;
  close(): Promise<void>;
}

/** Writes lines in order, each with one `write` (repeated only if the OS wrote part of it). */
function _lineWriter(
  file: Deno.FsFile,
  sync: boolean,
  endsWithNewline: boolean,
  closing: () => void,
): _LineWriter {
  let pending: Promise<void> = Promise.resolve();
  // After a crash or a failed write the file may end mid-line: start on a fresh one.
  let midLine = !endsWithNewline;
  // A line is a few kB: written synchronously it costs a few µs, where a trip through the
  // I/O threads costs ~80; the fsync, when asked for, goes through them.
  const writeLine = async (line: string) => {
    const bytes = _encoder.encode(midLine ? "\n" + line : line);
    midLine = true;
    for (let done = 0; done < bytes.length;) done += file.writeSync(bytes.subarray(done));
    midLine = false;
    if (sync) await file.syncData();
  };
  return {
    write(line) {
      const done = pending.then(() => writeLine(line));
      pending = done.catch(() => {});
      return done;
    },
    close: () =>
      pending.then(() => {
        closing();
        file.close();
      }),
  };
}

function _sessionWriter(
  id: string,
  lines: _LineWriter,
  state: WriterState,
  redact: ((text: string) => string) | undefined,
  written: () => void,
): SessionWriter {
  let closing: Promise<void> | undefined;
  return {
    id,
    append(entry) {
      if (closing) return Promise.reject(new Error(`Session ${id} is closed`));
      try {
        checkSessionEntry(entry);
      } catch (error) {
        return Promise.reject(error);
      }
      if (entry.type === "message") state.messages++;
      const line = encodeEntry(entry, state.messages);
      const { message } = entry as { message?: Message };
      const title = !state.title && message?.role === "user" && !isProgramNote(message.content)
        ? sessionTitle(redact ? redact(message.content) : message.content)
        : undefined;
      return lines.write(redact ? redactJsonLine(line, redact) : line).then(() => {
        state.updated = entry.at;
        if (title) state.title = title;
        written();
      });
    },
    close: () => closing ??= lines.close(),
  };
}
