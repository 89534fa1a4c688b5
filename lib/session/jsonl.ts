/**
 * The JSONL form of a session, as `fileSessionStore` keeps it: line 1 the header, then one line
 * per entry. Entry lines are written with their keys in a fixed order, ending with `"n"` (the
 * number of messages in the session once this line is counted) and `"at"`, so that a listing
 * learns a session's size and last update from the file's last few bytes:
 *
 * ```text
 * {"type":"session","version":1,"id":"…","cwd":"/work","model":"openai/gpt-4.1","created":"…"}
 * {"type":"message","message":{"role":"user","content":"Fix the build"},"n":1,"at":"…"}
 * {"type":"model","model":"anthropic/claude-sonnet-4-5","n":1,"at":"…"}
 * {"type":"compaction","state":{"summary":"…","replaces":40},"tokensBefore":9e4,"tokensAfter":8e3,"n":57,"at":"…"}
 * ```
 *
 * @module
 */

import type { Message } from "../messages.ts";
import { checkEntryLine } from "./schema.ts";
import {
  isProgramNote,
  SESSION_SCHEMA_VERSION,
  type SessionEntry,
  SessionError,
  type SessionHeader,
  sessionTitle,
} from "./store.ts";

/**
 * The header's line, newline included.
 *
 * @example
 * ```ts
 * import { encodeHeader } from "./jsonl.ts";
 * const line = encodeHeader({
 *   type: "session", version: 1, id: "s1", cwd: "/w", model: "a/b", created: "2025-01-01T00:00:00Z",
 * });
 * if (!line.startsWith('{"type":"session","version":1,') || !line.endsWith("}\n")) throw new Error();
 * ```
 */
export function encodeHeader(header: SessionHeader): string {
  const { type: _type, version, id, cwd, model, created, ...rest } = header;
  return JSON.stringify({ type: "session", version, id, cwd, model, created, ...rest }) + "\n";
}

/**
 * An entry's line, newline included; `n` is the session's message count once it is counted.
 *
 * @example
 * ```ts
 * import { encodeEntry } from "./jsonl.ts";
 * const line = encodeEntry({ type: "model", model: "a/b", at: "2025-01-01T00:00:00Z" }, 3);
 * if (line !== '{"type":"model","model":"a/b","n":3,"at":"2025-01-01T00:00:00Z"}\n') throw new Error();
 * ```
 */
export function encodeEntry(entry: SessionEntry, n: number): string {
  let body: string;
  if (entry.type === "message") {
    const { message } = entry;
    // The user's text right after the role, so that a title can be read from a cut line.
    let ordered: Message = message;
    if (message.role === "user") {
      const { role, content, ...rest } = message;
      ordered = { role, content, ...rest };
    }
    body = `"message":${JSON.stringify(ordered)}`;
  } else if (entry.type === "compaction") {
    body = `"state":${JSON.stringify(entry.state)},"tokensBefore":${
      JSON.stringify(entry.tokensBefore)
    },"tokensAfter":${JSON.stringify(entry.tokensAfter)}`;
  } else {
    body = `"model":${JSON.stringify(entry.model)}`;
  }
  return `{"type":"${entry.type}",${body},"n":${n},"at":${JSON.stringify(entry.at)}}\n`;
}

/** A session file, parsed. */
export interface ParsedSession {
  /** The header. */
  header: SessionHeader;
  /** The entries that could be read. */
  entries: SessionEntry[];
  /** What was skipped, and why. */
  warnings: string[];
}

/**
 * Parses a session file's text. A line cut off at the end (a crash mid-write), a line that is not
 * JSON, or one that is JSON of another shape than a session entry (checked with
 * `sessionEntrySchema`) is skipped with a warning that says which line and why; a file without a
 * session header, or of another format version, is a `SessionError`.
 *
 * @example
 * ```ts
 * import { parseSessionText } from "./jsonl.ts";
 * const text = '{"type":"session","version":1,"id":"s","cwd":"/","model":"a/b","created":"x"}\n' +
 *   '{"type":"message","message":{"role":"user","content":"hi"},"n":1,"at":"y"}\n{"type":"mess';
 * const { entries, warnings } = parseSessionText(text, "s.jsonl");
 * if (entries.length !== 1 || !warnings[0].includes("cut off")) throw new Error("unexpected");
 * ```
 */
