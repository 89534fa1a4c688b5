/**
 * The driver every front end runs through: a conversation with the agent whose messages each run
 * in a run loop (with the project's memory), under one permission policy, recorded to the session
 * as they stream. The headless run, the interactive session and the service keep only their input
 * and their display; how a run is assembled, permitted and recorded is said once, here.
 *
 * @module
 */

import { compactConversation } from "../compaction/compact.ts";
import { costMeter } from "../cost.ts";
import type { PermissionCallback } from "../hooks.ts";
import type { RunAgentOptions } from "../loop/options.ts";
import type { MemoryStore } from "../memory/memory.ts";
import type { Message } from "../messages.ts";
import type { Model } from "../model.ts";
import { permissionPolicy, type PolicyOptions } from "../permissions/policy.ts";
import type { RunLoopEndEvent, RunLoopEvent } from "../runloop/events.ts";
import { type Placement, type RunLoops, runLoops } from "../runloop/manager.ts";
import { runInLoop, type RunInLoopResult } from "../runloop/run.ts";
import {
  type LoadedSession,
  type ResumedSession,
  resumeSession,
  type SessionStore,
} from "../session/mod.ts";
import type { Tool } from "../tool.ts";
import type { Usage } from "../usage.ts";
import { type Conversation, conversation } from "./conversation.ts";

/** The options of every run of a driver, besides those it sets itself. */
export type DriverRunOptions = Omit<
  RunAgentOptions,
  | "model"
  | "tools"
  | "systemPrompt"
  | "cwd"
  | "maxTurns"
  | "permission"
  | "input"
  | "messages"
  | "signal"
  | "sessionId"
  | "pendingInput"
  | "compactionState"
>;

/** Options of {@link startConversation}. */
export interface DriverOptions {
  /** The model. */
  model: Model;
  /** The model's name as `provider/model`, recorded in the session (default from `model`). */
  modelSpec?: string;
  /** The tools, or a function that makes a fresh set for each run (tools that keep state). */
  tools?: readonly Tool[] | (() => readonly Tool[]);
  /** The system prompt. */
  systemPrompt?: string;
  /** The working directory: the tools' and the session's (default "."). */
  cwd?: string;
  /** Model calls allowed per run. */
  maxTurns?: number;
  /**
   * Who may run a tool call: the permission rules and mode, made into the policy (with `ask`,
   * a rule that asks asks; without, it refuses), or a permission callback of your own.
   */
  permission?: PolicyOptions | PermissionCallback;
  /** More options of every run: hooks, capabilities, the sandbox report, compaction, limits. */
  runOptions?: DriverRunOptions;
  /** Where the conversation is saved as a session; none: nothing is saved. */
  store?: SessionStore;
  /** A saved session to go on with. */
  resumed?: LoadedSession;
  /** The id of a new conversation (default a new UUID). */
  id?: string;
  /** Long-term memory: memories offered, the `recall` tool, run loops archived. */
  memory?: MemoryStore;
  /** Offer the `recall` tool when there is a memory (default true). */
  recallTool?: boolean;
  /** The run loops the conversation's messages run in (default: its own, over `memory`). */
  runLoops?: RunLoops;
  /**
   * Told when the conversation ends its run loop (`endRunLoop`, `restart`, `resume`): the event,
   * whose `archiveError` says why memory could not archive it.
   */
  onRunLoopEnd?: (event: RunLoopEndEvent) => void;
  /**
   * Where a message goes when {@link SendOptions.placement} does not say: `route` (default) lets
   * the run loops place it (a run loop it names, or a new one); `continue` keeps the
   * conversation in one run loop at a time, the one its last message went to while it is active.
   */
  placing?: "route" | "continue";
}

/** Options of {@link Driver.send}. */
export interface SendOptions {
  /** Cancels the run; it ends with status `aborted`, and what it did is kept. */
  signal?: AbortSignal;
  /** Where the message was already placed (by `runLoops.place`). */
  placement?: Placement;
  /** Complete the run loop when the run succeeds (one-shot runs: the goal is done). */
  complete?: boolean;
  /** Messages that arrived while the run went on, taken at each turn boundary. */
  pendingInput?: () => Message[];
  /** Model calls allowed in this run (default the driver's). */
  maxTurns?: number;
  /** Active run loops kept at most (default 5). */
  maxActive?: number;
}

