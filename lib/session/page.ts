/**
 * Pages of sessions: the options of a listing checked once, the order sessions are listed in as
 * a key a cursor can hold, and a page cut from a whole listing, for stores without an index.
 *
 * A cursor is the sort key of the last session of a page: the next page starts after it, so
 * that sessions added while a client pages through do not shift what it sees next.
 *
 * @module
 */

import {
  compareSessions,
  MAX_SESSION_PAGE,
  SESSION_PAGE,
  type SessionInfo,
  type SessionListOptions,
  type SessionPage,
} from "./store.ts";

/**
 * Where a session sorts: its last update and creation in ms (0 when unreadable), its id, and,
 * in a store whose sessions of one id may be kept in two places, the place.
 */
export interface SessionSortKey {
  /** The last update, in ms since the epoch. */
  updated: number;
  /** The creation, in ms since the epoch. */
  created: number;
  /** The session id. */
  id: string;
  /** Where the session is kept, when its id alone does not say (a project's folder). */
  folder?: string;
}

/** {@link SessionListOptions}, checked: what a store pages by. */
export interface SessionQuery {
  /** Sessions a page holds at most. */
  limit: number;
  /** Sessions passed over first. */
  offset: number;
  /** The page starts after this session, when a cursor was given. */
  after?: SessionSortKey;
  /** Only sessions that started with this model. */
  model?: string;
  /** Only sessions updated at this time (ms) or later. */
  since?: number;
  /** Only sessions whose id starts with this. */
  prefix?: string;
}

/**
 * Checks the options of a page; a `TypeError` (a `RangeError` for a limit out of range) that
 * says what is wrong.
 *
 * @example
 * ```ts
 * import { sessionQuery } from "./page.ts";
 * const query = sessionQuery({ limit: 20, since: "2025-01-01T00:00:00Z" });
 * if (query.limit !== 20 || query.since !== Date.parse("2025-01-01T00:00:00Z")) throw new Error();
 * ```
 */
export function sessionQuery(options: SessionListOptions): SessionQuery {
  const { limit = SESSION_PAGE, offset = 0, cursor, model, since, prefix } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SESSION_PAGE) {
    throw new RangeError(`A page holds 1 to ${MAX_SESSION_PAGE} sessions, not ${limit}`);
  }
  if (!Number.isInteger(offset) || offset < 0) {
    throw new RangeError(`The offset of a page is a whole number ≥ 0, not ${offset}`);
  }
  if (cursor !== undefined && offset) {
    throw new TypeError("A page starts at a cursor or at an offset, not both");
  }
  const query: SessionQuery = { limit, offset };
  if (cursor !== undefined) query.after = _parseCursor(cursor);
  if (model !== undefined) {
    if (typeof model !== "string") throw new TypeError("The model filter is a provider/model");
    query.model = model;
  }
  if (since !== undefined) {
    const time = since instanceof Date ? since.getTime() : Date.parse(since);
    if (Number.isNaN(time)) {
      throw new TypeError(`"since" is a date (ISO 8601), not ${JSON.stringify(since)}`);
    }
    query.since = time;
  }
  if (prefix !== undefined) {
    if (typeof prefix !== "string") throw new TypeError("The id prefix is a string");
    query.prefix = prefix;
  }
  return query;
}

/**
 * Where a session sorts in a listing (newest first: by last update, then creation, then id).
 *
 * @example
 * ```ts
 * import { sessionSortKey } from "./page.ts";
 * const key = sessionSortKey({ id: "a", updated: "2025-01-01T00:00:00Z", created: "bad" });
 * if (key.updated !== Date.parse("2025-01-01T00:00:00Z") || key.created !== 0) throw new Error();
 * ```
 */
export function sessionSortKey(
  info: Pick<SessionInfo, "id" | "updated" | "created">,
): SessionSortKey {
  return { updated: _ms(info.updated), created: _ms(info.created), id: info.id };
}

/**
 * The cursor that starts the page after the session `key` names.
 *
 * @example
 * ```ts
 * import { sessionCursor, sessionQuery } from "./page.ts";
 * const cursor = sessionCursor({ updated: 2, created: 1, id: "a.b" });
 * if (sessionQuery({ cursor }).after?.id !== "a.b") throw new Error("unexpected");
 * const after = sessionQuery({ cursor: sessionCursor({ updated: 2, created: 1, id: "a:b", folder: "p" }) }).after;
 * if (after?.id !== "a:b" || after.folder !== "p") throw new Error("unexpected");
 * ```
 */
