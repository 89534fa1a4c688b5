/**
 * {@link AgentGraph}: a built, immutable graph of agents, and its executions — node after node
 * along the edges whose conditions hold, with fan-outs run in parallel, a checkpoint after
 * every node, and limits on iterations and time.
 *
 * @module
 */

import type { ToolCallPart } from "../messages.ts";
import type { Model } from "../model.ts";
import { judgeCondition, NodeCancelled, runNode } from "./nodes.ts";
import type {
  Checkpoint,
  CheckpointStore,
  EdgeDefinition,
  EdgeTaken,
  ExecutionStatus,
  FanOutDefinition,
  GraphEvent,
  GraphResult,
  GraphState,
  NodeDefinition,
  PathStep,
} from "./types.ts";
import { channel } from "./channel.ts";

/** A built graph, as the builder checked it. */
export interface GraphDefinition {
  /** Its name. */
  readonly name: string;
  /** What it does. */
  readonly description: string;
  /** The most nodes an execution may run. */
  readonly maxIterations: number;
  /** The longest an execution may take. */
  readonly timeoutMs: number;
  /** The model that judges conditions in words, when set. */
  readonly judge?: Model;
  /** The nodes by key. */
  readonly nodes: ReadonlyMap<string, NodeDefinition>;
  /** The edges, in the order they were added. */
  readonly edges: readonly EdgeDefinition[];
  /** The fan-outs. */
  readonly fanOuts: readonly FanOutDefinition[];
  /** The entry point. */
  readonly entry: string;
  /** The end points. */
  readonly ends: readonly string[];
}

/** A running execution, to watch and steer. */
export interface ExecutionContext {
  /** Its id. */
  readonly executionId: string;
  /** When it started (ms since the epoch). */
  readonly startTime: number;
  /** Nodes run so far. */
  iterationCount(): number;
  /** How it stands: pending → running (⇄ paused) → completed / cancelled / error. */
  status(): ExecutionStatus;
  /** Pauses at the next node boundary. */
  pause(): void;
  /** Goes on after a pause. */
  resume(): void;
  /** Stops it; the running node is cancelled. */
  abort(): void;
  /** The tool calls made so far, with the node that made each. */
  getToolCalls(): Array<ToolCallPart & { node: string }>;
}

/** An execution: its result, its context, and its events. */
export interface Execution {
  /** Resolves when it ends; never rejects. */
  result: Promise<GraphResult>;
  /** Its context. */
  context: ExecutionContext;
  /** Its events, as they happen (`node_start`, agent events inside `node_event`, `node_end`, …). */
  events: AsyncIterable<GraphEvent>;
}

/** Options of an execution. */
export interface ExecuteOptions {
  /** Where a checkpoint is saved after every node. */
  checkpoints?: CheckpointStore;
  /** The execution id (default a new UUID). */
  executionId?: string;
}

/** The checkpoint format this version writes and reads. */
export const CHECKPOINT_VERSION = 1;

/** A built graph of agents; immutable. Create it with `AgentBuilder`. */
export class AgentGraph {
  /** What the builder checked. */
  readonly definition: GraphDefinition;

  /** Wraps a checked definition; use `AgentBuilder.build()`. */
  constructor(definition: GraphDefinition) {
    this.definition = Object.freeze({ ...definition });
    Object.freeze(this);
  }

  /**
   * Starts an execution at `entry` (default the entry point) with `initialState` (a task as
   * text becomes the first user message).
   */
  execute(
    entry: string = this.definition.entry,
    initialState: Partial<GraphState> | string = {},
    options: ExecuteOptions = {},
  ): Execution {
    if (!this.definition.nodes.has(entry)) {
      throw new RangeError(`No node "${entry}" in graph "${this.definition.name}"`);
    }
    const state = typeof initialState === "string"
      ? { history: [], messages: [{ role: "user" as const, content: initialState }], data: {} }
      : { history: [], messages: [], data: {}, ...initialState };
    if (state.history.length === 0) state.history = [...state.messages];
    return _start(this.definition, [entry], structuredClone(state), [], 0, Date.now(), options);
  }

