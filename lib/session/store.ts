/**
 * Sessions: a conversation recorded as it happens, so that it survives a crash and can be
 * resumed. {@link SessionStore} is what a store implements: JSONL files
 * (`fileSessionStore`), memory (`memorySessionStore`), or a database of your own.
 *
 * A session is a header, then entries appended one by one: each message the loop adds to the
 * history, each compaction, each switch of model. Nothing is ever rewritten.
 *
 * @module
 */

import { resolve } from "node:path";
import type { CompactionState } from "../compaction_state.ts";
import { AgentError } from "../errors.ts";
import { NUDGE_MESSAGE } from "../messages.ts";
import type { Message } from "../messages.ts";

/** The version of the session format this library writes and reads. */
export const SESSION_SCHEMA_VERSION = 1;

/** What a session starts with. */
export interface SessionHeader {
  /** Discriminant. */
  type: "session";
  /** The format version ({@link SESSION_SCHEMA_VERSION} when written by this library). */
  version: number;
  /** The session id. */
  id: string;
  /** The working directory the session belongs to (absolute). */
  cwd: string;
  /** The model the session started with, `provider/model`. */
  model: string;
  /** When the session was created (ISO 8601). */
  created: string;
}

/** One step of a session: a message added to the history, a compaction, a switch of model. */
export type SessionEntry =
  | {
    /** A message was added to the history. */
    type: "message";
    /** The message. */
    message: Message;
    /** When (ISO 8601). */
    at: string;
  }
  | {
    /** The conversation was compacted. */
    type: "compaction";
    /** What compaction left: the summary and how many messages it replaces. */
    state: CompactionState;
    /** Estimated tokens before. */
    tokensBefore: number;
    /** Estimated tokens after. */
    tokensAfter: number;
    /** When (ISO 8601). */
    at: string;
  }
  | {
    /** The session switched to another model. */
    type: "model";
    /** The model now used, `provider/model`. */
    model: string;
    /** When (ISO 8601). */
    at: string;
  };

/** A session as listed: enough to pick one, without loading it. */
export interface SessionInfo {
  /** The session id. */
  id: string;
  /** The working directory the session belongs to. */
  cwd: string;
  /** The model the session started with ({@link LoadedSession.model} has the current one). */
  model: string;
  /** When the session was created (ISO 8601). */
  created: string;
  /** When the last entry was added (ISO 8601); `created` when there is none. */
  updated: string;
  /** How many messages the session holds. */
  messages: number;
  /**
   * The user's first message: its first line, cut to about 80 characters ("" when none). Notes
   * the program added on the user's side ({@link isProgramNote}) are passed over.
   */
  title: string;
}

/** A session read back, ready to resume. */
export interface LoadedSession {
  /** The session's header. */
  header: SessionHeader;
  /** The whole history, in order (compaction never removes messages). */
  messages: Message[];
  /** The last compaction, when there was one. */
  compaction?: CompactionState;
  /** The current model: the last switch, or the header's. */
  model: string;
  /** What was skipped while reading, and why (e.g. a line cut off by a crash). */
  warnings: string[];
}

/**
 * Appends to one session. Entries are stored in the order `append` is called. A session has one
 * writer at a time: until it is closed, opening the session again is refused (`busy`).
 */
export interface SessionWriter {
  /** The session id. */
  readonly id: string;
  /** Stores an entry; resolves once it is stored (for files: written to the file). */
  append(entry: SessionEntry): Promise<void>;
  /** Waits for pending appends, then releases the session. Later appends are refused. */
  close(): Promise<void>;
}

/** What a new session is created from. */
export interface NewSession {
  /**
   * The id; a random UUID when omitted. Letters, digits, `.`, `_` and `-` only. A store refuses
   * an id it holds already (the file store: one taken in another project's folder too, unless it
   * is a random UUID, as `crypto.randomUUID()` makes, which is taken to be new).
   */
  id?: string;
  /** The working directory the session belongs to. */
  cwd: string;
  /** The model, `provider/model`. */
  model: string;
}

