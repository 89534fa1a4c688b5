/**
 * Short-term memory: the active run loops, each a user goal with its own conversation and the
 * iterations spent on it. Completed and failed run loops are archived in long-term memory.
 *
 * @module
 */

import type { AgentEvent } from "../events.ts";
import type { MemoryStore } from "../memory/memory.ts";
import type { Iteration, RunLoop } from "../memory/types.ts";
import type { Message } from "../messages.ts";
import type { Model } from "../model.ts";
import { costOf } from "../cost.ts";
import { addUsage, emptyUsage, type Usage } from "../usage.ts";
import type { RunLoopEndEvent, RunLoopStartEvent } from "./events.ts";
import { routeMessage } from "./router.ts";

/** How a message was placed, with the run loop it went to. */
export interface Placement {
  /** The run loop. */
  runLoop: RunLoop;
  /** The event that announces it. */
  event: RunLoopStartEvent;
  /** What the model should know first when the run loop goes on from a completed one. */
  seed?: Message;
}

/** Tokens spent routing messages, and their cost when the router's prices are known. */
export interface RoutingSpend {
  /** Tokens the router's model calls used. */
  usage: Usage;
  /** Their cost in US dollars, when the router's prices are known. */
  costUsd?: number;
}

/** Options of {@link runLoops}. */
export interface RunLoopsOptions {
  /** Where completed run loops are archived. */
  memory?: MemoryStore;
  /**
   * The model that judges whether a message continues a run loop; none: a deterministic rule
   * does. Its calls are paid for: each shows in the `run_loop_start` event of the message it
   * placed, and counts in the usage of a run in the run loop it chose.
   */
  router?: Model;
  /** The least confidence taken from the router (default 0.6). */
  threshold?: number;
  /** Active run loops kept at most; the oldest beyond it is completed (default 5). */
  maxActive?: number;
  /** The clock (for tests). */
  now?: () => Date;
  /**
   * Leave archiving to {@link RunLoops.archivePending}: `end()` then gives its event at once,
   * and a front end can show the answer before the archive is written (default: `end()`
   * archives before it resolves).
   */
  deferArchive?: boolean;
  /**
   * Told when memory could not archive a run loop that ended (without `deferArchive`): its id,
   * and why. The run loop is kept while the process runs (found by `get`, reopened when named),
   * and archived once an archive works again (or by `archivePending()`); at most 100 are kept,
   * and the oldest given up beyond that is told of too.
   */
  onArchiveError?: (runLoopId: string, error: string) => void;
}

/** The run loops of an agent. */
export interface RunLoops {
  /** The active run loops, oldest first. */
  active(): RunLoop[];
  /**
   * A run loop by id or by a prefix no other active or kept run loop has: active, kept until
   * memory can archive it, or archived (by its whole id).
   */
  get(id: string): Promise<RunLoop | undefined>;
  /** The conversation of an active run loop (a copy). */
  history(id: string): Message[];
  /**
   * Places a message: in the run loop it names, one it continues, or a new one (always a new
   * one with `fresh`). With `placed`, the message is already the last iteration of the active
   * run loop it names, and no iteration is added for it there. A run loop named by `runLoopId`
   * that ended goes on as a new one seeded from it; one that is not known at all, as a new one:
   * a message sent to a run loop is never routed to another.
   */
  place(
    message: string,
    options?: { runLoopId?: string; signal?: AbortSignal; fresh?: boolean; placed?: boolean },
  ): Promise<Placement>;
  /**
   * Takes a placement back before anything ran: a run loop it started is dropped, the
   * iteration it added to another is removed.
   */
  unplace(placement: Placement): void;
  /**
   * Takes what routing messages into a run loop spent and no run counted yet (a run counts it
   * in its usage when it ends); nothing when routing spent nothing there.
   */
  takeRoutingSpend(runLoopId: string): RoutingSpend | undefined;
  /** Records an event of a run in the run loop's current iteration. */
  record(runLoopId: string, event: AgentEvent): void;
  /**
   * Ends a run loop: archives it (with `deferArchive`, leaves that to {@link archivePending})
   * and gives the event that says so. It ends even when memory cannot archive it: the event's
   * `archiveError` then says why.
   */
  end(
    runLoopId: string,
    status: "completed" | "failed",
  ): Promise<RunLoopEndEvent>;
  /** The run loops kept after memory could not archive them, oldest first. */
  kept(): RunLoop[];
  /**
   * Archives the run loops ended and not archived yet (with `deferArchive`), in the order they
   * ended; rejects with the first failure once every one was tried. Resolves at once when there
   * are none. First it waits for the pass archiving the kept run loops (without `deferArchive`),
   * or makes one when the last archive worked, until one fails again.
   */
  archivePending(): Promise<void>;
}

