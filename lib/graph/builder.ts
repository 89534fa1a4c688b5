/**
 * {@link AgentBuilder}: nodes (LLM nodes that run the agent loop, code nodes), edges with
 * conditions in code or in words, fan-outs, an entry point and end points; `build()` checks
 * the graph and gives an immutable {@link AgentGraph}.
 *
 * @module
 */

import { AgentError } from "../errors.ts";
import type { Model } from "../model.ts";
import { resolveModel } from "../providers/resolve.ts";
import type { Tool } from "../tool.ts";
import { AgentGraph } from "./graph.ts";
import type {
  EdgeCondition,
  EdgeDefinition,
  FanOutDefinition,
  NodeDefinition,
  NodeFunction,
  RetryPolicy,
} from "./types.ts";

/** The graph is not well formed; the message names the node or edge at fault. */
export class GraphError extends AgentError {}

/** Options of a node. */
export interface NodeOptions {
  /** How a failing node is tried again. */
  retry?: RetryPolicy;
}

/**
 * Builds a graph of agents.
 *
 * @example
 * ```ts
 * import { AgentBuilder } from "./builder.ts";
 * const graph = new AgentBuilder("counter")
 *   .addNode("inc", (state) => ({ data: { n: Number(state.data.n ?? 0) + 1 } }))
 *   .addNode("done", () => ({ output: "counted" }))
 *   .addConditionalEdge("inc", "done", (state) => Number(state.data.n) >= 3)
 *   .addEdge("inc", "inc")
 *   .setEntryPoint("inc")
 *   .setEndPoints("done")
 *   .build();
 * const { result } = graph.execute();
 * const outcome = await result;
 * if (outcome.finalState.data.n !== 3 || outcome.iterations !== 4) throw new Error("unexpected");
 * ```
 */
export class AgentBuilder {
  #name: string;
  #description = "";
  #maxIterations = 50;
  #timeoutMs = 60_000;
  #judge?: Model;
  readonly #nodes = new Map<string, NodeDefinition>();
  readonly #edges: EdgeDefinition[] = [];
  readonly #fanOuts: FanOutDefinition[] = [];
  #entry?: string;
  #ends: string[] = [];

  /** Starts a graph called `name`. */
  constructor(name: string) {
    this.#name = name;
  }

  /** Says what the graph does. */
  description(text: string): this {
    this.#description = text;
    return this;
  }

  /** The most nodes an execution may run (default 50). */
  maxIterations(count: number): this {
    if (!Number.isInteger(count) || count < 1) {
      throw new RangeError(`maxIterations must be ≥ 1, got ${count}`);
    }
    this.#maxIterations = count;
    return this;
  }

  /** The longest an execution may take (default 60 s). */
  timeout(ms: number): this {
    if (!(ms > 0)) throw new RangeError(`timeout must be > 0 ms, got ${ms}`);
    this.#timeoutMs = ms;
    return this;
  }

  /** The model that judges conditions written in words (default each edge's LLM node's). */
  judge(model: Model | string): this {
    this.#judge = resolveModel(model);
    return this;
  }

