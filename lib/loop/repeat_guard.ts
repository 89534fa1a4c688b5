/**
 * Guards against two ways models go wrong: repeating the same call forever with the same result
 * (the doom loop), and announcing an action in the final answer without taking it (incomplete
 * intent).
 *
 * @module
 */

import { createHash } from "node:crypto";
import {
  DEFAULT_REPEAT_STOP_AT,
  DEFAULT_REPEAT_WARN_AT,
  type RepeatGuardOptions,
} from "./options.ts";
import type { ToolCallPart } from "../messages.ts";

/** What the doom-loop guard says about a call that ran. */
export interface RepeatVerdict {
  /** Go on, warn the model, or stop the run. */
  action: "ok" | "warn" | "stop";
  /** How many times in a row this call has now been made with this same result. */
  count: number;
}

/** What a call gave back, as the guard compares it. */
export interface RepeatResult {
  /** The output the model sees. */
  output: string;
  /** Whether the call failed. */
  isError: boolean;
}

/** Tracks consecutive tool calls that are the same call with the same result. */
export interface RepeatGuard {
  /**
   * Records a call that ran, with its result, and says whether it is a repeat worth a warning
   * or a stop. Calls are recorded in the order their results come.
   */
  observe(call: ToolCallPart, result: RepeatResult): RepeatVerdict;
}

/**
 * A guard against the doom loop: a call is a repeat when it is the same call (same tool, same
 * input) with the same result (same output, same error flag) as the call before it. The guard
 * warns when a call has been repeated so `warnAt` times running and says stop at `stopAt`; a
 * result that changes (a status polled until it does) starts the count again. Calls and results
 * are compared by their SHA-256 digests, so a huge result costs one pass over its text and is
 * not kept.
 *
 * A `RangeError` for thresholds that are not whole numbers ≥ 2.
 *
 * @example
 * ```ts
 * import { repeatGuard } from "./repeat_guard.ts";
 * const guard = repeatGuard();
 * const call = { type: "tool_call" as const, id: "1", name: "ls", input: { path: "." } };
 * const same = [1, 2, 3, 4].map(() => guard.observe(call, { output: "a.ts", isError: false }));
 * if (same.map((verdict) => verdict.action).join() !== "ok,ok,warn,stop") throw new Error();
 * // A result that changes is no repeat: polling goes on.
 * const polling = repeatGuard({ stopAt: 2 });
 * for (const output of ["pending", "running", "done"]) {
 *   if (polling.observe(call, { output, isError: false }).action !== "ok") throw new Error();
 * }
 * ```
 */
export function repeatGuard(options: RepeatGuardOptions = {}): RepeatGuard {
  const warnAt = _threshold("warnAt", options.warnAt ?? DEFAULT_REPEAT_WARN_AT);
  const stopAt = _threshold("stopAt", options.stopAt ?? DEFAULT_REPEAT_STOP_AT);
  let last = "";
  let count = 0;
  return {
    observe(call, result) {
      const hash = createHash("sha256");
      hash.update(call.name).update("\u0000");
      hash.update(call.invalidInput ?? canonicalJson(call.input)).update("\u0000");
      hash.update(result.isError ? "error\u0000" : "ok\u0000").update(result.output);
      const key = hash.digest("base64");
      count = key === last ? count + 1 : 1;
      last = key;
      const action = count >= stopAt ? "stop" : count >= warnAt ? "warn" : "ok";
      return { action, count };
    },
  };
}

function _threshold(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 2) {
    throw new RangeError(
      `repeatGuard.${name} must be a whole number ≥ 2 (the calls in a row it takes), got ${value}`,
    );
  }
  return value;
}

/**
 * JSON with object keys sorted, so that inputs equal as values compare equal as strings.
 *
 * @example
 * ```ts
 * import { canonicalJson } from "./repeat_guard.ts";
 * if (canonicalJson({ b: 1, a: [2] }) !== '{"a":[2],"b":1}') throw new Error("unexpected");
 * ```
 */
export function canonicalJson(value: unknown): string {
  // Built directly: JSON.stringify with a replacer calls back for every value, which costs
  // more than the walk itself.
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
    return canonicalJson((value as { toJSON(): unknown }).toJSON());
  }
  if (Array.isArray(value)) {
    return `[${value.map((item) => _omitted(item) ? "null" : canonicalJson(item)).join(",")}]`;
  }
  const record = value as Record<string, unknown>;
  const fields: string[] = [];
  for (const key of Object.keys(record).sort()) {
    if (!_omitted(record[key])) fields.push(`${JSON.stringify(key)}:${canonicalJson(record[key])}`);
  }
  return `{${fields.join(",")}}`;
}

/** Values JSON leaves out of objects (and writes as null in arrays). */
function _omitted(value: unknown): boolean {
  return value === undefined || typeof value === "function" || typeof value === "symbol";
}

const ANNOUNCE =
  /^(?:(?:now|next|first|then|ok(?:ay)?|alright|great)[,!.]?\s+)?(?:let me|let's|let us|i'll now|i will now|i'm going to|i am going to|i'll start|i'll begin)\b/i;

/**
 * Whether a final answer announces an action instead of ending: it ends with a colon, or its
 * last paragraph starts like "Let me …" / "I'm going to …" and is not a question.
 *
 * @example
 * ```ts
 * import { announcesAction } from "./repeat_guard.ts";
 * if (!announcesAction("I found the bug. Let me fix it now.")) throw new Error("unexpected");
 * if (announcesAction("The bug is fixed.")) throw new Error("unexpected");
 * ```
 */
export function announcesAction(text: string): boolean {
  const trimmed = text.trim().replace(/[*_`\s]+$/, "");
  if (trimmed === "") return false;
  if (trimmed.endsWith(":")) return true;
  if (trimmed.endsWith("?")) return false;
  const paragraph = trimmed.slice(trimmed.lastIndexOf("\n") + 1).trim();
  const sentences = paragraph.split(/(?<=[.!])\s+/);
  return ANNOUNCE.test(sentences.at(-1) ?? "");
}
