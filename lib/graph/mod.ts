/**
 * Graph workflows of agents: {@link AgentBuilder} builds an immutable {@link AgentGraph} whose
 * executions run LLM nodes and code nodes along conditional edges, with fan-outs, retries,
 * checkpoints, and limits on iterations and time.
 *
 * @module
 */

export { AgentBuilder, GraphError, type NodeOptions } from "./builder.ts";
export {
  AgentGraph,
  CHECKPOINT_VERSION,
  type ExecuteOptions,
  type Execution,
  type ExecutionContext,
  type GraphDefinition,
} from "./graph.ts";
export { fileCheckpoints, memoryCheckpoints } from "./checkpoint.ts";
export { judgeCondition, NodeCancelled, type NodeOutcome, runNode } from "./nodes.ts";
export { type Channel, channel } from "./channel.ts";
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