/** Where sessions are kept. Implement it to keep them in a database. */
export interface SessionStore {
  /** Creates a session and returns its writer. */
  create(header: NewSession): Promise<SessionWriter>;
  /**
   * Appends to an existing session (e.g. after resuming it), by id or unique id prefix. A
   * {@link SessionError} with reason `busy` while another writer has it open.
   */
  open(idOrPrefix: string): Promise<SessionWriter>;
  /** Reads a session back, by id or unique id prefix. */
  load(idOrPrefix: string): Promise<LoadedSession>;
  /** The sessions, newest first (by last update); only those of `cwd` when given. */
  list(cwd?: string): Promise<SessionInfo[]>;
  /**
   * One page of the sessions, newest first (by last update), of `cwd` when given, filtered by
   * `options`; `next` of the page asks for the one after it. {@link pageSessions} makes a page
   * of a whole listing, for a store that has no index of its own.
   */
  list(cwd: string | undefined, options: SessionListOptions): Promise<SessionPage>;
  /** The newest session of `cwd`, if any: what `--continue` resumes. */
  latest(cwd: string): Promise<SessionInfo | undefined>;
  /**
   * Reads a session entry by entry, by id or unique id prefix, without holding it whole: for
   * sessions too large to `load` many times at once. Optional; `load` serves where it is absent.
   */
  read?(idOrPrefix: string): Promise<SessionReader>;
  /**
   * Lets go of what the store holds open (a file store: its index's database), e.g. before its
   * directory is removed. Optional; a store closed and used again opens what it needs again.
   */
  close?(): Promise<void>;
}

/**
 * A session read entry by entry ({@link SessionStore.read}): its header at once, its entries as
 * they are iterated (once). Reading to the end releases it; `close` does when stopping early.
 */
export interface SessionReader extends AsyncIterable<SessionEntry>, AsyncDisposable {
  /** The session's header. */
  readonly header: SessionHeader;
  /** What was skipped so far while reading, and why (e.g. a line cut off by a crash). */
  readonly warnings: readonly string[];
  /** The session's size in bytes as stored, when the store knows it. */
  readonly size?: number;
  /** Stops reading and releases the session. */
  close(): Promise<void>;
}

/** Which sessions a page of {@link SessionStore.list} holds. */
export interface SessionListOptions {
  /** At most this many sessions (1 to {@link MAX_SESSION_PAGE}; default {@link SESSION_PAGE}). */
  limit?: number;
  /** Where the page starts: the `next` of the page before it (then `offset` is not given). */
  cursor?: string;
  /** How many sessions to pass over first, for a page by number: `(page - 1) * limit`. */
  offset?: number;
  /** Only the sessions that started with this model (`provider/model`). */
  model?: string;
  /** Only the sessions updated at this time or later (a `Date`, or ISO 8601). */
  since?: Date | string;
  /** Only the sessions whose id starts with this. */
  prefix?: string;
}

/** A page of sessions, newest first. */
export interface SessionPage {
  /** The sessions of the page. */
  sessions: SessionInfo[];
  /** How many sessions the filters match, over all pages. */
  total: number;
  /** The cursor of the next page (`cursor` of {@link SessionListOptions}); none on the last. */
  next?: string;
}

/** The sessions a page holds when {@link SessionListOptions.limit} is not given. */
export const SESSION_PAGE = 50;

/** The most sessions a page holds. */
export const MAX_SESSION_PAGE = 1000;

/** Why a {@link SessionError} was raised. */
export type SessionErrorReason =
  | "not_found"
  | "ambiguous"
  | "exists"
  | "busy"
  | "unsupported_version"
  | "invalid";

/** The process that writes a session. */
export interface SessionHolder {
  /** Its process id. */
  pid: number;
}

/**
 * A session cannot be found, the id prefix is ambiguous, the id is taken, another process
 * writes the session (`busy`: a session has one writer at a time), or the stored session cannot
 * be read (not a session, or written by another version of the format).
 *
 * @example
 * ```ts
 * import { SessionError } from "./store.ts";
 * import { memorySessionStore } from "./memory_store.ts";
 * const error = await memorySessionStore().load("nope").catch((error) => error);
 * if (!(error instanceof SessionError) || error.reason !== "not_found") throw error;
 * ```
 */
