/**
 * Resuming a session: becoming its one writer, then reading it back, so that the history read is
 * the whole of it and nothing is appended behind it. When another process writes the session,
 * the caller chooses: a `busy` refusal, or a fork — a new session that starts with a copy of the
 * history, where this process goes on while the other keeps the original. The copy is a whole
 * conversation: a call the other process was still running is answered with an error result
 * that says so.
 *
 * @module
 */

import { type AssistantMessage, type Message, toolCallsOf, type ToolMessage } from "../messages.ts";
import {
  type LoadedSession,
  SessionError,
  type SessionHolder,
  type SessionStore,
  type SessionWriter,
} from "./store.ts";

/** A session resumed: its history, and the writer that holds it. */
export interface ResumedSession extends LoadedSession {
  /** Appends where the history ends; close it when done (it releases the session). */
  writer: SessionWriter;
  /**
   * Set when the session asked for was busy and this one is its fork: the id of the original
   * and the process that writes it, when known.
   */
  forkedFrom?: { id: string; holder?: SessionHolder };
}

/** Options of {@link resumeSession}. */
export interface ResumeSessionOptions {
  /**
   * When another process writes the session: `false` (the default) throws its `busy`
   * {@link SessionError}; `true` goes on in a new session, a copy of the history.
   */
  fork?: boolean;
}

/**
 * Resumes a session by id or unique id prefix: opens it for writing (so that no other process
 * can), then loads it. A busy session is refused, or forked when `options.fork` says so.
 *
 * @example
 * ```ts
 * import { memorySessionStore, resumeSession } from "./mod.ts";
 * const store = memorySessionStore();
 * const first = await store.create({ cwd: "/w", model: "a/b" });
 * await first.append({ type: "message", message: { role: "user", content: "hi" }, at: "" });
 * // The first writer still holds it: a second one forks.
 * const second = await resumeSession(store, first.id, { fork: true });
 * if (second.forkedFrom?.id !== first.id || second.header.id === first.id) throw new Error();
 * if (second.messages.length !== 1) throw new Error("the fork has the history");
 * await second.writer.close();
 * await first.close();
 * const again = await resumeSession(store, first.id);
 * if (again.forkedFrom || again.header.id !== first.id) throw new Error("free again");
 * await again.writer.close();
 * ```
 */
export async function resumeSession(
  store: SessionStore,
  idOrPrefix: string,
  options: ResumeSessionOptions = {},
): Promise<ResumedSession> {
  let writer: SessionWriter;
  try {
    writer = await store.open(idOrPrefix);
  } catch (error) {
    if (!(options.fork && error instanceof SessionError && error.reason === "busy")) throw error;
    return await _fork(store, idOrPrefix, error.holder);
  }
  try {
    return { ...await store.load(writer.id), writer };
  } catch (error) {
    await writer.close();
    throw error;
  }
}

/** A new session holding a copy of the busy one's history, opened for writing. */
async function _fork(
  store: SessionStore,
  idOrPrefix: string,
  holder: SessionHolder | undefined,
): Promise<ResumedSession> {
  const original = await store.load(idOrPrefix);
  const writer = await store.create({ cwd: original.header.cwd, model: original.model });
  try {
    const at = new Date().toISOString();
    for (const message of original.messages) await writer.append({ type: "message", message, at });
    // The other process may be amid a turn: its calls without a result yet are answered here.
    for (const message of _unanswered(original.messages)) {
      await writer.append({ type: "message", message, at });
    }
    if (original.compaction) {
      const state = original.compaction;
      await writer.append({ type: "compaction", state, tokensBefore: 0, tokensAfter: 0, at });
    }
    const copy = await store.load(writer.id);
    const forkedFrom = { id: original.header.id, ...(holder ? { holder } : {}) };
    return { ...copy, warnings: original.warnings, writer, forkedFrom };
  } catch (error) {
    await writer.close();
    throw error;
  }
}

/**
 * Results for the calls of the last assistant message that have none yet (the session was
 * copied while another process ran them), so that the copy is a whole conversation.
 */
function _unanswered(messages: readonly Message[]): ToolMessage[] {
  const last = messages.findLastIndex((message) => message.role === "assistant");
  if (last < 0) return [];
  const answered = new Set(
    messages.slice(last + 1).flatMap((message) =>
      message.role === "tool" ? [message.toolCallId] : []
    ),
  );
  return toolCallsOf(messages[last] as AssistantMessage)
    .filter((call) => !answered.has(call.id))
    .map((call) => ({
      role: "tool",
      toolCallId: call.id,
      name: call.name,
      content: "No result: the call was still running in another process when this session " +
        "was copied from the one that process writes.",
      isError: true,
    }));
}

/**
 * What to tell the user of a fork: which session was busy, who writes it, and where this run
 * goes on instead.
 *
 * @example
 * ```ts
 * import { forkNotice } from "./resume.ts";
 * const text = forkNotice({
 *   header: { id: "8b1d0e4f-aaaa" },
 *   forkedFrom: { id: "3f9a2c7e-bbbb", holder: { pid: 4242 } },
 * });
 * if (!text.startsWith("session 3f9a2c7e is being written by another process (pid 4242):")) {
 *   throw new Error(text);
 * }
 * ```
 */
export function forkNotice(
  resumed: {
    header: Pick<LoadedSession["header"], "id">;
    forkedFrom?: ResumedSession["forkedFrom"];
  },
): string {
  const from = resumed.forkedFrom;
  if (!from) return "";
  const who = from.holder ? `another process (pid ${from.holder.pid})` : "another process";
  return `session ${from.id.slice(0, 8)} is being written by ${who}: this run goes on in a new ` +
    `session, ${resumed.header.id.slice(0, 8)}, that starts with a copy of its history, so that ` +
    `the two never interleave`;
}
