/**
 * How the service finds a session by the id a client gives: only among the sessions it lists
 * (those of its own working directory, not every project's on the machine), by the whole id or a
 * prefix long enough not to be a guess, and with refusals that name no id — so that a client
 * learns nothing of sessions it could not list.
 *
 * @module
 */

import { resolve } from "node:path";
import {
  type LoadedSession,
  MAX_SESSION_PAGE,
  SessionError,
  type SessionInfo,
  type SessionStore,
} from "../session/mod.ts";
import { ServiceError } from "./service_error.ts";

/** The fewest characters of a session id that find it by prefix. */
export const MIN_SESSION_PREFIX = 8;

/**
 * The one listed session that `id` names: exactly, or as a prefix of at least
 * {@link MIN_SESSION_PREFIX} characters that starts one listed id only. Otherwise a
 * {@link ServiceError}: `bad_request` (400) for a shorter prefix, `not_found` (404), or
 * `ambiguous` (409, saying how many, not which: `matching` when `listed` is a page of those that
 * start with `id`).
 *
 * @example
 * ```ts
 * import { listedSession } from "./session_lookup.ts";
 * import { ServiceError } from "./service_error.ts";
 * const at = "2025-01-01T00:00:00Z";
 * const listed = ["0f3a9c1e-aaaa", "0f3a9c1e-bbbb", "77d0b2c4-cccc"].map((id) => ({
 *   id, cwd: "/w", model: "a/b", created: at, updated: at, messages: 1, title: "",
 * }));
 * if (listedSession(listed, "77d0b2c4").id !== "77d0b2c4-cccc") throw new Error("unexpected");
 * const refusal = (id: string): ServiceError => {
 *   try {
 *     listedSession(listed, id);
 *   } catch (error) {
 *     if (error instanceof ServiceError) return error;
 *   }
 *   throw new Error(`"${id}" was not refused`);
 * };
 * if (refusal("7").status !== 400) throw new Error("a short prefix is refused");
 * const both = refusal("0f3a9c1e");
 * if (both.status !== 409 || /aaaa|bbbb/.test(both.message)) throw new Error("no id is named");
 * ```
 */
export function listedSession(
  listed: readonly SessionInfo[],
  id: string,
  matching?: number,
): SessionInfo {
  const list = "GET /v1/sessions lists them";
  const exact = listed.find((session) => session.id === id);
  if (exact) return exact;
  if (id.length < MIN_SESSION_PREFIX) {
    throw new ServiceError(
      "bad_request",
      400,
      `No session has the id "${id}": give a whole id, or its first ${MIN_SESSION_PREFIX} ` +
        `characters or more (${list})`,
    );
  }
  const matches = listed.filter((session) => session.id.startsWith(id));
  if (matches.length === 0) {
    throw new ServiceError("not_found", 404, `No session of this service starts "${id}" (${list})`);
  }
  if (matches.length > 1) {
    throw new ServiceError(
      "ambiguous",
      409,
      `"${id}" starts ${Math.max(matches.length, matching ?? 0)} sessions: give more of the id ` +
        `(${list})`,
    );
  }
  return matches[0];
}

/**
 * Loads the session `id` names among those `store` lists for `cwd` (see {@link listedSession}).
 * A whole id is loaded at once and kept only when it is a session of `cwd`; a prefix is looked
 * up in a page of the listing filtered by it, so that finding one costs the same however many
 * sessions there are.
 *
 * @example
 * ```ts
 * import { loadListedSession } from "./session_lookup.ts";
 * import { memorySessionStore } from "../session/mod.ts";
 * const store = memorySessionStore();
 * await (await store.create({ id: "0f3a9c1e-here", cwd: "/here", model: "a/b" })).close();
 * await (await store.create({ id: "77d0b2c4-there", cwd: "/there", model: "a/b" })).close();
 * if ((await loadListedSession(store, "/here", "0f3a9c1e")).header.id !== "0f3a9c1e-here") {
 *   throw new Error("unexpected");
 * }
 * const other = await loadListedSession(store, "/here", "77d0b2c4-there").catch((e) => e);
 * if (other.status !== 404) throw new Error("another directory's session was served");
 * ```
 */
export async function loadListedSession(
  store: SessionStore,
  cwd: string,
  id: string,
): Promise<LoadedSession> {
  const where = resolve(cwd);
  let page = await store.list(where, { prefix: id, limit: 2 });
  // More than a page start with it: the whole id, if it is one, may be among the others.
  const exact = page.sessions.some((session) => session.id === id);
  if (page.total > 2 && !exact && id.length >= MIN_SESSION_PREFIX) {
    page = await store.list(where, { prefix: id, limit: MAX_SESSION_PAGE });
  }
  const found = listedSession(page.sessions, id, page.total);
  const loaded = await fromStore(id, () => store.load(found.id));
  if (loaded.header.id !== found.id || loaded.header.cwd !== where) {
    throw new ServiceError("not_found", 404, `No session of this service is "${id}"`);
  }
  return loaded;
}

/**
 * What `ask` gets of the store for the session a client named `id`, or a refusal that says no
 * more than a client may know: a store's own errors say where its files are (or what else the
 * server holds), which is the operator's to know, not the client's (it is kept as `cause`). A
 * session gone since it was listed is `not_found` (404); one that cannot be read, a 500.
 *
 * @example
 * ```ts
 * import { fromStore } from "./session_lookup.ts";
 * import { SessionError } from "../session/mod.ts";
 * const gone = new SessionError("No session matches \"0f3a\": see /srv/sessions", { reason: "not_found" });
 * const refusal = await fromStore("0f3a", () => Promise.reject(gone)).catch((error) => error);
 * if (refusal.status !== 404 || refusal.message.includes("/srv")) throw new Error("unexpected");
 * if (await fromStore("0f3a", () => Promise.resolve(1)) !== 1) throw new Error("unexpected");
 * ```
 */
export async function fromStore<T>(id: string, ask: () => Promise<T>): Promise<T> {
  try {
    return await ask();
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    const refusal = error instanceof SessionError && error.reason === "not_found"
      ? new ServiceError("not_found", 404, `No session of this service is "${id}"`)
      : new ServiceError("internal", 500, `The session "${id}" could not be read`);
    throw Object.assign(refusal, { cause: error });
  }
}
