/**
 * The shapes of graph workflows: their state, nodes, edges, events, results and checkpoints.
 *
 * @module
 */

import type { AgentEvent } from "../events.ts";
import type { Message } from "../messages.ts";
import type { Model } from "../model.ts";
import type { Tool } from "../tool.ts";

/** What flows through a graph. Plain JSON, so that it can be checkpointed. */
export interface GraphState {
  /** Everything said so far, across nodes: the finished history. */
  history: Message[];
  /** The current context: what the next LLM node works from. */
  messages: Message[];
  /** Anything the nodes keep. */
  data: Record<string, unknown>;
  /** The last text a node produced (an LLM node's answer). */
  output?: string;
  /** After a fan-out: each branch's state, by node key. */
  branches?: Record<string, GraphState>;
}

/** How a failing node is tried again. */
export interface RetryPolicy {
  /** Attempts in all (default 1: no retry). */
  maxAttempts: number;
  /** The wait before the first retry, doubled for each next one (default 0). */
  backoffMs?: number;
}

/** What a code node gets besides the state. */
export interface NodeContext {
  /** The node's key. */
  node: string;
  /** Aborted when the execution is aborted or times out. */
  signal: AbortSignal;
  /** The execution's id. */
  executionId: string;
}

/** A code step: reads the state and gives changes to it (or a new state), or nothing. */
export type NodeFunction = (
  state: Readonly<GraphState>,
  context: NodeContext,
) => Partial<GraphState> | void | Promise<Partial<GraphState> | void>;

/** A condition on an edge: code over the state, or words a model judges. */
export type EdgeCondition = ((state: Readonly<GraphState>) => boolean | Promise<boolean>) | string;

/** A node of a graph. */
export type NodeDefinition =
  | {
    kind: "llm";
    key: string;
    description: string;
    model: Model;
    tools: readonly Tool[];
    systemPrompt: string;
    retry?: RetryPolicy;
  }
  | {
    kind: "code";
    key: string;
    run: NodeFunction;
    retry?: RetryPolicy;
  };

/** An edge: followed when its condition holds (or always, when it has none). */
export interface EdgeDefinition {
  /** Where it leaves. */
  from: string;
  /** Where it goes. */
  to: string;
  /** When it is taken. */
  condition?: EdgeCondition;
}

/** A fan-out: nodes run in parallel from the same state, then meet at a join node. */
export interface FanOutDefinition {
  /** The node after which the branches start. */
  from: string;
  /** The branch nodes. */
  branches: string[];
  /** The node that gets their states (in `state.branches`). */
  join: string;
}

/** Why an edge was taken, as the execution path records it. */
export interface EdgeTaken {
  /** Where it went. */
  to: string;
  /** `default` (no condition), `code` (a condition function held), `model` (judged yes), `fan-out`. */
  kind: "default" | "code" | "model" | "fan-out";
  /** The condition, in words, for a judged edge. */
  condition?: string;
  /** Why it was taken. */
  reason: string;
}

/** One step of the execution path. */
export interface PathStep {
  /** The node. */
  node: string;
  /** When it started (ms since the epoch). */
  startedAt: number;
  /** How long it took. */
  durationMs: number;
  /** Attempts it took (retries + 1). */
  attempts: number;
  /** The edge taken after it, if any. */
  edge?: EdgeTaken;
  /** Conditions judged by a model and found false, with the model's reasons. */
  rejected?: { to: string; condition: string; reason: string }[];
}

/** How an execution stands. */
export type ExecutionStatus =
  | "pending"
  | "running"
  | "paused"
  | "completed"
  | "cancelled"
  | "error";

/** What an execution streams. */
export type GraphEvent =
  | { type: "node_start"; node: string; iteration: number }
  | { type: "node_end"; node: string; iteration: number; durationMs: number; error?: string }
  | { type: "edge"; from: string; edge: EdgeTaken }
  | { type: "node_event"; node: string; event: AgentEvent }
  | { type: "checkpoint"; node: string; iteration: number };

/** What an execution gives in the end. */
export interface GraphResult {
  /** How it ended. */
  status: "completed" | "cancelled" | "error";
  /** Whether it reached an end point. */
  success: boolean;
  /** The state at the end. */
  finalState: GraphState;
  /** The nodes run, in order, with timings and the edges taken. */
  path: PathStep[];
  /** The last text produced. */
  finalMessage: string;
  /** Nodes run. */
  iterations: number;
  /** What went wrong. */
  error?: string;
}

/** A saved point of an execution, to go on from. */
export interface Checkpoint {
  /** The checkpoint format. */
  schemaVersion: 1;
  /** The graph's name. */
  graph: string;
  /** The execution. */
  executionId: string;
  /** The nodes to run next (several after a fan-out's start); empty when it ended. */
  next: string[];
  /** The state after the last node. */
  state: GraphState;
  /** The path so far. */
  path: PathStep[];
  /** Nodes run so far. */
  iterations: number;
  /** When the execution started (ms since the epoch). */
  startTime: number;
  /** When the checkpoint was made (ISO). */
  savedAt: string;
}

/** Where checkpoints are kept. */
export interface CheckpointStore {
  /** Saves the latest checkpoint of an execution. */
  save(checkpoint: Checkpoint): Promise<void>;
  /** The latest checkpoint of an execution. */
  load(executionId: string): Promise<Checkpoint | undefined>;
}
