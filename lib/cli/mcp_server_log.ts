/**
 * What `agent mcp` logs to its callers (MCP's `logging` utility): each MCP session picks a level
 * with `logging/setLevel` (until it does, `info`), and hears, as `notifications/message`, what the
 * tasks it started do at that level or above: their start and end (`info`), their warnings (an
 * MCP server of the task's that did not start, a hook that failed, a retry of the provider), a
 * compaction (`notice`), and each turn and tool call (`debug`). The words are the run's, through
 * its redactor.
 *
 * @module
 */

import type { RunLoopEvent } from "../runloop/events.ts";
import { briefInput } from "./mcp_server_outcome.ts";

/** MCP's log levels, from the least severe. */
export const LOG_LEVELS = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
] as const;

/** One of MCP's log levels. */
export type LogLevel = typeof LOG_LEVELS[number];

/** The level of a session that has not set one: a task's start and end, and what goes wrong. */
export const DEFAULT_LOG_LEVEL: LogLevel = "info";

/** Hears what a task logs: a level and a line (already redacted). */
export type TaskLog = (level: LogLevel, text: string) => void;

/**
 * Whether a message at `level` reaches a session whose level is `threshold`.
 *
 * @example
 * ```ts
 * import { logPasses } from "./mcp_server_log.ts";
 * if (logPasses("debug", "warning") || !logPasses("error", "warning")) throw new Error();
 * ```
 */
export function logPasses(level: LogLevel, threshold: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(threshold);
}

/**
 * The log line of an event of a task's run, if it has one: turns and tool calls at `debug`, a
 * compaction at `notice`, a retry or the loop's correction at `warning`. The line is not yet
 * redacted.
 *
 * @example
 * ```ts
 * import { eventLog } from "./mcp_server_log.ts";
 * const line = eventLog({ type: "retry", attempt: 1, delayMs: 900, error: "connection reset" });
 * if (line?.level !== "warning" || line.text !== "retry 1 in 0.9 s: connection reset") {
 *   throw new Error(JSON.stringify(line));
 * }
 * if (eventLog({ type: "text_delta", text: "Hi" }) !== undefined) throw new Error("unexpected");
 * ```
 */
export function eventLog(event: RunLoopEvent): { level: LogLevel; text: string } | undefined {
  switch (event.type) {
    case "turn_start":
      return { level: "debug", text: `turn ${event.turn}` };
    case "tool_call":
      return { level: "debug", text: `tool call: ${event.name}${briefInput(event.input)}` };
    case "tool_result": {
      const ms = `${Math.round(event.durationMs)} ms`;
      if (!event.isError) return { level: "debug", text: `${event.name} done (${ms})` };
      const first = event.output.split("\n").find((line) => line.trim()) ?? "";
      return { level: "debug", text: `${event.name} failed (${ms}): ${first.trim()}` };
    }
    case "retry":
      return {
        level: "warning",
        text: `retry ${event.attempt} in ${(event.delayMs / 1000).toFixed(1)} s: ${event.error}`,
      };
    case "compaction":
      return {
        level: "notice",
        text: `context compacted (${event.reason}): ${event.tokensBefore} → ` +
          `${event.tokensAfter} tokens`,
      };
    case "notice":
      return { level: "warning", text: event.message };
    default:
      return undefined;
  }
}