  /** Goes on from a checkpoint, e.g. in a new process after a crash. */
  resume(checkpoint: Checkpoint, options: Omit<ExecuteOptions, "executionId"> = {}): Execution {
    if (checkpoint.schemaVersion !== CHECKPOINT_VERSION) {
      throw new RangeError(
        `Checkpoint schema ${checkpoint.schemaVersion} is not ${CHECKPOINT_VERSION}`,
      );
    }
    if (checkpoint.graph !== this.definition.name) {
      throw new RangeError(
        `The checkpoint is of graph "${checkpoint.graph}", not "${this.definition.name}"`,
      );
    }
    for (const key of checkpoint.next) {
      if (!this.definition.nodes.has(key)) {
        throw new RangeError(`The checkpoint names an unknown node "${key}"`);
      }
    }
    return _start(
      this.definition,
      checkpoint.next,
      structuredClone(checkpoint.state),
      structuredClone(checkpoint.path),
      checkpoint.iterations,
      checkpoint.startTime,
      { ...options, executionId: checkpoint.executionId },
    );
  }
}

function _start(
  graph: GraphDefinition,
  next: string[],
  state: GraphState,
  path: PathStep[],
  iterations: number,
  startTime: number,
  options: ExecuteOptions,
): Execution {
  const executionId = options.executionId ?? crypto.randomUUID();
  const events = channel<GraphEvent>();
  const controller = new AbortController();
  const toolCalls: Array<ToolCallPart & { node: string }> = [];
  let status: ExecutionStatus = "pending";
  let paused: PromiseWithResolvers<void> | undefined;
  let timedOut = false;
  const context: ExecutionContext = {
    executionId,
    startTime,
    iterationCount: () => iterations,
    status: () => status,
    pause() {
      if (status === "running" && !paused) paused = Promise.withResolvers();
    },
    resume() {
      paused?.resolve();
      paused = undefined;
    },
    abort() {
      controller.abort();
      paused?.resolve();
    },
    getToolCalls: () => [...toolCalls],
  };
  const remaining = graph.timeoutMs - (Date.now() - startTime);
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
    paused?.resolve();
  }, Math.max(0, remaining));

  const finish = (
    outcome: Omit<GraphResult, "finalState" | "path" | "iterations" | "finalMessage">,
  ): GraphResult => {
    clearTimeout(timer);
    status = outcome.status;
    events.close();
    return { ...outcome, finalState: state, path, iterations, finalMessage: state.output ?? "" };
  };

  const emit = (event: GraphEvent) => events.push(event);
  const run = async (): Promise<GraphResult> => {
    await Promise.resolve(); // let the caller take the context first
    status = "running";
    try {
      while (next.length > 0) {
        if (paused) {
          status = "paused";
          await paused.promise;
          status = "running";
        }
        if (controller.signal.aborted) break;
        if (iterations + next.length > graph.maxIterations) {
          return finish({
            status: "error",
            success: false,
            error:
              `The execution ran ${iterations} nodes and may run ${graph.maxIterations} at most ` +
              `(maxIterations); it stopped before "${next[0]}".`,
          });
        }
        const [state2, step] = next.length > 1
          ? await _fanOut(graph, next, state, ++iterations, {
            controller,
            executionId,
            emit,
            toolCalls,
          })
          : await _node(graph, next[0], state, ++iterations, {
            controller,
            executionId,
            emit,
            toolCalls,
          });
        if (next.length > 1) iterations += next.length - 1;
        state = state2;
        path.push(step);
        if (graph.ends.includes(step.node) && next.length === 1) {
          next = [];
        } else {
          const chosen = await _choose(graph, step.node, state, controller.signal, step);
          if (!chosen) {
            return finish({
              status: "error",
              success: false,
              error:
                `No edge leaves "${step.node}" under the state it left: every condition failed.`,
            });
          }
          emit({ type: "edge", from: step.node, edge: chosen.edge });
          step.edge = chosen.edge;
          next = chosen.next;
        }
        await options.checkpoints?.save({
          schemaVersion: CHECKPOINT_VERSION,
          graph: graph.name,
          executionId,
          next,
          state,
          path,
          iterations,
          startTime,
          savedAt: new Date().toISOString(),
        });
        emit({ type: "checkpoint", node: step.node, iteration: iterations });
      }
      if (controller.signal.aborted) return _stopped();
      return finish({ status: "completed", success: true });
    } catch (error) {
      if (error instanceof NodeCancelled || controller.signal.aborted) return _stopped();
      return finish({ status: "error", success: false, error: (error as Error).message });
    }
  };
  const _stopped = () =>
    timedOut
      ? finish({
        status: "error",
        success: false,
        error: `The execution timed out after ${graph.timeoutMs} ms.`,
      })
      : finish({ status: "cancelled", success: false, error: "The execution was aborted." });

  return { result: run(), context, events };
}