/** Options of {@link Driver.compact}. */
export interface CompactOptions {
  /** What the summary should keep above all. */
  focus?: string;
  /** Cancels the summary call. */
  signal?: AbortSignal;
}

/** What {@link Driver.compact} did. */
export interface Compacted {
  /** Estimated tokens of the request before. */
  tokensBefore: number;
  /** Estimated tokens of the request after. */
  tokensAfter: number;
  /** What the summary's model call used. */
  usage: Usage;
  /** What it cost in US dollars, when the model's prices are known. */
  costUsd?: number;
}

/** A conversation with the agent that runs, permits and records each message sent to it. */
export interface Driver {
  /** The conversation: its id, history, totals, and whether it was saved. */
  readonly conversation: Conversation;
  /** The model runs use now. */
  readonly model: Model;
  /** The model's name, `provider/model`. */
  readonly modelSpec: string;
  /**
   * Runs a message: each event is recorded to the session, then yielded; the result is the
   * conversation's new state.
   */
  send(message: string, options?: SendOptions): AsyncGenerator<RunLoopEvent, RunInLoopResult>;
  /** Uses another model from the next run on, and records the switch. */
  switchModel(model: Model, spec: string): Promise<void>;
  /**
   * Summarizes the conversation now, steered by `focus`, and saves the summary; the summary's
   * model call counts in the totals. Nothing when there is nothing yet to compact; throws when
   * the summary call fails.
   */
  compact(options?: CompactOptions): Promise<Compacted | undefined>;
  /**
   * Completes the run loop the conversation is in (archived in memory, if kept): the event that
   * says so (its `archiveError` says why memory could not archive it), or nothing when the
   * conversation is in no active run loop.
   */
  endRunLoop(): Promise<RunLoopEndEvent | undefined>;
  /**
   * Completes the run loop, closes the session, and goes on in a new conversation with the same
   * model, tools and permission policy.
   */
  restart(): Promise<void>;
  /**
   * Goes on with the saved session `id` (or a unique prefix) instead, as {@link restart} does:
   * held from then on, or, when another process holds it, a copy of its history. Fails before
   * anything changes when the store has no such session.
   */
  resume(id: string): Promise<ResumedSession>;
  /** Closes the session file. */
  close(): Promise<void>;
}

