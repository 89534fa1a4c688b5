/**
 * What `runAgent` takes: {@link RunAgentOptions} and the types and
 * defaults of its parts.
 *
 * @module
 */

import type { ProjectReport, SandboxReport } from "../events.ts";
import type { CompactionOptions } from "../compaction/compact.ts";
import type { CompactionState } from "../compaction_state.ts";
import type { Hooks, PermissionCallback } from "../hooks.ts";
import { type Message, NUDGE_MESSAGE } from "../messages.ts";

import type { Model } from "../model.ts";
import type { RetryOptions } from "../retry.ts";
import type { Tool } from "../tool.ts";

export { NUDGE_MESSAGE };

/** The default of {@link RunAgentOptions.maxTurns}. */
export const DEFAULT_MAX_TURNS = 50;

/** The default of {@link RepeatGuardOptions.warnAt}. */
export const DEFAULT_REPEAT_WARN_AT = 3;

/** The default of {@link RepeatGuardOptions.stopAt}. */
export const DEFAULT_REPEAT_STOP_AT = 4;

/**
 * When the doom-loop guard steps in. A call counts as a repeat when it is the same call (same
 * tool, same input) with the same result as the call just before it; a result that changes (a
 * CI status polled until it is done) starts the count again.
 */
export interface RepeatGuardOptions {
  /**
   * At this many identical calls with identical results in a row, the result the model sees
   * ends with a note that the call will not change anything (default 3).
   */
  warnAt?: number;
  /** At this many, the run stops with status `error` once the turn's calls end (default 4). */
  stopAt?: number;
}

/** What the caller learns when a run reaches its turn limit. */
export interface MaxTurnsInfo {
  /** Turns taken so far. */
  turns: number;
  /** The conversation so far. */
  messages: readonly Message[];
}

/** How to nudge a model that announces an action and stops. */
export interface NudgeOptions {
  /** Nudges per run (default 2). */
  max?: number;
  /** The words sent to the model. */
  message?: string;
}

/** Options of `runAgent`. */
export interface RunAgentOptions {
  /** The model to call. */
  model: Model;
  /** The conversation so far (default none). It is not changed. */
  messages?: readonly Message[];
  /** What the user says now: text, or messages appended to the history. */
  input?: string | readonly Message[];
  /** The system prompt. */
  systemPrompt?: string;
  /**
   * Asked before each tool call; a refusal becomes an error result that tells the model why.
   * Permission rules and modes are implemented as such a callback.
   */
  permission?: PermissionCallback;
  /** Hooks around model calls and tool calls, and an observer of every event. */
  hooks?: Hooks;
  /**
   * The tools the model may call. Read again before each model request, so that a list that
   * changes during a run is offered as it then stands: an array changed in place (an MCP
   * connection's `tools`), or what a function gives.
   */
  tools?: readonly Tool[] | (() => readonly Tool[]);
  /** Model calls allowed (default 50); 0 removes the limit. */
  maxTurns?: number;
  /**
   * Called when the turn limit is reached while the model still works; returns how many more
   * turns to allow (0 ends the run with status `max_turns`).
   */
  onMaxTurns?: (info: MaxTurnsInfo) => number | Promise<number>;
  /** Cancels the run; it then ends promptly with status `aborted`. */
  signal?: AbortSignal;
  /** The working directory given to tools (default `Deno.cwd()` when readable, else `.`). */
  cwd?: string;
  /** The session id reported in events (default a new UUID). */
  sessionId?: string;
  /** What the runtime grants each capability, reported in the `start` event. */
  capabilities?: Readonly<Record<string, string>>;
  /** The sandbox shell commands run in, reported in the `start` event. */
  sandbox?: SandboxReport;
  /** Whether the project is trusted and what was left out if not, reported in `start`. */
  project?: ProjectReport;
  /** The most output tokens per model call. */
  maxOutputTokens?: number;
  /** Sampling temperature. */
  temperature?: number;
  /** How failed model calls are retried. */
  retry?: RetryOptions;
  /** Tool calls of one turn that may run at once (default 8). */
  toolConcurrency?: number;
  /** The longest a tool call may take unless the tool says otherwise (default 10 minutes). */
  toolTimeoutMs?: number;
  /** Tool output beyond this many characters is cut (default 50,000). */
  maxToolOutputChars?: number;
  /**
   * Called at each turn boundary: the messages it returns (what the user typed while the agent
   * worked) are added before the next model call; after a final answer they start another turn.
   */
  pendingInput?: () => readonly Message[];
  /**
   * The doom-loop guard: the same call with the same result made `warnAt` times in a row is
   * flagged to the model, `stopAt` times stops the run (defaults 3 and 4). `false` turns it off.
   */
  repeatGuard?: RepeatGuardOptions | false;
  /** The incomplete-intent nudge; `false` turns it off. */
  nudge?: NudgeOptions | false;
  /**
   * Context compaction (on by default): older tool outputs are left out of requests, then
   * older turns summarized, so that long runs fit the context window; a provider's refusal of
   * a request as too long compacts and tries once more. `false` turns it off.
   */
  compaction?: CompactionOptions | false;
  /**
   * The summary in force from an earlier run (its `result.compaction`): it is sent in place of
   * the messages it replaces.
   */
  compactionState?: CompactionState;
}
