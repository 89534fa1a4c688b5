/**
 * A session store in memory, for tests and for programs that keep no sessions on disk.
 *
 * @module
 */

import { resolve } from "node:path";
import {
  checkSessionEntry,
  compareSessions,
  newSessionHeader,
  replaySession,
  resolveSessionId,
  type SessionEntry,
  SessionError,
  type SessionHeader,
  type SessionInfo,
  type SessionListOptions,
  type SessionPage,
  type SessionStore,
  type SessionWriter,
  titleOf,
} from "./store.ts";
import { pageSessions } from "./page.ts";
import { sessionBusy } from "./writer_lock.ts";

/**
 * A {@link SessionStore} in memory: for tests, and for programs that keep no sessions on disk.
 * Entries are copied as JSON, so what `load` returns is what a file store would return; a
 * session has one writer at a time, as in a file store.
 *
 * @example
 * ```ts
 * import { memorySessionStore } from "./memory_store.ts";
 * const store = memorySessionStore();
 * const writer = await store.create({ cwd: "/work", model: "openai/gpt-4.1-mini" });
 * const at = new Date().toISOString();
 * await writer.append({ type: "message", message: { role: "user", content: "Hello" }, at });
 * await writer.close();
 * const session = await store.load(writer.id.slice(0, 8));
 * if (session.messages.length !== 1) throw new Error("unexpected");
 * if ((await store.latest("/work"))?.title !== "Hello") throw new Error("unexpected");
 * ```
 */
export function memorySessionStore(): SessionStore {
  const sessions = new Map<string, { header: SessionHeader; entries: SessionEntry[] }>();
  const hint = "See the saved sessions with the store's list().";
  const find = (idOrPrefix: string) =>
    sessions.get(resolveSessionId(sessions.keys(), idOrPrefix, hint))!;
  /** The sessions a writer has open. */
  const writing = new Set<string>();
  const writer = (session: { header: SessionHeader; entries: SessionEntry[] }): SessionWriter => {
    const { id } = session.header;
    if (writing.has(id)) throw sessionBusy(id, { pid: Deno.pid });
    writing.add(id);
    let closed = false;
    return {
      id,
      append: (entry) =>
        _later(() => {
          if (closed) throw new Error(`Session ${id} is closed`);
          checkSessionEntry(entry);
          session.entries.push(_copy(entry));
        }),
      close: () =>
        _later(() => {
          if (!closed) writing.delete(id);
          closed = true;
        }),
    };
  };
  const all = (cwd?: string) =>
    _later(() => {
      const infos: SessionInfo[] = [];
      const dir = cwd === undefined ? undefined : resolve(cwd);
      for (const { header, entries } of sessions.values()) {
        if (dir !== undefined && header.cwd !== dir) continue;
        const messages = entries.filter((entry) => entry.type === "message");
        infos.push({
          id: header.id,
          cwd: header.cwd,
          model: header.model,
          created: header.created,
          updated: entries.at(-1)?.at ?? header.created,
          messages: messages.length,
          title: titleOf(messages.map((entry) => entry.message)),
        });
      }
      return infos.sort(compareSessions);
    });
  function list(cwd?: string): Promise<SessionInfo[]>;
  function list(cwd: string | undefined, options: SessionListOptions): Promise<SessionPage>;
  async function list(
    cwd?: string,
    options?: SessionListOptions,
  ): Promise<SessionInfo[] | SessionPage> {
    const infos = await all(cwd);
    return options ? pageSessions(infos, options) : infos;
  }
  return {
    create: (init) =>
      _later(() => {
        const header = newSessionHeader(init);
        if (sessions.has(header.id)) {
          throw new SessionError(`Session ${header.id} exists already`, { reason: "exists" });
        }
        const session = { header, entries: [] };
        sessions.set(header.id, session);
        return writer(session);
      }),
    open: (idOrPrefix) => _later(() => writer(find(idOrPrefix))),
    load: (idOrPrefix) =>
      _later(() => {
        const { header, entries } = find(idOrPrefix);
        return replaySession(_copy(header), entries.map(_copy));
      }),
    list,
    latest: async (cwd) => (await all(cwd))[0],
  };
}

function _later<T>(work: () => T): Promise<T> {
  return new Promise((resolve) => resolve(work()));
}

function _copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value));
}
