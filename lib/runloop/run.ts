/**
 * A run inside a run loop: the message is placed (named run loop, continuation, or new goal),
 * relevant memories are offered to the model, the `recall` tool is added, the run's events are
 * recorded in the run loop, and run loops that end are archived.
 *
 * @module
 */

import type { AgentEvent, RunResult } from "../events.ts";
import { runAgent } from "../loop/loop.ts";
import type { RunAgentOptions } from "../loop/options.ts";
import type { MemoryStore } from "../memory/memory.ts";
import type { Message } from "../messages.ts";
import type { Tool } from "../tool.ts";
import { addUsage, emptyUsage, type Usage } from "../usage.ts";
import type { RunLoopEvent } from "./events.ts";
import { overflow, type Placement, type RoutingSpend, type RunLoops } from "./manager.ts";
import { createRecallTool, memoryContext } from "./recall.ts";

/** Options of {@link runInLoop}. */
export interface RunInLoopOptions extends Omit<RunAgentOptions, "input" | "messages"> {
  /** The user's message. */
  message: string;
  /** The run loops. */
  loops: RunLoops;
  /** Long-term memory: memories offered at the start, and the `recall` tool. */
  memory?: MemoryStore;
  /** The run loop the message is meant for. */
  runLoopId?: string;
  /**
   * The conversation to go on from (default: the run loop's own). The CLI passes its session
   * here; run loops then mark where goals begin and end.
   */
  messages?: readonly Message[];
  /** Memories offered at the start of a run (default 5; 0: none). */
  memories?: number;
  /** Offer the `recall` tool when there is a memory (default true). */
  recallTool?: boolean;
  /** Active run loops kept at most; older ones are completed and archived (default 5). */
  maxActive?: number;
  /** Complete the run loop when the run succeeds (one-shot runs: the goal is done). */
  complete?: boolean;
  /** Where the message was already placed (by `loops.place`); it is placed here otherwise. */
  placement?: Placement;
}

/** A run's result, with the run loop it belonged to. */
export interface RunInLoopResult extends RunResult {
  /** The run loop. */
  runLoopId: string;
}

/**
 * Runs the agent on a message inside its run loop, streaming the run's events with
 * `run_loop_start` after `start`, and `run_loop_end` for each run loop that ends (a failed run
 * fails its run loop) before the `result`, which stays last.
 *
 * @example
 * ```ts
 * import { runInLoop } from "./run.ts";
 * import { runLoops } from "./manager.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const loops = runLoops();
 * const run = runInLoop({ model: scriptedModel([{ text: "Done." }]), message: "Tidy up", loops });
 * let step = await run.next();
 * const types = [];
 * while (!step.done) {
 *   types.push(step.value.type);
 *   step = await run.next();
 * }
 * if (types[1] !== "run_loop_start" || loops.active()[0].iterations[0].response !== "Done.") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export async function* runInLoop(
  options: RunInLoopOptions,
): AsyncGenerator<RunLoopEvent, RunInLoopResult> {
  const { loops, memory, message } = options;
  const placement = options.placement ?? await loops.place(message, {
    runLoopId: options.runLoopId,
    signal: options.signal,
  });
  const id = placement.runLoop.id;

  const input: Message[] = [];
  if (placement.seed) input.push(placement.seed);
  if (memory && (options.memories ?? 5) > 0) {
    const offered = await memoryContext(memory, message, { limit: options.memories, exclude: id })
      .catch(() => undefined);
    if (offered) input.push(offered);
  }
  input.push({ role: "user", content: message });

  const run = runAgent({
    ...options,
    messages: options.messages ?? loops.history(id),
    input,
    tools: memory && options.recallTool !== false
      ? _withTool(options.tools, createRecallTool(memory))
      : options.tools,
  });
  // The result comes last, after the run loops that end with this run.
  let result: Extract<AgentEvent, { type: "result" }> | undefined;
  let step = await run.next();
  while (!step.done) {
    loops.record(id, step.value);
    if (step.value.type === "result") result = step.value;
    else yield step.value;
    // The run starts, then says which run loop it belongs to.
    if (step.value.type === "start") yield placement.event;
    step = await run.next();
  }
  // What routing messages here cost is part of what the run cost.
  const spent = loops.takeRoutingSpend(id);
  const outcome = spent ? _withSpend(step.value, spent) : step.value;
  const status = outcome.status;
  if (status === "error") yield await loops.end(id, "failed");
  else if (options.complete && status === "success") yield await loops.end(id, "completed");
  for (const old of overflow(loops, options.maxActive)) yield await loops.end(old.id, "completed");
  if (result) yield spent ? _withSpend(result, spent) : result;
  return { ...outcome, runLoopId: id };
}

/** A result with the routing's tokens and cost added to its own. */
function _withSpend<T extends { usage: Usage; costUsd?: number }>(
  result: T,
  spent: RoutingSpend,
): T {
  const usage = addUsage(addUsage(emptyUsage(), result.usage), spent.usage);
  // A cost left unknown by either leaves the sum unknown.
  const costUsd = result.costUsd === undefined || spent.costUsd === undefined
    ? undefined
    : _usd(result.costUsd + spent.costUsd);
  const { costUsd: _, ...rest } = result;
  return { ...rest, usage, ...(costUsd === undefined ? {} : { costUsd }) } as T;
}

/** Dollars to a billionth, so that sums carry no float noise (0.00021, not 0.00020999…). */
/** `tools` and one more, read as `tools` is each time (a list that changes stays live). */
function _withTool(tools: RunAgentOptions["tools"], more: Tool): () => readonly Tool[] {
  return () => [...(typeof tools === "function" ? tools() : tools ?? []), more];
}

function _usd(amount: number): number {
  return Math.round(amount * 1e9) / 1e9;
}
