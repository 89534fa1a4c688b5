/**
 * How the interactive session shows a run: the answer streamed as rendered markdown, a spinner
 * with the elapsed time while the model thinks or tools run, one line per tool call with its
 * status and duration, and a short summary at the end. What comes from the model, its tools or
 * its server is shown without the control characters a terminal would act on.
 *
 * @module
 */

import type { RunLoopEvent } from "../../runloop/events.ts";
import { formatUsd, retryLine } from "../render.ts";
import { terminalText } from "../terminal_text.ts";
import { markdownStream } from "./markdown.ts";
import { spinner } from "./spinner.ts";

/** Where and how the session draws. */
export interface ScreenOptions {
  /** Writes to the terminal. */
  write(text: string): void;
  /** ANSI colours (off with NO_COLOR). */
  color: boolean;
  /** The terminal's width. */
  columns(): number;
  /** The terminal's height (default: unlimited). */
  rows?(): number;
}

/** Draws the events of runs; `stop()` clears what is transient (the spinner). */
export interface RunView {
  /** Draws one event. */
  show(event: RunLoopEvent): void;
  /** Stops the spinner and ends the current answer's line. */
  stop(): void;
  /** Shows the spinner again while tools still run (after a question to the user hid it). */
  resume(): void;
}

/**
 * The line that says memory could not archive the conversation, and why (made safe to print).
 *
 * @example
 * ```ts
 * import { notArchivedLine } from "./render.ts";
 * const line = notArchivedLine("database is locked\x1b[2J");
 * if (!line.endsWith("in memory: database is locked[2J\n")) throw new Error(JSON.stringify(line));
 * ```
 */
export function notArchivedLine(why: string): string {
  return `agent: the conversation so far was not archived in memory: ${terminalText(why)}\n`;
}

/**
 * Creates the view of runs for a terminal.
 *
 * @example
 * ```ts
 * import { runView } from "./render.ts";
 * let out = "";
 * const view = runView({ write: (t) => out += t, color: false, columns: () => 80 });
 * view.show({ type: "text_delta", text: "Hello" });
 * view.show({ type: "tool_result", id: "1", name: "ls", output: "a", isError: false, durationMs: 3 });
 * view.show({ type: "run_loop_end", runLoopId: "r1", status: "failed", iterations: 1 });
 * const archived = out;
 * view.show({
 *   type: "run_loop_end",
 *   runLoopId: "r1",
 *   status: "failed",
 *   iterations: 1,
 *   archiveError: "database is locked",
 * });
 * view.stop();
 * if (!out.includes("Hello\n") || !out.includes("✓ ls")) throw new Error(JSON.stringify(out));
 * if (!out.slice(archived.length).includes("not archived in memory: database is locked\n")) {
 *   throw new Error(JSON.stringify(out));
 * }
 * ```
 */
export function runView(options: ScreenOptions): RunView {
  const paint = (code: string, text: string) =>
    options.color ? `\x1b[${code}m${text}\x1b[0m` : text;
  const spin = spinner(options.write, { color: options.color });
  const markdown = markdownStream(options);
  const running = new Map<string, string>(); // tool call id → name, while it runs
  const endAnswer = () => markdown.end();
  // Whether the model call going on has shown part of an answer.
  let shown = false;

  return {
    show(event) {
      switch (event.type) {
        case "turn_start":
          shown = false;
          spin.start("thinking");
          break;
        case "turn_end":
          endAnswer();
          break;
        case "reasoning_delta":
          spin.start("thinking");
          break;
        case "text_delta":
          spin.stop();
          markdown.write(terminalText(event.text));
          shown ||= event.text.length > 0;
          break;
        case "tool_call":
          spin.stop();
          endAnswer();
          running.set(event.id, terminalText(event.name));
          spin.start(`running ${[...new Set(running.values())].join(", ")}`);
          break;
        case "tool_result": {
          spin.stop();
          endAnswer();
          running.delete(event.id);
          const mark = event.isError ? paint("31", "✗") : paint("32", "✓");
          const display = terminalText(event.display ?? "");
          const about = event.isError
            ? _firstLine(terminalText(event.output))
            : display && !display.includes("\n")
            ? display
            : "";
          options.write(
            `  ${mark} ${terminalText(event.name)}${about ? ` ${paint("2", about)}` : ""} ${
              paint("2", `· ${_duration(event.durationMs)}`)
            }\n`,
          );
          if (!event.isError && display.includes("\n")) {
            options.write(`${display.split("\n").map((line) => `    ${line}`).join("\n")}\n`);
          }
          if (running.size > 0) spin.start(`running ${[...new Set(running.values())].join(", ")}`);
          break;
        }
        case "retry":
          spin.stop();
          endAnswer();
          options.write(retryLine(event, { discarded: shown, paint }));
          shown = false;
          break;
        case "run_loop_start":
          // Routing the message took a model call: it is paid for, so it is shown.
          if (event.usage) {
            const cost = event.costUsd === undefined ? "" : ` · ${formatUsd(event.costUsd)}`;
            options.write(paint(
              "2",
              `routed (${event.decision}: ${terminalText(event.reason)}) · ` +
                `${event.usage.inputTokens} in / ` +
                `${event.usage.outputTokens} out tokens${cost}\n`,
            ));
          }
          break;
        case "run_loop_end":
          // Memory failed (a full disk, a lock): the answer stands, and the user hears of it.
          if (event.archiveError === undefined) break;
          spin.stop();
          endAnswer();
          options.write(paint("33", notArchivedLine(event.archiveError)));
          break;
        case "notice":
          spin.stop();
          endAnswer();
          options.write(`${paint("33", "!")} ${paint("2", terminalText(event.message))}\n`);
          break;
        case "compaction":
          spin.stop();
          endAnswer();
          options.write(
            paint("2", `context compacted: ${event.tokensBefore} → ${event.tokensAfter} tokens\n`),
          );
          break;
        case "result": {
          spin.stop();
          endAnswer();
          if (event.status === "error") {
            options.write(
              `${paint("31", "error:")} ${terminalText(event.error?.message ?? "unknown")}\n`,
            );
          } else if (event.status === "aborted") {
            options.write(`${paint("33", "interrupted")}\n`);
          } else if (event.status === "max_turns") {
            options.write(
              `${paint("33", "stopped:")} the turn limit (${event.turns}) was reached\n`,
            );
          }
          const cost = event.costUsd === undefined ? "" : ` · ${formatUsd(event.costUsd)}`;
          options.write(paint(
            "2",
            `${event.usage.inputTokens} in / ${event.usage.outputTokens} out tokens${cost} · ` +
              `${_duration(event.durationMs)}\n`,
          ));
          break;
        }
      }
    },
    stop() {
      spin.stop();
      endAnswer();
    },
    resume() {
      if (running.size > 0) spin.start(`running ${[...new Set(running.values())].join(", ")}`);
    },
  };
}

function _duration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function _firstLine(text: string): string {
  const line = text.split("\n", 1)[0];
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}