/**
 * Starts a conversation, new or resumed. Its permission policy is built once, for every run
 * and every conversation it goes on to.
 *
 * @example
 * ```ts
 * import { startConversation } from "./driver.ts";
 * import { memorySessionStore } from "../session/mod.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const store = memorySessionStore();
 * const driver = startConversation({ model: scriptedModel([{ text: "Hi!" }]), store });
 * const types: string[] = [];
 * const run = driver.send("Hello");
 * let step = await run.next();
 * for (; !step.done; step = await run.next()) types.push(step.value.type);
 * await driver.close();
 * const saved = await store.load(driver.conversation.id);
 * if (step.value.text !== "Hi!" || saved.messages.length !== 2 || types.at(-1) !== "result") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function startConversation(options: DriverOptions): Driver {
  checkRunOptions(options.runOptions);
  let model = options.model;
  let modelSpec = options.modelSpec ?? `${model.provider}/${model.id}`;
  const open = (resumed?: LoadedSession, id?: string) =>
    conversation({ store: options.store, cwd: options.cwd ?? ".", model: modelSpec, resumed, id });
  let talk = open(options.resumed, options.id);
  const loops = options.runLoops ?? runLoops({ memory: options.memory });
  const permission = typeof options.permission === "function"
    ? options.permission
    : options.permission && permissionPolicy(options.permission);
  /** The run loop of the last message, for `placing: "continue"`. */
  let runLoopId: string | undefined;

  const place = async (message: string, signal?: AbortSignal) => {
    if (options.placing !== "continue") return undefined;
    const current = loops.active().find((loop) => loop.id === runLoopId);
    return await loops.place(
      message,
      current ? { runLoopId: current.id, signal } : { fresh: true },
    );
  };
  const endRunLoop = async () => {
    const id = runLoopId;
    runLoopId = undefined;
    if (id && loops.active().some((loop) => loop.id === id)) {
      const ended = await loops.end(id, "completed").catch(() => undefined);
      if (ended) options.onRunLoopEnd?.(ended);
      return ended;
    }
    return undefined;
  };

  return {
    get conversation() {
      return talk;
    },
    get model() {
      return model;
    },
    get modelSpec() {
      return modelSpec;
    },
    async *send(message, sending = {}) {
      // The run stays with the conversation it started in.
      const recorded = talk;
      const placement = sending.placement ?? await place(message, sending.signal);
      const events = runInLoop({
        ...options.runOptions,
        model,
        tools: typeof options.tools === "function" ? options.tools() : options.tools,
        systemPrompt: options.systemPrompt,
        cwd: options.cwd,
        maxTurns: sending.maxTurns ?? options.maxTurns,
        permission,
        message,
        placement,
        loops,
        memory: options.memory,
        recallTool: options.recallTool,
        messages: recorded.messages,
        compactionState: recorded.compaction,
        sessionId: recorded.id,
        signal: sending.signal,
        pendingInput: sending.pendingInput,
        maxActive: sending.maxActive,
        complete: sending.complete,
      });
      let step = await events.next();
      while (!step.done) {
        const type = step.value.type;
        if (type === "run_loop_start") runLoopId = step.value.runLoopId;
        // A delta is part of a message to come: the conversation records the message.
        if (type !== "text_delta" && type !== "reasoning_delta") await recorded.record(step.value);
        yield step.value;
        step = await events.next();
      }
      recorded.settle(step.value);
      return step.value;
    },
    async switchModel(next, spec) {
      model = next;
      modelSpec = spec;
      await talk.switchModel(spec);
    },
    async compact(compacting = {}) {
      if (talk.messages.length === 0) return undefined;
      // Each summary call is priced by its own usage: a tier follows the size of one request.
      const pricing = model.info?.pricing;
      const meter = pricing ? costMeter(pricing) : undefined;
      const done = await compactConversation({
        model: meter ? meter.wrap(model) : model,
        messages: talk.messages,
        systemPrompt: options.systemPrompt,
        state: talk.compaction,
        focus: compacting.focus || undefined,
        signal: compacting.signal,
      });
      await talk.compacted(done.state, done.tokensBefore, done.tokensAfter);
      const costUsd = meter?.take();
      talk.count(done.usage, costUsd);
      const { tokensBefore, tokensAfter, usage } = done;
      return { tokensBefore, tokensAfter, usage, ...(costUsd === undefined ? {} : { costUsd }) };
    },
    endRunLoop,
    async restart() {
      await endRunLoop();
      await talk.close();
      talk = open();
    },
    async resume(id) {
      const store = options.store;
      if (!store) throw new Error("Sessions are not saved in this conversation");
      // The whole id, found before anything changes; the session is read once, by resuming it.
      const whole = await _sessionId(store, id);
      await endRunLoop();
      await talk.close();
      const held = await resumeSession(store, whole, { fork: true });
      talk = open(held);
      return held;
    },
    async close() {
      await talk.close();
    },
  };
}

/** The whole id of the session `id` names: from its header alone where the store reads by entry. */
async function _sessionId(store: SessionStore, id: string): Promise<string> {
  if (!store.read) return (await store.load(id)).header.id;
  const reader = await store.read(id);
  await reader.close();
  return reader.header.id;
}

/** The options of a run the driver sets itself, each from an option of its own. */
const _OWN_OPTIONS = ["model", "tools", "systemPrompt", "cwd", "maxTurns", "permission"] as const;

/**
 * Refuses `runOptions` that carry what the driver sets from options of its own: a permission
 * callback there would otherwise be dropped without a word, and every tool call let through.
 *
 * @example
 * ```ts
 * import { checkRunOptions } from "./driver.ts";
 * let refused = false;
 * try {
 *   checkRunOptions({ permission: () => ({ behavior: "deny", reason: "no" }) } as never);
 * } catch {
 *   refused = true;
 * }
 * if (!refused) throw new Error("unexpected");
 * ```
 */
export function checkRunOptions(runOptions: DriverRunOptions | undefined): void {
  if (!runOptions) return;
  for (const key of _OWN_OPTIONS) {
    if ((runOptions as Record<string, unknown>)[key] !== undefined) {
      throw new TypeError(
        `runOptions.${key} is not taken here: pass it as the \`${key}\` option itself`,
      );
    }
  }
}