  /** Adds a node that runs the agent loop with its own model, tools and system prompt. */
  addLLMNode(
    key: string,
    description: string,
    model: Model | string,
    tools: readonly Tool[] = [],
    systemPrompt = "",
    options: NodeOptions = {},
  ): this {
    return this.#add({
      kind: "llm",
      key,
      description,
      model: resolveModel(model),
      tools,
      systemPrompt: systemPrompt || description,
      retry: options.retry,
    });
  }

  /** Adds a plain code step. */
  addNode(key: string, run: NodeFunction, options: NodeOptions = {}): this {
    return this.#add({ kind: "code", key, run, retry: options.retry });
  }

  /** An edge always taken (the default when several edges leave a node). */
  addEdge(from: string, to: string): this {
    this.#edges.push({ from, to });
    return this;
  }

  /**
   * An edge taken when `condition` holds: a function of the state, or a plain-language
   * statement a model judges (yes/no) from the recent conversation. The edges leaving a node
   * are tried in the order they were added.
   */
  addConditionalEdge(from: string, to: string, condition: EdgeCondition): this {
    if (typeof condition === "string" && !condition.trim()) {
      throw new GraphError(`The condition of the edge ${from} → ${to} is empty`);
    }
    this.#edges.push({ from, to, condition });
    return this;
  }

  /** After `from`, runs `branches` in parallel on copies of the state, then `join` with their states. */
  addFanOut(from: string, branches: string[], join: string): this {
    if (branches.length < 2) {
      throw new GraphError(`A fan-out from ${from} needs two branches or more`);
    }
    this.#fanOuts.push({ from, branches: [...branches], join });
    return this;
  }

  /** The node an execution starts at. */
  setEntryPoint(key: string): this {
    this.#entry = key;
    return this;
  }

  /** The nodes that end an execution successfully. */
  setEndPoints(...keys: string[]): this {
    this.#ends = keys;
    return this;
  }

  /** Checks the graph and gives it, immutable. Throws a {@link GraphError} naming what is wrong. */
  build(): AgentGraph {
    const known = (key: string, where: string) => {
      if (!this.#nodes.has(key)) {
        throw new GraphError(
          `${where} names an unknown node "${key}". Nodes: ${
            [...this.#nodes.keys()].join(", ") || "none"
          }`,
        );
      }
    };
    if (!this.#entry) {
      throw new GraphError(`Graph "${this.#name}" has no entry point: call setEntryPoint()`);
    }
    if (this.#ends.length === 0) {
      throw new GraphError(`Graph "${this.#name}" has no end point: call setEndPoints()`);
    }
    known(this.#entry, "The entry point");
    for (const end of this.#ends) known(end, "An end point");
    for (const { from, to } of this.#edges) {
      known(from, `The edge ${from} → ${to}`);
      known(to, `The edge ${from} → ${to}`);
    }
    for (const { from, to, condition } of this.#edges) {
      if (typeof condition === "string" && !this.#judge && this.#nodes.get(from)?.kind !== "llm") {
        throw new GraphError(
          `The edge ${from} → ${to} has a condition in words after a code node: set a model to ` +
            `judge it with judge()`,
        );
      }
    }
    for (const fan of this.#fanOuts) {
      for (const key of [fan.from, ...fan.branches, fan.join]) {
        known(key, `The fan-out from ${fan.from}`);
      }
    }
    const next = (key: string): string[] => [
      ...this.#edges.filter((edge) => edge.from === key).map((edge) => edge.to),
      ...this.#fanOuts.filter((fan) => fan.from === key).flatMap((fan) => fan.branches),
      ...this.#fanOuts.filter((fan) => fan.branches.includes(key)).map((fan) => fan.join),
    ];
    const reachable = _closure([this.#entry], next);
    const unreachable = [...this.#nodes.keys()].filter((key) => !reachable.has(key));
    if (unreachable.length) {
      throw new GraphError(
        `Unreachable from the entry point "${this.#entry}": ${unreachable.join(", ")}`,
      );
    }
    const ends = new Set(this.#ends);
    const stuck = [...reachable].filter((key) =>
      ![..._closure([key], next)].some((node) => ends.has(node))
    );
    if (stuck.length) {
      throw new GraphError(
        `No path to an end point (${this.#ends.join(", ")}) from: ${stuck.join(", ")}`,
      );
    }
    return new AgentGraph({
      name: this.#name,
      description: this.#description,
      maxIterations: this.#maxIterations,
      timeoutMs: this.#timeoutMs,
      judge: this.#judge,
      nodes: new Map(this.#nodes),
      edges: [...this.#edges],
      fanOuts: this.#fanOuts.map((fan) => ({ ...fan, branches: [...fan.branches] })),
      entry: this.#entry,
      ends: [...this.#ends],
    });
  }

  #add(node: NodeDefinition): this {
    if (!/^[\w.-]+$/.test(node.key)) {
      throw new GraphError(`Invalid node key "${node.key}": use letters, digits, _ . -`);
    }
    if (this.#nodes.has(node.key)) throw new GraphError(`Two nodes are named "${node.key}"`);
    this.#nodes.set(node.key, node);
    return this;
  }
}

function _closure(start: string[], next: (key: string) => string[]): Set<string> {
  const seen = new Set<string>();
  const queue = [...start];
  while (queue.length) {
    const key = queue.pop()!;
    if (seen.has(key)) continue;
    seen.add(key);
    queue.push(...next(key));
  }
  return seen;
}