const MENTION = /\bloop:([0-9a-z-]{4,})\b/i;

/** Run loops ended and not archived kept at most, waiting for memory to work again. */
const _MAX_UNARCHIVED = 100;

/**
 * Creates the run loops of an agent.
 *
 * @example
 * ```ts
 * import { runLoops } from "./manager.ts";
 * const loops = runLoops();
 * const first = await loops.place("Write the release notes");
 * loops.record(first.runLoop.id, { type: "text_delta", text: "Done." });
 * const again = await loops.place(`loop:${first.runLoop.id} and add the date`);
 * if (again.event.decision !== "named" || again.runLoop.id !== first.runLoop.id) throw new Error();
 * ```
 */
export function runLoops(options: RunLoopsOptions = {}): RunLoops {
  const now = () => (options.now?.() ?? new Date()).toISOString();
  const active = new Map<string, { loop: RunLoop; messages: Message[] }>();
  const spends = new Map<string, RoutingSpend>();
  /** Run loops ended and not archived yet (with `deferArchive`). */
  let pending: RunLoop[] = [];
  /** Run loops ended that memory could not archive, oldest first: archived again later. */
  const unarchived = new Map<string, RunLoop>();
  const pricing = options.router?.info?.pricing;
  /** The router's spend on a message, in its event and owed by the run loop it chose. */
  const spend = (loop: RunLoop, usage: Usage | undefined) => {
    if (!usage) return {};
    const costUsd = pricing ? _usd(costOf(usage, pricing)) : undefined;
    const owed = spends.get(loop.id) ?? { usage: emptyUsage() };
    addUsage(owed.usage, usage);
    if (costUsd !== undefined) owed.costUsd = _usd((owed.costUsd ?? 0) + costUsd);
    spends.set(loop.id, owed);
    return { usage, ...(costUsd === undefined ? {} : { costUsd }) };
  };

  const start = (goal: string, seededFrom?: string): RunLoop => {
    const loop: RunLoop = {
      id: crypto.randomUUID(),
      goal,
      status: "active",
      iterations: [],
      createdAt: now(),
      ...(seededFrom ? { seededFrom } : {}),
    };
    active.set(loop.id, { loop, messages: [] });
    return loop;
  };
  const iterate = (loop: RunLoop, message: string): void => {
    loop.iterations.push({
      index: loop.iterations.length,
      userMessage: message,
      reasoning: [],
      toolCalls: [],
      toolResults: [],
      response: "",
      startedAt: now(),
    });
  };
  /** The active and the kept run loops whose id starts with `id`. */
  const matching = (id: string) => ({
    live: [...active.keys()].filter((key) => key.startsWith(id)),
    kept: [...unarchived.keys()].filter((key) => key.startsWith(id)),
  });
  /** The active run loop of this id, or of a prefix no other run loop has. */
  const find = (id: string) => {
    const { live, kept } = matching(id);
    return live.length === 1 && kept.length === 0 ? active.get(live[0]) : undefined;
  };
  /**
   * A run loop that ended, by id or a prefix no other run loop has: kept until memory can
   * archive it, or archived (by its whole id: memory looks up no prefix).
   */
  const endedLoop = async (id: string) => {
    const { live, kept } = matching(id);
    if (live.length + kept.length > 1) return undefined;
    if (kept.length === 1) return unarchived.get(kept[0]);
    return live.length === 0 ? await options.memory?.runLoop(id) : undefined;
  };
  /** Tells of a run loop memory could not archive; a listener that throws changes nothing. */
  const told = (runLoopId: string, error: string) => {
    try {
      options.onArchiveError?.(runLoopId, error);
    } catch {
      // The run loop ended all the same.
    }
  };
  /** The pass archiving the kept run loops, while one goes. */
  let draining: Promise<void> | undefined;
  /**
   * Archives the kept run loops, oldest first, one pass at a time, until one fails: that one goes
   * last, so that a run loop memory never takes does not hold up the others.
   */
  const drain = () =>
    draining ??= (async () => {
      for (const [id, loop] of [...unarchived]) {
        if (!unarchived.has(id)) continue;
        const failure = await archive(loop);
        if (failure === undefined) {
          unarchived.delete(id);
          continue;
        }
        // Last, unless it was given up meanwhile.
        if (unarchived.delete(id)) unarchived.set(id, loop);
        break;
      }
    })().finally(() => draining = undefined);
  /** Whether the last archive worked: a pass is tried again only then. */
  let working = true;
  /** Archives `loop`; what went wrong, when it did. */
  const archive = async (loop: RunLoop): Promise<string | undefined> => {
    try {
      await options.memory?.archive(loop);
      working = true;
      return undefined;
    } catch (error) {
      working = false;
      return (error instanceof Error && error.message) || String(error);
    }
  };
  const manager: RunLoops = {
    active: () => [...active.values()].map((entry) => entry.loop),
    async get(id) {
      return find(id)?.loop ?? await endedLoop(id);
    },
    history(id) {
      return [...(find(id)?.messages ?? [])];
    },
    async place(message, placing = {}) {
      const named = placing.runLoopId ?? MENTION.exec(message)?.[1];
      let old: RunLoop | undefined;
      let loop: RunLoop;
      let event: Placement["event"];
      let seed: Message | undefined;
      if (placing.fresh && !placing.runLoopId) {
        loop = start(message);
        event = _event(loop, "new", "a new run loop was asked for");
      } else if (named && find(named)) {
        loop = find(named)!.loop;
        event = _event(loop, "named", `the message names run loop ${loop.id.slice(0, 8)}`);
        if (placing.placed) return { runLoop: loop, event };
      } else if (named && (old = await endedLoop(named))) {
        // A run loop that ended goes on as a new one, seeded with what memory holds of it.
        loop = start(message, old.id);
        seed = _seed(old);
        event = {
          ..._event(loop, "reopened", `run loop ${old.id.slice(0, 8)} was completed`),
          seededFrom: old.id,
        };
      } else if (placing.runLoopId !== undefined) {
        // Sent to a run loop no longer known (ended, and memory keeps nothing of it): it goes on
        // in a new one, never in a run loop of someone else's.
        loop = start(message);
        event = _event(loop, "new", `run loop ${placing.runLoopId.slice(0, 8)} is not known`);
      } else {
        const decision = await routeMessage(message, manager.active(), {
          model: options.router,
          threshold: options.threshold,
          signal: placing.signal,
        });
        const reason = named
          ? `no run loop "${named}" is known; ${decision.reason}`
          : decision.reason;
        if (decision.action === "continue" && decision.runLoopId) {
          loop = active.get(decision.runLoopId)!.loop;
          event = _event(loop, "continue", reason, decision.confidence);
        } else {
          loop = start(message);
          event = _event(loop, "new", reason, decision.confidence);
        }
        event = { ...event, ...spend(loop, decision.usage) };
      }
      iterate(loop, message);
      return { runLoop: loop, event, seed };
    },
    unplace({ runLoop, event }) {
      if (event.decision === "new" || event.decision === "reopened") {
        active.delete(runLoop.id);
        spends.delete(runLoop.id);
      } else runLoop.iterations.pop();
    },
    takeRoutingSpend(runLoopId) {
      const owed = spends.get(runLoopId);
      spends.delete(runLoopId);
      return owed;
    },
    record(runLoopId, event) {
      const entry = active.get(runLoopId);
      const iteration = entry?.loop.iterations.at(-1);
      if (!entry || !iteration) return;
      _record(iteration, event, now);
      if (event.type === "message") entry.messages.push(event.message);
    },
    async end(runLoopId, status) {
      const entry = active.get(runLoopId);
      if (!entry) throw new Error(`No active run loop ${runLoopId}`);
      active.delete(runLoopId);
      spends.delete(runLoopId);
      entry.loop.status = status;
      entry.loop.completedAt = now();
      const ended: RunLoopEndEvent = {
        type: "run_loop_end",
        runLoopId,
        status,
        iterations: entry.loop.iterations.length,
      };
      if (options.deferArchive) {
        pending.push(entry.loop);
        return ended;
      }
      // Memory that cannot archive (a full disk, a damaged or locked file) never costs the run
      // that ended the run loop its answer: the run loop is kept, and archived again once
      // archiving works.
      const failure = await archive(entry.loop);
      if (failure !== undefined) {
        ended.archiveError = failure;
        unarchived.set(entry.loop.id, entry.loop);
        told(runLoopId, failure);
        if (unarchived.size > _MAX_UNARCHIVED) {
          const [dropped] = unarchived.keys();
          unarchived.delete(dropped);
          told(dropped, `given up: more than ${_MAX_UNARCHIVED} run loops wait to be archived`);
        }
        return ended;
      }
      // Memory works again: the kept run loops are archived, off the path of this run.
      if (unarchived.size > 0) void drain();
      return ended;
    },
    kept: () => [...unarchived.values()],
    async archivePending() {
      // The pass under way, or one more when the last archive worked (a memory still locked
      // would only make its caller wait).
      if (draining) await draining;
      else if (unarchived.size > 0 && working) await drain();
      const archiving = pending;
      pending = [];
      let failure: unknown;
      for (const loop of archiving) {
        try {
          await options.memory?.archive(loop);
        } catch (error) {
          failure ??= error;
        }
      }
      if (failure !== undefined) throw failure;
    },
  };
  return manager;
}

