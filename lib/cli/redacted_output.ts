/**
 * What the CLI writes, through the run's redactor: every line on stderr (warnings, errors, tool
 * activity), and on stdout every JSON line and the answer printed for a program. Only the answer
 * streamed to a terminal is left as it is: that is the user's own screen. Until the run's
 * redactor is built, one of the environment's secrets stands in for it.
 *
 * @module
 */

import { redactJsonLine } from "../secrets/redact.ts";
import type { CliOutput } from "./render.ts";

/**
 * What stdout carries: JSON lines (redacted as text, or string by string should a secret have
 * matched JSON syntax), text for a program (redacted), or the answer streamed to a terminal
 * (left as it is).
 */
export type RedactedStdout = "json" | "text" | "terminal";

/** Options of {@link redactedOutput}. */
export interface RedactedOutputOptions {
  /** The redactor until {@link RedactedOutput.redactWith} gives another. */
  redact: (text: string) => string;
  /** What stdout carries. */
  stdout: RedactedStdout;
}

/** Where the CLI writes, redacted. */
export interface RedactedOutput {
  /** Redacts what is written from now on with `redact` (the run's, once it is built). */
  redactWith(redact: (text: string) => string): void;
}

/**
 * `io` with its `out` and `err` redacted (its other members kept as they are).
 *
 * @example
 * ```ts
 * import { redactedOutput } from "./redacted_output.ts";
 * import { secretRedactor } from "../session/mod.ts";
 * const lines: string[] = [];
 * const io = redactedOutput(
 *   { out: (text: string) => lines.push(text), err: (text: string) => lines.push(text) },
 *   { redact: secretRedactor([]), stdout: "json" },
 * );
 * io.err("agent: warning: ghp_0123456789abcdefghijABCDEFGHIJklmn\n");
 * io.redactWith(secretRedactor(["corp-secret-1"]));
 * io.out('{"type":"result","text":"corp-secret-1"}\n');
 * if (lines.join("") !== 'agent: warning: [redacted]\n{"type":"result","text":"[redacted]"}\n') {
 *   throw new Error(lines.join(""));
 * }
 * ```
 */
export function redactedOutput<T extends CliOutput>(
  io: T,
  options: RedactedOutputOptions,
): T & RedactedOutput {
  let redact = options.redact;
  const out = options.stdout === "terminal"
    ? io.out
    : options.stdout === "json"
    ? (text: string) => io.out(redactJsonLine(text, redact))
    : (text: string) => io.out(_redactPainted(text, redact));
  return {
    ...io,
    out,
    err: (text: string) => io.err(_redactPainted(text, redact)),
    redactWith(next) {
      redact = next;
    },
  };
}

/** An SGR sequence (a colour), which may stand right before a secret. */
// deno-lint-ignore no-control-regex -- the escape character starts the sequence
const _SGR = /(\x1b\[[0-9;]*m)/;

/** `text` redacted between its colour sequences, which are kept as they are. */
function _redactPainted(text: string, redact: (text: string) => string): string {
  if (!text.includes("\x1b[")) return redact(text);
  return text.split(_SGR).map((part, i) => i % 2 ? part : redact(part)).join("");
}
