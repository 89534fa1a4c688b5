/**
 * What `agent mcp` tells its callers of a task: the result its tools return as structured
 * content, and the words for how it ended.
 *
 * @module
 */

import type { RunStatus } from "../events.ts";

/** What a task ended with, as the `run_task` and `continue_task` tools return it. */
export interface TaskResult {
  /** The session the task is saved in: `continue_task` goes on with it. */
  sessionId: string;
  /** How the run ended. */
  status: RunStatus;
  /** The final answer. */
  text: string;
  /** Model calls made. */
  turns: number;
  /** Tool calls made. */
  toolCalls: number;
  /** Tokens used. */
  usage: { inputTokens: number; outputTokens: number };
  /** What went wrong, when the run failed. */
  error?: string;
}

/** A task's answer to the caller: the text to show, and the result when the task ran. */
export interface TaskOutcome {
  /** What the caller reads. */
  text: string;
  /** Whether the task did not do what was asked (it could not start, failed, or was stopped). */
  isError: boolean;
  /** The run's result, when it ran. */
  result?: TaskResult;
}

/**
 * The outcome of a task that ran, in words for the caller: the answer when it succeeded, else
 * what happened, the session to go on with, and the last answer if there was one.
 *
 * @example
 * ```ts
 * import { taskOutcome } from "./mcp_server_outcome.ts";
 * const usage = { inputTokens: 10, outputTokens: 2 };
 * const stopped = taskOutcome({
 *   sessionId: "s1", status: "max_turns", text: "", turns: 3, toolCalls: 2, usage,
 * });
 * if (!stopped.isError || !stopped.text.includes("limit of 3 turns")) throw new Error(stopped.text);
 * ```
 */
export function taskOutcome(result: TaskResult): TaskOutcome {
  const session = result.sessionId
    ? ` Its session is ${result.sessionId}: go on with continue_task.`
    : " Its session was not saved.";
  const answer = result.text ? `\n\nIts last answer:\n${result.text}` : "";
  switch (result.status) {
    case "success":
      return { text: result.text, isError: false, result };
    case "max_turns":
      return {
        text: `The task stopped at its limit of ${counted(result.turns, "turn")} before it ` +
          `finished.${session}${answer}`,
        isError: true,
        result,
      };
    case "aborted":
      return { text: `The task was cancelled.${session}${answer}`, isError: true, result };
    case "error":
      return {
        text: `The task failed: ${
          (result.error ?? "unknown error").replace(/\.$/, "")
        }.${session}${answer}`,
        isError: true,
        result,
      };
  }
}

/**
 * The outcome of a task that could not run.
 *
 * @example
 * ```ts
 * import { taskFailure } from "./mcp_server_outcome.ts";
 * if (!taskFailure("No such directory").isError) throw new Error("unexpected");
 * ```
 */
export function taskFailure(text: string): TaskOutcome {
  return { text, isError: true };
}

/**
 * A short form of a tool call's input for progress: its first text argument, on one line.
 *
 * @example
 * ```ts
 * import { briefInput } from "./mcp_server_outcome.ts";
 * if (briefInput({ command: "ls\n  -la" }) !== " ls -la") throw new Error("unexpected");
 * if (briefInput({ todos: [] }) !== "") throw new Error("unexpected");
 * ```
 */
export function briefInput(input: unknown): string {
  if (typeof input !== "object" || input === null) return "";
  const first = Object.values(input).find((value) => typeof value === "string") as
    | string
    | undefined;
  if (!first) return "";
  const line = first.replace(/\s+/g, " ").trim();
  return line ? ` ${line.length > 60 ? `${line.slice(0, 59)}…` : line}` : "";
}

/**
 * "1 turn", "2 turns".
 *
 * @example
 * ```ts
 * import { counted } from "./mcp_server_outcome.ts";
 * if (counted(1, "turn") !== "1 turn" || counted(2, "tool call") !== "2 tool calls") throw new Error();
 * ```
 */
export function counted(count: number, what: string): string {
  return `${count} ${what}${count === 1 ? "" : "s"}`;
}