export function parseSessionText(text: string, file: string): ParsedSession {
  const lines = text.split("\n");
  const cut = lines[lines.length - 1] !== "";
  if (!cut) lines.pop();
  const header = parseHeaderLine(lines[0] ?? "", file);
  const entries: SessionEntry[] = [];
  const warnings: string[] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      warnings.push(
        cut && i === lines.length - 1
          ? `the last line of ${file} was cut off (the agent probably stopped mid-write); ` +
            `it was skipped`
          : `line ${i + 1} of ${file} is not valid JSON (probably cut off by a crash); ` +
            `it was skipped`,
      );
      continue;
    }
    const checked = checkEntryLine(value);
    if (checked.entry) entries.push(checked.entry);
    else {
      warnings.push(
        `line ${i + 1} of ${file} is not a session entry (${checked.problem}); it was skipped`,
      );
    }
  }
  return { header, entries, warnings };
}

/**
 * Parses a header line; a `SessionError` when it is not one, or is of another format version.
 *
 * @example
 * ```ts
 * import { parseHeaderLine } from "./jsonl.ts";
 * const line = '{"type":"session","version":1,"id":"s","cwd":"/","model":"a/b","created":"x"}';
 * if (parseHeaderLine(line, "s.jsonl").id !== "s") throw new Error("unexpected");
 * ```
 */
export function parseHeaderLine(line: string, file: string): SessionHeader {
  let header: Partial<SessionHeader> | undefined;
  try {
    header = JSON.parse(line);
  } catch { /* reported below */ }
  if (
    header?.type !== "session" || typeof header.id !== "string" ||
    typeof header.cwd !== "string" || typeof header.created !== "string"
  ) {
    throw new SessionError(`${file} is not a session: its first line is not a session header`, {
      reason: "invalid",
    });
  }
  if (header.version !== SESSION_SCHEMA_VERSION) {
    throw new SessionError(
      `${file} is a session of format version ${JSON.stringify(header.version)}, and this ` +
        `version of the agent reads version ${SESSION_SCHEMA_VERSION} only: ` +
        (typeof header.version === "number" && header.version > SESSION_SCHEMA_VERSION
          ? "update the agent to resume it"
          : "it cannot be resumed"),
      { reason: "unsupported_version" },
    );
  }
  return {
    ...header,
    model: typeof header.model === "string" ? header.model : "",
  } as SessionHeader;
}

/**
 * The title in the first bytes of a session file (which may end mid-line): the first line of
 * the first user message the user wrote (notes of the program passed over), or `undefined` when
 * the first bytes end before it.
 *
 * @example
 * ```ts
 * import { titleFromHead } from "./jsonl.ts";
 * const head = '{"type":"session"}\n{"type":"message","message":{"role":"user","content":"Fix th';
 * if (titleFromHead(head) !== "Fix th") throw new Error("unexpected");
 * ```
 */
export function titleFromHead(head: string): string | undefined {
  const lines = head.split("\n");
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (i === lines.length - 1) {
      if (!line.startsWith(_USER_LINE)) return undefined;
      const text = _partialString(line.slice(_USER_LINE.length));
      return isProgramNote(text) ? undefined : sessionTitle(text);
    }
    if (!line.startsWith('{"type":"message"')) continue;
    try {
      const entry = checkEntryLine(JSON.parse(line)).entry;
      if (
        entry?.type === "message" && entry.message.role === "user" &&
        !isProgramNote(entry.message.content)
      ) {
        return sessionTitle(entry.message.content);
      }
    } catch { /* a line cut by a crash: look further */ }
  }
  return undefined;
}

/**
 * What the last bytes of a session file say: its message count and last update, when its last
 * line is a complete entry line.
 *
 * @example
 * ```ts
 * import { infoFromTail } from "./jsonl.ts";
 * const info = infoFromTail('…ent":"hi"},"n":7,"at":"2025-01-01T00:00:00.000Z"}\n');
 * if (info?.messages !== 7 || info.updated !== "2025-01-01T00:00:00.000Z") throw new Error();
 * ```
 */
export function infoFromTail(tail: string): { messages: number; updated: string } | undefined {
  const match = /"n":(\d+),"at":("(?:[^"\\\n]|\\.)*")\}\n$/.exec(tail);
  if (!match) return undefined;
  try {
    return { messages: Number(match[1]), updated: JSON.parse(match[2]) };
  } catch {
    return undefined;
  }
}

const _USER_LINE = '{"type":"message","message":{"role":"user","content":"';

/** The start of a JSON string's contents that may be cut anywhere, decoded. */
function _partialString(raw: string): string {
  raw = raw.slice(0, 2000);
  let end = 0;
  while (end < raw.length && raw[end] !== '"') end += raw[end] === "\\" ? 2 : 1;
  let text = raw.slice(0, end);
  for (let tries = 0; tries < 6 && text; tries++, text = text.slice(0, -1)) {
    try {
      return JSON.parse(`"${text}"`);
    } catch { /* cut inside an escape: drop a character */ }
  }
  return "";
}
