/**
 * The tool phase of a turn: the permission callback and hooks around each call, parallel
 * execution, the repeat guard over the results, and the events that report it.
 *
 * @module
 */

import type { AgentEvent } from "../events.ts";
import type { RepeatGuard } from "./repeat_guard.ts";
import type { Hooks } from "../hooks.ts";
import type { RunAgentOptions } from "./options.ts";
import type { ToolCallPart } from "../messages.ts";
import type { Tool } from "../tool.ts";
import { runToolCalls, type ToolRunOptions, type ToolRunResult } from "../tool_runner.ts";

/** What the tool phase needs. */
export interface TurnToolsOptions {
  /** The repeat guard of the run; none: calls are not compared. */
  guard?: RepeatGuard;
  /** The tools, by name. */
  registry: ReadonlyMap<string, Tool>;
  /** The run's hooks. */
  hooks: Hooks;
  /** The turn number. */
  turn: number;
  /** How calls run. */
  run: ToolRunOptions;
}

/** The outcome of the tool phase. */
export interface TurnToolsResult {
  /** One result per call, in call order. */
  results: ToolRunResult[];
  /** Why the run must stop (a call repeated with the same result too often), if it must. */
  stopped?: string;
}

/**
 * Runs the calls of a turn, streaming `tool_call`, `tool_result` and `notice` events. Each
 * result goes to the repeat guard as it comes: a call repeated with the same result is
 * flagged to the model, and too many such repeats stop the run once the turn's calls end.
 *
 * @example
 * ```ts
 * import { repeatGuard } from "./repeat_guard.ts";
 * import { runTurnTools } from "./tool_phase.ts";
 * const calls = [{ type: "tool_call" as const, id: "1", name: "nope", input: {} }];
 * const phase = runTurnTools(calls, {
 *   guard: repeatGuard(),
 *   registry: new Map(),
 *   hooks: {},
 *   turn: 1,
 *   run: { cwd: ".", signal: new AbortController().signal },
 * });
 * let step = await phase.next();
 * while (!step.done) step = await phase.next();
 * if (!step.value.results[0].isError) throw new Error("unexpected");
 * ```
 */
export async function* runTurnTools(
  calls: readonly ToolCallPart[],
  options: TurnToolsOptions,
): AsyncGenerator<AgentEvent, TurnToolsResult> {
  const { guard, hooks, turn } = options;
  for (const c of calls) yield { type: "tool_call", id: c.id, name: c.name, input: c.input };
  const results: ToolRunResult[] = new Array(calls.length);
  let stopped: string | undefined;
  for await (const [index, ran] of runToolCalls(calls, options.registry, options.run)) {
    const done = await _afterToolCall(hooks, turn, ran);
    const verdict = guard?.observe(done.call, done);
    if (verdict?.action === "stop") {
      stopped ??= `The run stopped: "${done.call.name}" was called ${verdict.count} times in a ` +
        `row with the same input and gave the same result each time.`;
      done.output += `\n\n[${stopped}]`;
    } else if (verdict?.action === "warn") {
      const message = _repeatWarning(verdict.count);
      done.output += `\n\n[${message}]`;
      yield { type: "notice", kind: "doom_loop", message };
    }
    results[index] = done;
    yield resultEvent(done);
  }
  return stopped ? { results, stopped } : { results };
}

/**
 * The permission callback and the `beforeToolCall` hook, as the tool runner's check. An input
 * the hook changes is put to the permission callback again, so that a hook cannot turn an allowed
 * call into one the callback would refuse; an input given back unchanged is not asked about twice.
 *
 * @example
 * ```ts
 * import { toolCallCheck } from "./tool_phase.ts";
 * if (toolCallCheck({}, ".", new AbortController().signal, () => 1) !== undefined) {
 *   throw new Error("no check without a callback or a hook");
 * }
 * ```
 */
export function toolCallCheck(
  options: Pick<RunAgentOptions, "permission" | "hooks">,
  cwd: string,
  signal: AbortSignal,
  turn: () => number,
): ToolRunOptions["before"] {
  const { permission, hooks } = options;
  if (!permission && !hooks?.beforeToolCall) return undefined;
  const refusal = async (call: ToolCallPart, tool: Tool) => {
    const decision = await permission?.({ call, tool, cwd, signal });
    return decision?.behavior === "deny"
      ? { refuse: `permission denied: ${decision.reason}` }
      : undefined;
  };
  return async (call, tool) => {
    const refused = await refusal(call, tool);
    if (refused) return refused;
    const verdict = await hooks?.beforeToolCall?.({ call, turn: turn() });
    if (!verdict) return undefined;
    if ("refuse" in verdict) return { refuse: `refused by a hook: ${verdict.refuse}` };
    if (_same(verdict.input, call.input)) return undefined;
    return await refusal({ ...call, input: verdict.input }, tool) ?? verdict;
  };
}

/**
 * The `tool_result` event of a result.
 *
 * @example
 * ```ts
 * import { resultEvent } from "./tool_phase.ts";
 * const call = { type: "tool_call" as const, id: "1", name: "ls", input: {} };
 * const event = resultEvent({ call, output: "a", isError: false, durationMs: 1 });
 * if (event.type !== "tool_result" || event.name !== "ls") throw new Error("unexpected");
 * ```
 */
export function resultEvent(done: ToolRunResult): AgentEvent {
  const event: AgentEvent = {
    type: "tool_result",
    id: done.call.id,
    name: done.call.name,
    output: done.output,
    isError: done.isError,
    durationMs: done.durationMs,
  };
  if (done.display !== undefined) event.display = done.display;
  if (done.metadata !== undefined) event.metadata = done.metadata;
  return event;
}

/** The `afterToolCall` hook's say over the result of a call that ran. */
async function _afterToolCall(
  hooks: Hooks,
  turn: number,
  result: ToolRunResult,
): Promise<ToolRunResult> {
  if (!hooks.afterToolCall || result.refused) return result;
  const change = await hooks.afterToolCall({ call: result.call, turn, result });
  if (!change) return result;
  return {
    ...result,
    output: change.output ?? result.output,
    isError: change.isError ?? result.isError,
  };
}

/** Whether two inputs are the same JSON (a mere reordering of keys counts as a change). */
function _same(a: unknown, b: unknown): boolean {
  try {
    return a === b || JSON.stringify(a) === JSON.stringify(b);
  } catch {
    return false;
  }
}

function _repeatWarning(count: number): string {
  return `You have made this exact call ${count} times in a row with the same input and got ` +
    `the same result each time; calling it again will not change it. Try something different, ` +
    `or give your answer if you are done.`;
}
