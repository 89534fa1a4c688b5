/**
 * Prints a run for people: the answer to stdout as it streams; tool activity, retries and the
 * final summary to stderr. What a terminal shows is stripped of the control characters it would
 * act on; an answer printed whole for a program stays as the model wrote it.
 *
 * The streamed answer is written once per turn of the event loop, not once per delta: the deltas
 * that came in the meantime go out together (a write to a terminal costs far more than a delta
 * takes to arrive). Whatever else is printed, on stdout or stderr, writes what is held first,
 * so nothing comes out of order.
 *
 * @module
 */

import type { AgentEvent } from "../events.ts";
import type { RunLoopEvent } from "../runloop/events.ts";
import { terminalText } from "./terminal_text.ts";

/** Where the CLI writes. */
export interface CliOutput {
  /** Writes to stdout. */
  out(text: string): void;
  /** Writes to stderr. */
  err(text: string): void;
}

/** Options of {@link textRenderer}. */
export interface TextRendererOptions {
  /** Use ANSI colours on stderr. */
  color: boolean;
  /**
   * Stream the answer to stdout as it comes (for a terminal: without control characters, and an
   * attempt that fails and is tried again is marked as discarded). Otherwise (default) only the
   * final answer is printed, once, as the model wrote it, when the run ends: what a program
   * reading stdout gets never repeats itself.
   */
  stream?: boolean;
  /**
   * Redacts what is shown of a tool's input or error before it is cut to one short line, so that
   * a key is not shown in part (default: nothing redacted here; what is written is, whole).
   */
  redact?: (text: string) => string;
}

/**
 * Prints each event of a run in the `text` output format; {@link TextRenderer.flush} writes the
 * streamed answer held back so far.
 */
export interface TextRenderer {
  /** Prints an event (a streamed delta is written at the end of this turn of the event loop). */
  (event: RunLoopEvent): void;
  /**
   * Writes what is held of the streamed answer now. Call it before the run's output ends
   * otherwise than with its `result` (which writes it itself): an error, an exit.
   */
  flush(): void;
}

/**
 * A function that prints each event of a run in the `text` output format.
 *
 * @example
 * ```ts
 * import { textRenderer } from "./render.ts";
 * let out = "";
 * const render = textRenderer({ out: (t) => out += t, err: () => {} }, { color: false, stream: true });
 * render({ type: "text_delta", text: "Hi" });
 * render({ type: "text_delta", text: "!" });
 * render.flush(); // else written at the end of this turn of the event loop
 * if (out !== "Hi!") throw new Error("unexpected");
 * ```
 */
export function textRenderer(
  given: CliOutput,
  options: TextRendererOptions,
): TextRenderer {
  const paint = (code: string, text: string) =>
    options.color ? `\x1b[${code}m${text}\x1b[0m` : text;
  const dim = (text: string) => paint("2", text);
  const stream = options.stream ?? false;
  const redact = options.redact ?? ((text: string) => text);
  const held = _heldOutput(given);
  const io: CliOutput = held;
  let atLineStart = true;
  // Whether the model call going on has printed part of an answer.
  let printed = false;
  const newline = () => {
    if (!atLineStart) io.out("\n");
    atLineStart = true;
  };

  const render = (event: RunLoopEvent): void => {
    held.check();
    switch (event.type) {
      case "turn_start":
        printed = false;
        break;
      case "text_delta": {
        const text = stream ? terminalText(event.text) : "";
        if (!text) break;
        held.hold(text);
        atLineStart = text.endsWith("\n");
        printed = true;
        break;
      }
      case "tool_call":
        newline();
        io.err(
          `${paint("36", "→")} ${terminalText(event.name)} ${
            dim(terminalText(_brief(event.input, redact)))
          }\n`,
        );
        break;
      case "tool_result": {
        const mark = event.isError ? paint("31", "✗") : paint("32", "✓");
        const display = terminalText(event.display ?? "");
        const detail = event.isError
          ? ` ${_firstLine(terminalText(event.output), redact)}`
          : display && !display.includes("\n")
          ? ` ${dim(display)}`
          : "";
        io.err(
          `  ${mark} ${terminalText(event.name)} ${
            dim(`${Math.round(event.durationMs)} ms`)
          }${detail}\n`,
        );
        // A many-line display (the task list) is shown whole.
        if (!event.isError && display.includes("\n")) {
          io.err(`${display.split("\n").map((line) => `    ${line}`).join("\n")}\n`);
        }
        break;
      }
      case "retry": {
        newline();
        // What the failed attempt streamed stays on the screen: say it does not count.
        io.err(retryLine(event, { discarded: printed, paint }));
        printed = false;
        break;
      }
      case "notice":
        newline();
        io.err(`${paint("33", "!")} ${terminalText(event.message)}\n`);
        break;
      case "result": {
        if (!stream && event.text) {
          io.out(event.text);
          atLineStart = event.text.endsWith("\n");
        }
        newline();
        const cached = event.usage.cacheReadTokens
          ? ` (${event.usage.cacheReadTokens} cached)`
          : "";
        const cost = event.costUsd === undefined ? "" : ` · ${formatUsd(event.costUsd)}`;
        const usage =
          `${event.usage.inputTokens} in${cached} / ${event.usage.outputTokens} out tokens${cost}`;
        const summary =
          `${_plural(event.turns, "turn")} · ${
            _plural(event.toolCalls, "tool call")
          } · ${usage} · ` +
          `${(event.durationMs / 1000).toFixed(1)} s`;
        if (event.status === "success") io.err(dim(`${summary}\n`));
        else if (event.status === "error") {
          io.err(
            `${paint("31", "error:")} ${terminalText(event.error?.message ?? "unknown error")}\n`,
          );
        } else if (event.status === "max_turns") {
          io.err(
            `${
              paint("33", "stopped:")
            } reached the turn limit (${event.turns}); raise it with --max-turns\n`,
          );
        } else io.err(`${paint("33", "interrupted")} ${dim(summary)}\n`);
        break;
      }
    }
  };
  return Object.assign(render, { flush: () => held.flush() });
}

