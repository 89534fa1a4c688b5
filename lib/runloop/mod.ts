/**
 * Short-term memory: the run loops of an agent, each one user goal with its own conversation
 * and the iterations spent on it. {@link runLoops} keeps the active ones and routes each message
 * to the run loop it names, the one it continues, or a new one; {@link runInLoop} runs the agent
 * on a message inside its run loop, offers what long-term memory holds of earlier work, and
 * archives the run loops that end.
 *
 * @example
 * ```ts
 * import { runInLoop, runLoops } from "@x/agent/runloop";
 * import { scriptedModel } from "@x/agent/testing";
 *
 * const loops = runLoops();
 * const model = scriptedModel([{ text: "Notes written." }, { text: "Date added." }]);
 * const first = runInLoop({ model, message: "Write the release notes", loops });
 * let step = await first.next();
 * while (!step.done) step = await first.next();
 * const id = step.value.runLoopId;
 *
 * const second = runInLoop({ model, message: `loop:${id} and add the date`, loops });
 * step = await second.next();
 * while (!step.done) step = await second.next();
 * if (step.value.runLoopId !== id || loops.active()[0].iterations.length !== 2) {
 *   throw new Error("unexpected");
 * }
 * ```
 *
 * @module
 */

export {
  type Placement,
  type RoutingSpend,
  type RunLoops,
  runLoops,
  type RunLoopsOptions,
} from "./manager.ts";
export { type RouteDecision, routeMessage, type RouteOptions } from "./router.ts";
export { runInLoop, type RunInLoopOptions, type RunInLoopResult } from "./run.ts";
export { createRecallTool, memoryContext, type RecallInput } from "./recall.ts";
export type { Iteration, RunLoop, RunLoopStatus } from "../memory/mod.ts";
export type { RunLoopEndEvent, RunLoopEvent, RunLoopStartEvent } from "./events.ts";
