/**
 * Runs the tool calls of one turn: input checks, timeouts, cancellation, output limits, and
 * parallelism with results kept in call order. Every failure becomes a tool result with
 * `isError: true`, never an exception.
 *
 * @module
 */

import { describeError } from "./errors.ts";
import type { Message, ToolCallPart } from "./messages.ts";
import type { PermissionCallback } from "./hooks.ts";
import type { Tool, ToolChecks, ToolReturn } from "./tool.ts";

/** How tool calls run. */
export interface ToolRunOptions {
  /** The working directory passed to tools. */
  cwd: string;
  /** Cancels every call. */
  signal: AbortSignal;
  /** The longest a call may take unless the tool sets its own (default 10 minutes). */
  timeoutMs?: number;
  /** Output longer than this many characters is cut in the middle (default 50,000). */
  maxOutputChars?: number;
  /** How many calls of one turn may run at once (default 8). */
  concurrency?: number;
  /**
   * Asked before a call runs (once its arguments are JSON, before its schema check): refuse it
   * (the reason goes to the model) or change its input. Permission checks and hooks live here.
   */
  before?(call: ToolCallPart, tool: Tool): Promise<ToolCallVerdict>;
  /**
   * The permission rules' checks of what a call that runs actually touches (real paths,
   * redirect hops), put in its tool's context: the permission callback's `checks`.
   */
  checks?: PermissionCallback["checks"];
  /** What the model had in view when it asked for these calls (see `ToolContext.history`). */
  history?: readonly Message[];
}

/** What {@link ToolRunOptions.before} decides: nothing, a refusal, or another input. */
export type ToolCallVerdict = { refuse: string } | { input: unknown } | void;

/** The outcome of one tool call. */
export interface ToolRunResult {
  /** The call. */
  call: ToolCallPart;
  /** What the model sees. */
  output: string;
  /** Whether the call failed. */
  isError: boolean;
  /** How long it took. */
  durationMs: number;
  /** A short form for people. */
  display?: string;
  /** Structured data for the caller. */
  metadata?: Record<string, unknown>;
  /** Set when a permission check or a hook refused the call, so it never ran. */
  refused?: true;
}

/** The default limits of {@link ToolRunOptions}. */
export const TOOL_DEFAULTS = {
  timeoutMs: 600_000,
  maxOutputChars: 50_000,
  concurrency: 8,
} as const;

/**
 * Cuts `text` to at most about `max` characters, keeping its head and tail and saying how
 * much was cut.
 *
 * @example
 * ```ts
 * import { truncateOutput } from "./tool_runner.ts";
 * const cut = truncateOutput("a".repeat(100), 20);
 * if (!cut.includes("80 characters cut")) throw new Error("unexpected");
 * ```
 */
export function truncateOutput(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.ceil(max / 2);
  const tail = max - head;
  const cut = text.length - head - tail;
  return `${text.slice(0, head)}\n\n[… ${cut} characters cut …]\n\n${
    tail > 0 ? text.slice(-tail) : ""
  }`;
}

/**
 * Runs one tool call and never throws: an unknown tool, arguments that are not JSON or do not
 * fit the schema, a thrown error, a timeout or a cancellation all become error results.
 *
 * @example
 * ```ts
 * import { runToolCall } from "./tool_runner.ts";
 * const result = await runToolCall(
 *   { type: "tool_call", id: "1", name: "nope", input: {} },
 *   new Map(),
 *   { cwd: ".", signal: new AbortController().signal },
 * );
 * if (!result.isError) throw new Error("unexpected");
 * ```
 */