/** Output whose stdout text can be held back and written together at the end of the tick. */
interface _HeldOutput extends CliOutput {
  /** Holds `text` for stdout; it is written at the end of this turn of the event loop. */
  hold(text: string): void;
  /** Writes what is held now. */
  flush(): void;
  /** Throws what a write at the end of a tick failed with, once. */
  check(): void;
}

/**
 * `io`, with text held for stdout until the end of the tick, or until anything else is written
 * (stdout or stderr): what is written keeps its order.
 */
function _heldOutput(io: CliOutput): _HeldOutput {
  let held = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  let failure: { error: unknown } | undefined;
  const flush = () => {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (held === "") return;
    const text = held;
    held = "";
    io.out(text);
  };
  // A write at the end of the tick that fails is thrown at the next print, as it would have been.
  const later = () => {
    timer = undefined;
    try {
      flush();
    } catch (error) {
      failure = { error };
    }
  };
  return {
    hold(text) {
      held += text;
      timer ??= setTimeout(later, 0);
    },
    flush,
    check() {
      if (!failure) return;
      const { error } = failure;
      failure = undefined;
      throw error;
    },
    out(text) {
      flush();
      io.out(text);
    },
    err(text) {
      flush();
      io.err(text);
    },
  };
}

/** Options of {@link retryLine}. */
export interface RetryLineOptions {
  /** The failed attempt had shown part of an answer: say it does not count. */
  discarded: boolean;
  /** Colours a part of the line (`code` an SGR code); default: none. */
  paint?: (code: string, text: string) => string;
}

/**
 * The line that says a model call failed and is tried again, for the terminal session and the
 * headless run alike.
 *
 * @example
 * ```ts
 * import { retryLine } from "./render.ts";
 * const line = retryLine(
 *   { type: "retry", attempt: 1, delayMs: 900, error: "connection reset" },
 *   { discarded: true },
 * );
 * if (line !== "↻ retry 1 in 0.9 s: connection reset (the answer above was cut off: discarded)\n") {
 *   throw new Error(line);
 * }
 * ```
 */
export function retryLine(
  event: Extract<AgentEvent, { type: "retry" }>,
  options: RetryLineOptions,
): string {
  const paint = options.paint ?? ((_: string, text: string) => text);
  const discarded = options.discarded
    ? paint("33", " (the answer above was cut off: discarded)")
    : "";
  return `${paint("33", "↻")} retry ${event.attempt} in ${(event.delayMs / 1000).toFixed(1)} s: ` +
    `${terminalText(event.error)}${discarded}\n`;
}

/**
 * A dollar amount with the precision small amounts need.
 *
 * @example
 * ```ts
 * import { formatUsd } from "./render.ts";
 * if (formatUsd(0.00123) !== "$0.0012" || formatUsd(1.5) !== "$1.50") throw new Error("unexpected");
 * ```
 */
export function formatUsd(usd: number): string {
  return `$${usd.toFixed(usd > 0 && usd < 0.01 ? 4 : 2)}`;
}

function _plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** How much of a text is redacted before it is cut to a short line: far more than is shown. */
const _SCANNED = 8_192;

function _brief(input: unknown, redact: (text: string) => string): string {
  return _cut(redact((JSON.stringify(input) ?? "").slice(0, _SCANNED)), 120);
}

function _firstLine(text: string, redact: (text: string) => string): string {
  return _cut(redact(text.split("\n", 1)[0].slice(0, _SCANNED)), 200);
}

/** `text` cut to `max` characters, an ellipsis last. */
function _cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
