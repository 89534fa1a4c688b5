/**
 * Graph workflows of agents: {@link AgentBuilder} builds an immutable {@link AgentGraph} whose
 * executions run LLM nodes and code nodes along conditional edges, with fan-outs, retries,
 * checkpoints ({@link memoryCheckpoints}, {@link fileCheckpoints}), and limits on iterations
 * and time.
 *
 * @example
 * ```ts
 * import { AgentBuilder } from "@x/agent/graph";
 * import { scriptedModel } from "@x/agent/testing";
 *
 * const model = scriptedModel([{ text: "A draft." }]);
 * const graph = new AgentBuilder("write-then-publish")
 *   .addLLMNode("write", "Write a draft", model, [], "You are a writer.")
 *   .addNode("publish", (state) => ({ output: `Published: ${state.output}` }))
 *   .addEdge("write", "publish")
 *   .setEntryPoint("write")
 *   .setEndPoints("publish")
 *   .build();
 * const outcome = await graph.execute("write", "Write about Deno").result;
 * if (!outcome.success || outcome.finalMessage !== "Published: A draft.") {
 *   throw new Error("unexpected");
 * }
 * ```
 *
 * @module
 */

export { AgentBuilder, GraphError, type NodeOptions } from "./builder.ts";
export {
  AgentGraph,
  type ExecuteOptions,
  type Execution,
  type ExecutionContext,
  type GraphDefinition,
} from "./graph.ts";
export { fileCheckpoints, memoryCheckpoints } from "./checkpoint.ts";
export type {
  Checkpoint,
  CheckpointStore,
  EdgeCondition,
  EdgeDefinition,
  EdgeTaken,
  ExecutionStatus,
  FanOutDefinition,
  GraphEvent,
  GraphResult,
  GraphState,
  NodeContext,
  NodeDefinition,
  NodeFunction,
  PathStep,
  RetryPolicy,
} from "./types.ts";