export function sessionCursor(key: SessionSortKey): string {
  return key.folder === undefined
    ? `${key.updated}.${key.created}.${key.id}`
    : `${key.updated}.${key.created}:${key.folder}:${key.id}`;
}

/**
 * Whether a session sorts after `key` (so belongs to the pages after it).
 *
 * @example
 * ```ts
 * import { sortsAfter } from "./page.ts";
 * if (!sortsAfter({ updated: 1, created: 1, id: "b" }, { updated: 2, created: 1, id: "a" })) {
 *   throw new Error("older sorts after newer");
 * }
 * ```
 */
export function sortsAfter(session: SessionSortKey, key: SessionSortKey): boolean {
  return session.updated < key.updated ||
    (session.updated === key.updated &&
      (session.created < key.created ||
        (session.created === key.created &&
          (session.id > key.id ||
            (session.id === key.id && (session.folder ?? "") > (key.folder ?? ""))))));
}

/**
 * A page of a listing: the sessions `options` asks for, among `sessions` (in any order). What a
 * {@link SessionStore} without an index of its own answers `list(cwd, options)` with.
 *
 * @example
 * ```ts
 * import { pageSessions } from "./page.ts";
 * const at = (day: number) => `2025-01-${String(day).padStart(2, "0")}T00:00:00Z`;
 * const sessions = [1, 2, 3].map((day) => ({
 *   id: `s${day}`, cwd: "/w", model: "a/b", created: at(day), updated: at(day), messages: 1, title: "",
 * }));
 * const first = pageSessions(sessions, { limit: 2 });
 * if (first.sessions.map((s) => s.id).join() !== "s3,s2" || first.total !== 3) throw new Error();
 * const second = pageSessions(sessions, { limit: 2, cursor: first.next });
 * if (second.sessions.map((s) => s.id).join() !== "s1" || second.next) throw new Error();
 * ```
 */
export function pageSessions(
  sessions: readonly SessionInfo[],
  options: SessionListOptions,
): SessionPage {
  const query = sessionQuery(options);
  const matching = sessions.filter((info) => matchesQuery(info, query)).sort(compareSessions);
  let start = query.offset;
  if (query.after) {
    const after = query.after;
    start = matching.findIndex((info) => sortsAfter(sessionSortKey(info), after));
    if (start < 0) start = matching.length;
  }
  const page = matching.slice(start, start + query.limit);
  const more = start + page.length < matching.length;
  return {
    sessions: page,
    total: matching.length,
    ...(more && page.length ? { next: sessionCursor(sessionSortKey(page.at(-1)!)) } : {}),
  };
}

/**
 * Whether a session passes a query's filters (its model, update time and id prefix).
 *
 * @example
 * ```ts
 * import { matchesQuery, sessionQuery } from "./page.ts";
 * const info = { id: "ab", cwd: "/w", model: "a/b", created: "", updated: "", messages: 0, title: "" };
 * if (!matchesQuery(info, sessionQuery({ prefix: "a", model: "a/b" }))) throw new Error();
 * ```
 */
export function matchesQuery(info: SessionInfo, query: SessionQuery): boolean {
  return (query.model === undefined || info.model === query.model) &&
    (query.since === undefined || _ms(info.updated) >= query.since) &&
    (query.prefix === undefined || info.id.startsWith(query.prefix));
}

function _ms(iso: string): number {
  const time = Date.parse(iso);
  return Number.isNaN(time) ? 0 : time;
}

function _parseCursor(cursor: string): SessionSortKey {
  const match = typeof cursor === "string" ? _CURSOR.exec(cursor) : null;
  if (!match) {
    throw new TypeError(
      `Not a cursor of a session listing: ${JSON.stringify(cursor)?.slice(0, 80)}; give the ` +
        `"next" of the page before`,
    );
  }
  const [, updated, created, folder, id] = match;
  return {
    updated: Number(updated),
    created: Number(created),
    id,
    ...(folder === undefined ? {} : { folder }),
  };
}

/** A cursor: `<updated>.<created>.<id>`, or `<updated>.<created>:<folder>:<id>`. */
const _CURSOR = /^(-?\d+)\.(-?\d+)(?:\.|:([A-Za-z0-9._-]*):)(.+)$/;
