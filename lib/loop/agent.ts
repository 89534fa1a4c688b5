/**
 * {@link Agent}: a model, a system prompt and tools, bound once and run many times. It keeps
 * no conversation: pass `result.messages` (and `result.compaction`) back in to go on.
 *
 * @module
 */

import type { CompactionState } from "../compaction_state.ts";
import type { AgentEvent, RunResult } from "../events.ts";
import { runAgent, type RunAgentOptions } from "./loop.ts";
import type { Message } from "../messages.ts";
import type { Model } from "../model.ts";
import { resolveModel } from "../providers/resolve.ts";

/** Options of an {@link Agent}: the loop's options, with the model given by name if wished. */
export interface AgentOptions
  extends Omit<RunAgentOptions, "model" | "messages" | "input" | "signal" | "compactionState"> {
  /** The model: `provider/model` (e.g. `openai/gpt-4.1-mini`) or a {@link Model}. */
  model: string | Model;
  /** The provider's API root (for `openai/…` including `/v1`); default from its env var. */
  baseURL?: string;
  /** The provider's API key; default from its env var. */
  apiKey?: string;
}

/** Options of one run. */
export interface RunOptions {
  /** The conversation so far, e.g. the `messages` of the previous result. */
  messages?: readonly Message[];
  /** Cancels the run. */
  signal?: AbortSignal;
  /** The session id reported in events. */
  sessionId?: string;
  /** Called when the turn limit is reached; returns how many more turns to allow. */
  onMaxTurns?: RunAgentOptions["onMaxTurns"];
  /** Gives what the user typed while the agent worked, at each turn boundary. */
  pendingInput?: RunAgentOptions["pendingInput"];
  /** The summary in force, e.g. the `compaction` of the previous result. */
  compactionState?: CompactionState;
  /** Context compaction for this run, in place of the agent's. */
  compaction?: RunAgentOptions["compaction"];
}

/**
 * An agent. `run()` resolves to the result; `stream()` yields every event and returns the
 * result. Failures end the run with status `error` rather than throwing.
 *
 * @example
 * ```ts
 * import { Agent } from "./agent.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const agent = new Agent({ model: scriptedModel([{ text: "4" }, { text: "8" }]) });
 * const first = await agent.run("2 + 2?");
 * // Pass the history (and the summary in force, if the run compacted it) back in to go on.
 * const second = await agent.run("Double it", {
 *   messages: first.messages,
 *   compactionState: first.compaction,
 * });
 * if (second.text !== "8" || second.messages.length !== 4) throw new Error("unexpected");
 * ```
 */
export class Agent {
  /** The model the agent calls. */
  readonly model: Model;
  readonly #options: Omit<AgentOptions, "model" | "baseURL" | "apiKey">;

  /** Creates an agent; an unknown provider or a missing key throws a `ConfigError`. */
  constructor(options: AgentOptions) {
    const { model, baseURL, apiKey, ...rest } = options;
    this.model = resolveModel(model, { baseURL, apiKey });
    this.#options = rest;
  }

  /** Runs the agent on `input`, streaming its events; the generator returns the result. */
  stream(
    input?: string | readonly Message[],
    options: RunOptions = {},
  ): AsyncGenerator<AgentEvent, RunResult> {
    return runAgent({
      ...this.#options,
      model: this.model,
      input,
      messages: options.messages,
      signal: options.signal,
      sessionId: options.sessionId ?? this.#options.sessionId,
      onMaxTurns: options.onMaxTurns ?? this.#options.onMaxTurns,
      pendingInput: options.pendingInput ?? this.#options.pendingInput,
      compaction: options.compaction ?? this.#options.compaction,
      compactionState: options.compactionState,
    });
  }

  /** Runs the agent on `input` and resolves to the result. */
  async run(input?: string | readonly Message[], options: RunOptions = {}): Promise<RunResult> {
    const events = this.stream(input, options);
    let step = await events.next();
    while (!step.done) step = await events.next();
    return step.value;
  }
}