export class SessionError extends AgentError {
  /** Why it was raised. */
  readonly reason: SessionErrorReason;
  /** For `busy`: the process that writes the session, when known. */
  readonly holder?: SessionHolder;

  /** Creates the error. */
  constructor(
    message: string,
    options: ErrorOptions & { reason: SessionErrorReason; holder?: SessionHolder },
  ) {
    super(message, options);
    this.reason = options.reason;
    if (options.holder) this.holder = options.holder;
  }
}

/**
 * How the notes the program adds on the user's side of a conversation begin: the memories
 * offered at the start of a run, and a completed run loop the user goes back to.
 */
const _NOTE_STARTS = ["[Memories from earlier work", "[Memory of run loop "];

/**
 * Whether a user message's text is a note the program added (memories offered, a run loop
 * recalled, the nudge to go on) rather than what the user said. A session's title is never one.
 *
 * @example
 * ```ts
 * import { isProgramNote } from "./store.ts";
 * if (!isProgramNote("[Memories from earlier work that may help]\n…")) throw new Error("unexpected");
 * if (isProgramNote("Fix the build")) throw new Error("unexpected");
 * ```
 */
export function isProgramNote(text: string): boolean {
  return text === NUDGE_MESSAGE || _NOTE_STARTS.some((start) => text.startsWith(start));
}

/**
 * The title of a conversation: the first user message that the user wrote, by
 * {@link sessionTitle}; "" when there is none.
 *
 * @example
 * ```ts
 * import { titleOf } from "./store.ts";
 * const title = titleOf([
 *   { role: "user", content: "[Memories from earlier work that may help]\n…" },
 *   { role: "user", content: "Fix the build" },
 * ]);
 * if (title !== "Fix the build") throw new Error(title);
 * ```
 */
export function titleOf(messages: readonly Message[]): string {
  for (const message of messages) {
    if (message.role === "user" && !isProgramNote(message.content)) {
      return sessionTitle(message.content);
    }
  }
  return "";
}

/**
 * A session's title: the first non-blank line of a text, whitespace collapsed, cut to `max`
 * characters with "…".
 *
 * @example
 * ```ts
 * import { sessionTitle } from "./store.ts";
 * if (sessionTitle("\n  Fix   the build\nthen test") !== "Fix the build") throw new Error("unexpected");
 * ```
 */
export function sessionTitle(text: string, max = 80): string {
  let line = "";
  for (const piece of text.slice(0, 4 * max + 4096).split("\n")) {
    line = piece.trim().replace(/\s+/g, " ");
    if (line) break;
  }
  const chars = Array.from(line);
  return chars.length <= max ? line : chars.slice(0, max - 1).join("").trimEnd() + "…";
}

/**
 * The header of a new session, checked (a `TypeError` for a bad id), its `cwd` made absolute.
 *
 * @example
 * ```ts
 * import { newSessionHeader } from "./store.ts";
 * const header = newSessionHeader({ id: "s1", cwd: "/work", model: "openai/gpt-4.1-mini" });
 * if (header.version !== 1 || header.type !== "session") throw new Error("unexpected");
 * ```
 */
export function newSessionHeader(init: NewSession, now: Date = new Date()): SessionHeader {
  const id = init.id ?? crypto.randomUUID();
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(id)) {
    throw new TypeError(`Bad session id "${id}": use letters, digits, ".", "_" and "-" only`);
  }
  if (typeof init.cwd !== "string" || !init.cwd) throw new TypeError("A session needs a cwd");
  if (typeof init.model !== "string") throw new TypeError("A session needs a model");
  return {
    type: "session",
    version: SESSION_SCHEMA_VERSION,
    id,
    cwd: resolve(init.cwd),
    model: init.model,
    created: now.toISOString(),
  };
}

/**
 * Throws a `TypeError` unless `entry` is a {@link SessionEntry} (checked shallowly).
 *
 * @example
 * ```ts
 * import { checkSessionEntry } from "./store.ts";
 * checkSessionEntry({ type: "model", model: "openai/gpt-5", at: new Date().toISOString() });
 * ```
 */
