/**
 * Guards against two ways models go wrong: repeating the same call forever (the doom loop),
 * and announcing an action in the final answer without taking it (incomplete intent).
 *
 * @module
 */

import type { ToolCallPart } from "./messages.ts";

/** What the doom-loop guard says about a call. */
export interface RepeatVerdict {
  /** Go on, warn the model, or stop the run. */
  action: "ok" | "warn" | "stop";
  /** How many times in a row this call has now been made. */
  count: number;
}

/** Tracks identical consecutive tool calls. */
export interface RepeatGuard {
  /** Records a call and says whether it is a repeat worth a warning or a stop. */
  observe(call: ToolCallPart): RepeatVerdict;
}

/**
 * A guard that warns when the same call (same tool, same input) is made `warnAt` times running
 * and says stop at `stopAt`.
 *
 * @example
 * ```ts
 * import { repeatGuard } from "./guards.ts";
 * const guard = repeatGuard();
 * const call = { type: "tool_call" as const, id: "1", name: "ls", input: { path: "." } };
 * const actions = [1, 2, 3, 4].map(() => guard.observe(call).action);
 * if (actions.join() !== "ok,ok,warn,stop") throw new Error("unexpected");
 * ```
 */
export function repeatGuard(warnAt = 3, stopAt = 4): RepeatGuard {
  let last = "";
  let count = 0;
  return {
    observe(call) {
      const key = `${call.name}\u0000${call.invalidInput ?? canonicalJson(call.input)}`;
      count = key === last ? count + 1 : 1;
      last = key;
      const action = count >= stopAt ? "stop" : count >= warnAt ? "warn" : "ok";
      return { action, count };
    },
  };
}

/**
 * JSON with object keys sorted, so that inputs equal as values compare equal as strings.
 *
 * @example
 * ```ts
 * import { canonicalJson } from "./guards.ts";
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
 * import { announcesAction } from "./guards.ts";
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
