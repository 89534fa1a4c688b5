/**
 * A saved session read for a client entry by entry, never whole: found as `session_lookup.ts`
 * finds one (only among the sessions the service lists, by whole id or a prefix of at least
 * `MIN_SESSION_PREFIX` characters, refusals that name no id), then read through the store's
 * `read` (a chunk of the file at a time), or its `load` where the store has no `read`.
 *
 * @module
 */

import { resolve } from "node:path";
import type { LoadedSession, SessionEntry, SessionReader, SessionStore } from "../session/mod.ts";
import { ServiceError } from "./service_error.ts";
import { fromStore, listedSession, MIN_SESSION_PREFIX } from "./session_lookup.ts";

/**
 * Opens for reading the session `id` names among those `store` lists for `cwd`: a whole id is
 * opened at once and kept only when it is a session of `cwd`; a prefix is looked up in a page
 * of the listing filtered by it. Refuses as `listedSession` does: `bad_request` (400) for a
 * prefix under {@link MIN_SESSION_PREFIX} characters, `not_found` (404), `ambiguous` (409).
 *
 * @example
 * ```ts
 * import { readListedSession } from "./session_read.ts";
 * import { memorySessionStore } from "../session/mod.ts";
 * const store = memorySessionStore();
 * const writer = await store.create({ id: "0f3a9c1e-here", cwd: "/here", model: "a/b" });
 * const at = "2025-01-01T00:00:00Z";
 * await writer.append({ type: "message", message: { role: "user", content: "Hi" }, at });
 * await writer.close();
 * await (await store.create({ id: "77d0b2c4-there", cwd: "/there", model: "a/b" })).close();
 * const reader = await readListedSession(store, "/here", "0f3a9c1e");
 * if ((await Array.fromAsync(reader)).length !== 1) throw new Error("unexpected");
 * const other = await readListedSession(store, "/here", "77d0b2c4-there").catch((e) => e);
 * if (other.status !== 404) throw new Error("another directory's session was served");
 * ```
 */
export async function readListedSession(
  store: SessionStore,
  cwd: string,
  id: string,
): Promise<SessionReader> {
  const where = resolve(cwd);
  const exact = await _read(store, id).catch(() => undefined);
  if (exact) {
    if (exact.header.id === id && exact.header.cwd === where) return exact;
    await exact.close();
  }
  if (id.length < MIN_SESSION_PREFIX) listedSession([], id); // throws: too short to be a prefix
  const page = await store.list(where, { prefix: id, limit: 2 });
  if (page.total > page.sessions.length) {
    throw new ServiceError(
      "ambiguous",
      409,
      `"${id}" starts ${page.total} sessions: give more of the id (GET /v1/sessions lists them)`,
    );
  }
  const found = listedSession(page.sessions, id);
  const reader = await fromStore(id, () => _read(store, found.id));
  if (reader.header.id !== found.id || reader.header.cwd !== where) {
    await reader.close();
    throw new ServiceError("not_found", 404, `No session of this service is "${id}"`);
  }
  return reader;
}

/** The store's reader of a session; one over what `load` gives where the store has none. */
async function _read(store: SessionStore, id: string): Promise<SessionReader> {
  if (store.read) return await store.read(id);
  return _loadedReader(await store.load(id));
}

/** A reader of a session loaded whole: its messages, last compaction and current model. */
function _loadedReader(loaded: LoadedSession): SessionReader {
  const { header, messages, compaction, model } = loaded;
  async function* entries(): AsyncGenerator<SessionEntry> {
    for (const message of messages) yield { type: "message", message, at: "" };
    if (compaction) {
      yield { type: "compaction", state: compaction, tokensBefore: 0, tokensAfter: 0, at: "" };
    }
    if (model !== header.model) yield { type: "model", model, at: "" };
  }
  return {
    header,
    warnings: loaded.warnings,
    [Symbol.asyncIterator]: entries,
    close: () => Promise.resolve(),
    [Symbol.asyncDispose]: () => Promise.resolve(),
  };
}
