/**
 * The yes/no/always question the session asks before a tool call: what counts as an answer,
 * how the call is described, and what an "always" answer allows from then on.
 *
 * @module
 */

import { isAbsolute, resolve } from "node:path";
import type { PermissionRequest } from "../../hooks.ts";
import { alwaysRules, type PermissionAnswer } from "../../permissions/policy.ts";
import { terminalText } from "../terminal_text.ts";

const ANSWERS: Readonly<Record<string, PermissionAnswer>> = {
  y: "yes",
  yes: "yes",
  n: "no",
  no: "no",
  a: "always",
  always: "always",
};

/**
 * The answer a line gives: only `y`, `yes`, `n`, `no`, `a` or `always` (any case, spaces
 * around ignored) answer; anything else is undefined, not an answer.
 *
 * @example
 * ```ts
 * import { answerOf } from "./question.ts";
 * if (answerOf(" Yes ") !== "yes" || answerOf("also update the docs") !== undefined) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function answerOf(line: string): PermissionAnswer | undefined {
  return Object.hasOwn(ANSWERS, line.trim().toLowerCase())
    ? ANSWERS[line.trim().toLowerCase()]
    : undefined;
}

/**
 * A tool call as a person reads it in the question, with nothing in it the terminal would act
 * on.
 *
 * @example
 * ```ts
 * import { describeCall } from "./question.ts";
 * const call = { type: "tool_call" as const, id: "1", name: "bash", input: { command: "ls" } };
 * if (describeCall({ call } as never) !== "run `ls`") throw new Error("unexpected");
 * ```
 */
export function describeCall(request: PermissionRequest): string {
  const input = request.call.input as Record<string, unknown>;
  const name = terminalText(request.call.name);
  if (request.call.name === "bash" && typeof input?.command === "string") {
    return `run \`${terminalText(input.command)}\``;
  }
  if (typeof input?.path === "string") return `${name} ${terminalText(input.path)}`;
  const brief = JSON.stringify(input) ?? "";
  return `${name} ${terminalText(brief.length > 100 ? `${brief.slice(0, 99)}…` : brief)}`;
}

/**
 * What an "always" answer to `request` allows for the rest of the session, in a sentence: the
 * rules it adds (the same the permission policy adds).
 *
 * @example
 * ```ts
 * import { describeAlways } from "./question.ts";
 * const call = { type: "tool_call" as const, id: "1", name: "write", input: { path: "a" } };
 * const said = await describeAlways({ call } as never);
 * if (said !== "Always allowed from now on in this session: write (every call)") throw new Error(said);
 * ```
 */
export async function describeAlways(request: PermissionRequest): Promise<string> {
  const rules = await alwaysRules(request);
  if (rules.length === 0) {
    return "Allowed this once: no rule can say exactly this command, so the next one asks again";
  }
  const texts = rules.map((rule) =>
    `${terminalText(rule.text)}${rule.pattern === undefined ? " (every call)" : ""}`
  );
  return `Always allowed from now on in this session: ${texts.join(", ")}`;
}

/** The tools that write the file their `path` names. */
const _WRITERS = new Set(["write", "edit"]);

/**
 * Whether Deno itself will ask before this call runs: a file write where Deno's grant is at
 * "prompt". Its question names the file, so the session does not ask the same thing first.
 *
 * @example
 * ```ts
 * import { denoWillAsk } from "./question.ts";
 * const call = { type: "tool_call" as const, id: "1", name: "bash", input: { command: "ls" } };
 * if (denoWillAsk({ call } as never, "/w")) throw new Error("a command is not a file write");
 * ```
 */
export function denoWillAsk(request: PermissionRequest, cwd: string): boolean {
  const path = (request.call.input as { path?: unknown } | undefined)?.path;
  if (!_WRITERS.has(request.call.name) || typeof path !== "string") return false;
  const target = isAbsolute(path) ? path : resolve(cwd, path);
  return Deno.permissions.querySync({ name: "write", path: target }).state === "prompt";
}