export async function runToolCall(
  call: ToolCallPart,
  registry: ReadonlyMap<string, Tool>,
  options: ToolRunOptions,
): Promise<ToolRunResult> {
  const started = performance.now();
  const done = (value: ToolReturn, isError = false): ToolRunResult => {
    const out = typeof value === "string" ? { output: value } : value;
    const result: ToolRunResult = {
      call,
      output: truncateOutput(out.output, options.maxOutputChars ?? TOOL_DEFAULTS.maxOutputChars),
      isError: isError || out.isError === true,
      durationMs: performance.now() - started,
    };
    if (out.display !== undefined) result.display = out.display;
    if (out.metadata !== undefined) result.metadata = out.metadata;
    return result;
  };

  const tool = registry.get(call.name);
  if (!tool) {
    const names = [...registry.keys()].join(", ") || "none";
    return done(`Error: unknown tool "${call.name}". Available tools: ${names}.`, true);
  }
  if (call.invalidInput !== undefined) {
    const raw = call.invalidInput.length > 200
      ? `${call.invalidInput.slice(0, 200)}…`
      : call.invalidInput;
    return done(
      `Error: the arguments for "${call.name}" were not valid JSON: ${raw}\n` +
        `Send the arguments as one JSON object that matches the tool's schema.`,
      true,
    );
  }
  let input = call.input;
  if (options.before) {
    try {
      const verdict = await options.before(call, tool);
      if (verdict && "refuse" in verdict) {
        return { ...done(`Error: ${verdict.refuse}`, true), refused: true };
      }
      if (verdict && "input" in verdict) input = verdict.input;
    } catch (error) {
      return done(`Error: the call was not run: ${describeError(error).message}`, true);
    }
  }
  if (tool.parse) {
    const checked = tool.parse(input);
    if (!checked.success) {
      return done(
        `Error: invalid arguments for "${call.name}":\n${checked.error}\n` +
          `Fix these and call the tool again.`,
        true,
      );
    }
    input = checked.data;
  }
  if (options.signal.aborted) return done("Error: not run, the run was cancelled.", true);
  let checks: ToolChecks = {};
  if (options.checks) {
    try {
      const request = { call: { ...call, input }, tool, cwd: options.cwd, signal: options.signal };
      checks = await options.checks(request);
    } catch (error) {
      return done(`Error: the call was not run: ${describeError(error).message}`, true);
    }
  }

  const timeoutMs = tool.timeoutMs ?? options.timeoutMs ?? TOOL_DEFAULTS.timeoutMs;
  // The call's own signal: aborted by the run's or by the timeout. It is tied to the run's
  // signal by a listener taken off when the call ends, so that nothing of the call stays with a
  // signal that lives longer (`AbortSignal.any` would leave a reference in it for every call).
  const controller = new AbortController();
  const signal = controller.signal;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onRunAbort = () => controller.abort(options.signal.reason);
  options.signal.addEventListener("abort", onRunAbort, { once: true });
  if (options.signal.aborted) onRunAbort(); // during the checks
  const stopped = Promise.withResolvers<never>();
  signal.addEventListener("abort", () => stopped.reject(signal.reason), { once: true });
  try {
    const value = await Promise.race([
      Promise.resolve(
        tool.execute(input, {
          signal,
          cwd: options.cwd,
          toolCallId: call.id,
          ...(options.history ? { history: options.history } : {}),
          ...checks,
        }),
      ),
      stopped.promise,
    ]);
    return done(value);
  } catch (error) {
    if (timedOut) {
      return done(`Error: "${call.name}" timed out after ${timeoutMs} ms.`, true);
    }
    if (options.signal.aborted) return done("Error: cancelled, the run was aborted.", true);
    if (error instanceof Deno.errors.NotCapable) {
      // Deno's message names the flag that would grant the access.
      return done(`Error: the runtime refused this call. ${describeError(error).message}`, true);
    }
    return done(`Error: ${describeError(error).message}`, true);
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener("abort", onRunAbort);
  }
}

/**
 * Runs the calls of one turn and yields each result as it finishes, with its index in
 * `calls`. Calls run in parallel up to `concurrency`; a tool marked `exclusive` runs alone,
 * after the calls before it and before the calls after it.
 *
 * @example
 * ```ts
 * import { runToolCalls } from "./tool_runner.ts";
 * const calls = [{ type: "tool_call" as const, id: "1", name: "nope", input: {} }];
 * for await (const [index, result] of runToolCalls(calls, new Map(), {
 *   cwd: ".",
 *   signal: new AbortController().signal,
 * })) {
 *   if (index !== 0 || !result.isError) throw new Error("unexpected");
 * }
 * ```
 */
export async function* runToolCalls(
  calls: readonly ToolCallPart[],
  registry: ReadonlyMap<string, Tool>,
  options: ToolRunOptions,
): AsyncGenerator<[number, ToolRunResult]> {
  const limit = Math.max(1, options.concurrency ?? TOOL_DEFAULTS.concurrency);
  let next = 0;
  while (next < calls.length) {
    // One batch: an exclusive call alone, or the run of non-exclusive calls up to the next one.
    const start = next;
    if (registry.get(calls[next].name)?.exclusive) next++;
    else {
      while (next < calls.length && !registry.get(calls[next].name)?.exclusive) next++;
    }
    yield* _runBatch(calls, start, next, registry, options, limit);
  }
}

async function* _runBatch(
  calls: readonly ToolCallPart[],
  start: number,
  end: number,
  registry: ReadonlyMap<string, Tool>,
  options: ToolRunOptions,
  limit: number,
): AsyncGenerator<[number, ToolRunResult]> {
  const running = new Map<number, Promise<[number, ToolRunResult]>>();
  let next = start;
  while (next < end || running.size > 0) {
    while (next < end && running.size < limit) {
      const index = next++;
      running.set(
        index,
        runToolCall(calls[index], registry, options).then((result) => [index, result]),
      );
    }
    const finished = await Promise.race(running.values());
    running.delete(finished[0]);
    yield finished;
  }
}