interface _Run {
  controller: AbortController;
  executionId: string;
  emit(event: GraphEvent): void;
  toolCalls: Array<ToolCallPart & { node: string }>;
}

async function _node(
  graph: GraphDefinition,
  key: string,
  state: GraphState,
  iteration: number,
  run: _Run,
): Promise<[GraphState, PathStep]> {
  const node = graph.nodes.get(key)!;
  const startedAt = Date.now();
  const started = performance.now();
  run.emit({ type: "node_start", node: key, iteration });
  try {
    const outcome = await runNode(node, state, {
      signal: run.controller.signal,
      executionId: run.executionId,
      emit: (event) => {
        if (event.type === "tool_call") {
          run.toolCalls.push({
            type: "tool_call",
            id: event.id,
            name: event.name,
            input: event.input,
            node: key,
          });
        }
        run.emit({ type: "node_event", node: key, event });
      },
    });
    const durationMs = performance.now() - started;
    run.emit({ type: "node_end", node: key, iteration, durationMs });
    return [outcome.state, { node: key, startedAt, durationMs, attempts: outcome.attempts }];
  } catch (error) {
    run.emit({
      type: "node_end",
      node: key,
      iteration,
      durationMs: performance.now() - started,
      error: (error as Error).message,
    });
    throw error;
  }
}

/** Runs branch nodes in parallel on copies of the state; the join gets their states. */
async function _fanOut(
  graph: GraphDefinition,
  branches: string[],
  state: GraphState,
  iteration: number,
  run: _Run,
): Promise<[GraphState, PathStep]> {
  const startedAt = Date.now();
  const started = performance.now();
  const done = await Promise.all(
    branches.map((key, i) => _node(graph, key, structuredClone(state), iteration + i, run)),
  );
  const merged: GraphState = {
    ...state,
    history: [
      ...state.history,
      ...done.flatMap(([branch]) => branch.history.slice(state.history.length)),
    ],
    messages: [
      ...state.messages,
      ...done.flatMap(([branch]) => branch.messages.slice(state.messages.length)),
    ],
    data: Object.assign({}, state.data, ...done.map(([branch]) => branch.data)),
    branches: Object.fromEntries(done.map(([branch], i) => [branches[i], branch])),
    output: done.map(([branch]) => branch.output).filter(Boolean).join("\n\n"),
  };
  const join = graph.fanOuts.find((fan) => fan.branches.join() === branches.join())!;
  return [merged, {
    node: `[${branches.join(" | ")}]`,
    startedAt,
    durationMs: performance.now() - started,
    attempts: Math.max(...done.map(([, step]) => step.attempts)),
    edge: { to: join.join, kind: "fan-out", reason: `the branches meet at "${join.join}"` },
  }];
}

/** The edge to follow from `key`: a fan-out, or the first edge whose condition holds. */
async function _choose(
  graph: GraphDefinition,
  key: string,
  state: GraphState,
  signal: AbortSignal,
  step: PathStep,
): Promise<{ next: string[]; edge: EdgeTaken } | undefined> {
  if (key.startsWith("[")) {
    return { next: [step.edge!.to], edge: step.edge! };
  }
  const fan = graph.fanOuts.find((candidate) => candidate.from === key);
  if (fan) {
    return {
      next: fan.branches,
      edge: { to: fan.branches.join(" | "), kind: "fan-out", reason: "a fan-out" },
    };
  }
  for (const edge of graph.edges.filter((candidate) => candidate.from === key)) {
    if (edge.condition === undefined) {
      return {
        next: [edge.to],
        edge: { to: edge.to, kind: "default", reason: "the default edge" },
      };
    }
    if (typeof edge.condition === "function") {
      if (await edge.condition(state)) {
        return {
          next: [edge.to],
          edge: { to: edge.to, kind: "code", reason: "its condition held" },
        };
      }
      continue;
    }
    const node = graph.nodes.get(key)!;
    const model = graph.judge ?? (node.kind === "llm" ? node.model : undefined);
    if (!model) {
      throw new Error(
        `No model to judge "${edge.condition}" after code node "${key}": set one with judge()`,
      );
    }
    const verdict = await judgeCondition(model, edge.condition, state, signal);
    if (verdict.holds) {
      return {
        next: [edge.to],
        edge: { to: edge.to, kind: "model", condition: edge.condition, reason: verdict.reason },
      };
    }
    (step.rejected ??= []).push({ to: edge.to, condition: edge.condition, reason: verdict.reason });
  }
  return undefined;
}
