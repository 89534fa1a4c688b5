/**
 * A streamed tool call made whole: its arguments, as the model wrote them, parsed.
 *
 * @module
 */

import type { ToolCallPart } from "../messages.ts";

/**
 * The tool call `name` with id `id` and the arguments text `args`: parsed when they are a JSON
 * object, else kept as `invalidInput` (with `{}` as the input) so that the tool's result can
 * say what was wrong. Empty arguments, or `null`, are no arguments.
 *
 * @example
 * ```ts
 * import { toolCallOf } from "./tool_call.ts";
 * const good = toolCallOf("call_1", "ls", '{"path":"."}');
 * const bad = toolCallOf("call_2", "ls", '{"path":');
 * if ((good.input as { path: string }).path !== "." || bad.invalidInput !== '{"path":') {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function toolCallOf(id: string, name: string, args: string): ToolCallPart {
  const call: ToolCallPart = { type: "tool_call", id, name, input: {} };
  const raw = args.trim();
  if (raw !== "" && raw !== "null") {
    try {
      const input = JSON.parse(raw);
      if (input !== null && typeof input === "object" && !Array.isArray(input)) call.input = input;
      else call.invalidInput = raw;
    } catch {
      call.invalidInput = raw;
    }
  }
  return call;
}
