/**
 * What a run inside a run loop streams besides the agent loop's own events: where its message
 * went (`run_loop_start`, after `start`) and each run loop that ended with it (`run_loop_end`,
 * before `result`). Only the run loops make these; the core {@link AgentEvent} union does not
 * carry them.
 *
 * @module
 */

import type { AgentEvent } from "../events.ts";
import type { Usage } from "../usage.ts";

/** A run loop (one user goal) began, or a message joined an active one. */
export interface RunLoopStartEvent {
  /** The event's type. */
  type: "run_loop_start";
  /** The run loop. */
  runLoopId: string;
  /** Its goal. */
  goal: string;
  /**
   * How the message was routed: named by the user, judged a continuation of an active run
   * loop, a new goal, or a new run loop seeded from a completed one the user named.
   */
  decision: "named" | "continue" | "new" | "reopened";
  /** How sure the router was, when a model judged (0 to 1). */
  confidence?: number;
  /** Why, in words. */
  reason: string;
  /** The completed run loop this one goes on from. */
  seededFrom?: string;
  /** Tokens the router's model call used to place the message; the run's usage counts them. */
  usage?: Usage;
  /** What that call cost in US dollars, when the router's prices are known. */
  costUsd?: number;
}

/** A run loop ended and was archived (or, with `archiveError`, could not be). */
export interface RunLoopEndEvent {
  /** The event's type. */
  type: "run_loop_end";
  /** The run loop. */
  runLoopId: string;
  /** How it ended. */
  status: "completed" | "failed";
  /** Iterations it had. */
  iterations: number;
  /**
   * Why memory could not archive it (a full disk, a damaged or locked database, a closed
   * memory): it ended all the same, the run that ended it keeps its answer, and the run loops
   * keep it until an archive works again. Absent when it was archived, and when archiving is
   * deferred (`archivePending()` then says what failed).
   */
  archiveError?: string;
}

/**
 * What a run in a run loop streams: the agent loop's events, with `run_loop_start` after
 * `start` and a `run_loop_end` for each run loop that ended before the `result`, which stays
 * last.
 *
 * @example
 * ```ts
 * import type { RunLoopEvent } from "./events.ts";
 * const events: RunLoopEvent[] = [
 *   { type: "run_loop_start", runLoopId: "r1", goal: "Tidy up", decision: "new", reason: "new goal" },
 *   { type: "run_loop_end", runLoopId: "r1", status: "completed", iterations: 1 },
 * ];
 * const ended = events.filter((event) => event.type === "run_loop_end");
 * if (ended.length !== 1) throw new Error("unexpected");
 * ```
 */
export type RunLoopEvent = AgentEvent | RunLoopStartEvent | RunLoopEndEvent;