export function checkSessionEntry(entry: SessionEntry): void {
  const ok = typeof entry === "object" && entry !== null && typeof entry.at === "string" &&
    (entry.type === "message"
      ? typeof entry.message === "object" && entry.message !== null
      : entry.type === "compaction"
      ? typeof entry.state === "object" && entry.state !== null
      : entry.type === "model" && typeof entry.model === "string");
  if (!ok) throw new TypeError(`Not a session entry: ${JSON.stringify(entry)?.slice(0, 200)}`);
}

/**
 * Replays a session's entries: the history, the last compaction, the current model.
 *
 * @example
 * ```ts
 * import { replaySession } from "./store.ts";
 * const header = {
 *   type: "session", version: 1, id: "s", cwd: "/", model: "a/b", created: "2025-01-01T00:00:00Z",
 * } as const;
 * const at = "2025-01-01T00:00:01Z";
 * const loaded = replaySession(header, [
 *   { type: "message", message: { role: "user", content: "hi" }, at },
 *   { type: "model", model: "a/c", at },
 * ]);
 * if (loaded.messages.length !== 1 || loaded.model !== "a/c") throw new Error("unexpected");
 * ```
 */
export function replaySession(
  header: SessionHeader,
  entries: Iterable<SessionEntry>,
  warnings: string[] = [],
): LoadedSession {
  const messages: Message[] = [];
  let compaction: CompactionState | undefined;
  let model = header.model;
  for (const entry of entries) {
    if (entry.type === "message") messages.push(entry.message);
    else if (entry.type === "compaction") compaction = entry.state;
    else if (entry.type === "model") model = entry.model;
  }
  return { header, messages, ...(compaction ? { compaction } : {}), model, warnings };
}

/**
 * Finds the one id that is `idOrPrefix` or starts with it; a {@link SessionError} otherwise.
 * `hint` tells the user how to list the sessions.
 *
 * @example
 * ```ts
 * import { resolveSessionId } from "./store.ts";
 * if (resolveSessionId(["ab12", "cd34"], "ab", "") !== "ab12") throw new Error("unexpected");
 * ```
 */
export function resolveSessionId(ids: Iterable<string>, idOrPrefix: string, hint: string): string {
  const matches = new Set<string>();
  for (const id of ids) {
    if (id === idOrPrefix) return id;
    if (idOrPrefix && id.startsWith(idOrPrefix)) matches.add(id);
  }
  if (matches.size === 1) return [...matches][0];
  if (matches.size === 0) {
    throw new SessionError(`No session matches "${idOrPrefix}". ${hint}`.trim(), {
      reason: "not_found",
    });
  }
  const sorted = [...matches].sort();
  const shown = sorted.slice(0, 10).join(", ") + (sorted.length > 10 ? ", …" : "");
  throw new SessionError(
    `Session id "${idOrPrefix}" is ambiguous: it starts ${sorted.length} sessions (${shown}). ` +
      `Type more of the id.`,
    { reason: "ambiguous" },
  );
}

/**
 * Orders sessions newest first: by last update, then creation, then id.
 *
 * @example
 * ```ts
 * import { compareSessions } from "./store.ts";
 * const old = { updated: "2025-01-01T00:00:00Z", created: "2025-01-01T00:00:00Z", id: "a" };
 * const recent = { updated: "2025-02-01T00:00:00Z", created: "2025-01-01T00:00:00Z", id: "b" };
 * if (compareSessions(old, recent) <= 0) throw new Error("unexpected");
 * ```
 */
export function compareSessions(
  a: Pick<SessionInfo, "updated" | "created" | "id">,
  b: Pick<SessionInfo, "updated" | "created" | "id">,
): number {
  return _desc(Date.parse(a.updated), Date.parse(b.updated)) ||
    _desc(Date.parse(a.created), Date.parse(b.created)) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function _desc(a: number, b: number): number {
  return (Number.isNaN(b) ? 0 : b) - (Number.isNaN(a) ? 0 : a);
}
