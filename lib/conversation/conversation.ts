/**
 * What a conversation holds and saves as it goes: its history, its compaction state, the totals
 * of tokens and cost, and the session file it is saved to (created at the first message). The
 * driver (`startConversation`) records each run into one.
 *
 * @module
 */

import type { CompactionState } from "../compaction_state.ts";
import type { RunResult } from "../events.ts";
import type { RunLoopEvent } from "../runloop/events.ts";
import type { Message } from "../messages.ts";
import type { LoadedSession, ResumedSession, SessionStore, SessionWriter } from "../session/mod.ts";
import { addUsage, emptyUsage, type Usage } from "../usage.ts";

/** A conversation that saves itself as it goes. */
export interface Conversation {
  /** The session id. The session file is created when the first message is saved. */
  readonly id: string;
  /** Whether anything was saved to a session file. */
  readonly saved: boolean;
  /** The whole history. */
  readonly messages: readonly Message[];
  /** What compaction left of the history, if it happened. */
  readonly compaction: CompactionState | undefined;
  /** Tokens used so far. */
  readonly usage: Usage;
  /** Dollars spent so far, when prices are known. */
  readonly costUsd: number | undefined;
  /**
   * Saves what an event adds (messages, compactions) and counts the tokens and cost of every
   * model call it reports (turns, and the routing of a message).
   */
  record(event: RunLoopEvent): Promise<void>;
  /** Counts a model call made outside a run (the summary of `/compact`) in the totals. */
  count(usage: Usage, costUsd?: number): void;
  /** Takes a run's outcome as the new state. */
  settle(result: RunResult): void;
  /** Records a switch of model. */
  switchModel(model: string): Promise<void>;
  /** Sets the compaction state (after `/compact`) and saves it. */
  compacted(state: CompactionState, tokensBefore: number, tokensAfter: number): Promise<void>;
  /** Closes the session file. */
  close(): Promise<void>;
}

/** Options of {@link conversation}. */
export interface ConversationOptions {
  /** Where sessions are saved; none: nothing is saved. */
  store?: SessionStore;
  /** The working directory, recorded in the session's header. */
  cwd: string;
  /** The model, `provider/model`. */
  model: string;
  /** A session to go on with. */
  resumed?: LoadedSession;
  /** The id of a new session (default a new UUID). */
  id?: string;
}

/**
 * Creates a conversation, new or resumed.
 *
 * @example
 * ```ts
 * import { conversation } from "./conversation.ts";
 * const talk = conversation({ cwd: "/w", model: "openai/gpt-4.1" });
 * await talk.record({ type: "message", message: { role: "user", content: "hi" } });
 * if (talk.id.length !== 36) throw new Error("a new conversation has a fresh id");
 * ```
 */
export function conversation(options: ConversationOptions): Conversation {
  let messages: Message[] = [...(options.resumed?.messages ?? [])];
  let compaction = options.resumed?.compaction;
  const id = options.resumed?.header.id ?? options.id ?? crypto.randomUUID();
  // A session resumed with `resumeSession` comes with its writer, closed with the conversation.
  let writer: SessionWriter | undefined = (options.resumed as Partial<ResumedSession>)?.writer;
  let model = options.model;
  const usage = emptyUsage();
  let costUsd: number | undefined;
  const at = () => new Date().toISOString();

  const open = async (): Promise<SessionWriter | undefined> => {
    if (!options.store) return undefined;
    if (!writer) {
      writer = options.resumed
        ? await options.store.open(id)
        : await options.store.create({ id, cwd: options.cwd, model });
    }
    return writer;
  };

  return {
    get id() {
      return id;
    },
    get saved() {
      return writer !== undefined;
    },
    get messages() {
      return messages;
    },
    get compaction() {
      return compaction;
    },
    get usage() {
      return usage;
    },
    get costUsd() {
      return costUsd;
    },
    async record(event) {
      if (event.type === "message") {
        await (await open())?.append({ type: "message", message: event.message, at: at() });
      } else if (event.type === "compaction" && event.state.replaces > 0) {
        // Dropping old tool outputs leaves no state worth keeping; a summary does.
        compaction = event.state;
        await (await open())?.append({
          type: "compaction",
          state: event.state,
          tokensBefore: event.tokensBefore,
          tokensAfter: event.tokensAfter,
          at: at(),
        });
      } else if (event.type === "turn_end" || (event.type === "run_loop_start" && event.usage)) {
        // Model calls of the turns, and the router's call that placed the message.
        addUsage(usage, event.usage!);
        if (event.costUsd !== undefined) costUsd = (costUsd ?? 0) + event.costUsd;
      }
    },
    count(more, cost) {
      addUsage(usage, more);
      if (cost !== undefined) costUsd = (costUsd ?? 0) + cost;
    },
    settle(result) {
      messages = result.messages;
      compaction = result.compaction ?? compaction;
    },
    async switchModel(next) {
      model = next;
      if (writer) await writer.append({ type: "model", model: next, at: at() });
    },
    async compacted(state, tokensBefore, tokensAfter) {
      compaction = state;
      await (await open())?.append({
        type: "compaction",
        state,
        tokensBefore,
        tokensAfter,
        at: at(),
      });
    },
    async close() {
      await writer?.close();
    },
  };
}