/** The run loops to complete because too many are active (the oldest first). */
export function overflow(loops: RunLoops, maxActive = 5): RunLoop[] {
  const active = loops.active();
  return active.slice(0, Math.max(0, active.length - maxActive));
}

function _event(
  loop: RunLoop,
  decision: Placement["event"]["decision"],
  reason: string,
  confidence?: number,
): Placement["event"] {
  return {
    type: "run_loop_start",
    runLoopId: loop.id,
    goal: loop.goal,
    decision,
    reason,
    ...(confidence === undefined ? {} : { confidence }),
  };
}

function _record(iteration: Iteration, event: AgentEvent, now: () => string): void {
  switch (event.type) {
    case "reasoning_delta":
      if (iteration.reasoning.length === 0) iteration.reasoning.push("");
      iteration.reasoning[iteration.reasoning.length - 1] += event.text;
      break;
    case "text_delta":
      iteration.response += event.text;
      break;
    case "tool_call":
      iteration.toolCalls.push({ id: event.id, name: event.name, input: event.input });
      // A new turn's reasoning starts a new entry.
      if (iteration.reasoning.at(-1)) iteration.reasoning.push("");
      break;
    case "tool_result":
      iteration.toolResults.push({
        id: event.id,
        name: event.name,
        output: event.output,
        isError: event.isError,
      });
      break;
    case "turn_start":
      // Only the final answer is the response: text before tool calls is part of the work.
      if (iteration.toolCalls.length > 0 || iteration.response) iteration.response = "";
      break;
    case "result":
      iteration.endedAt = now();
      iteration.reasoning = iteration.reasoning.filter(Boolean);
      break;
  }
}

/** What the model is told of a completed run loop the user goes back to. */
function _seed(old: RunLoop): Message {
  const steps = old.iterations.map((iteration) =>
    `- ${iteration.userMessage ?? ""}\n  → ${iteration.response.slice(0, 600).replace(/\n+/g, " ")}`
  ).join("\n");
  return {
    role: "user",
    content:
      `[Memory of run loop ${old.id.slice(0, 8)}, ${old.status} ${old.completedAt ?? ""}]\n` +
      `Goal: ${old.goal}\n${steps}\n[End of memory. The user goes on from it.]`,
  };
}

/** Dollars to a billionth, so that sums carry no float noise. */
function _usd(amount: number): number {
  return Math.round(amount * 1e9) / 1e9;
}
