/**
 * A model that plays a script: for tests of agents and tools, with no network and no keys.
 *
 * @module
 */

import { sleep } from "../async.ts";
import type { ToolCallPart } from "../messages.ts";
import type { FinishReason, Model, ModelEvent, ModelRequest } from "../model.ts";
import type { Usage } from "../usage.ts";

/** A tool call the scripted model makes. */
export interface ScriptedToolCall {
  /** The tool's name. */
  name: string;
  /** The arguments (default `{}`). */
  input?: unknown;
  /** The call id (default `call_<call>_<index>`). */
  id?: string;
  /** Raw arguments that are not valid JSON, to test how the loop copes. */
  invalidInput?: string;
}

/** One answer of the scripted model. */
export interface ScriptedStep {
  /** Reasoning, as one text or as the deltas to stream. */
  reasoning?: string | string[];
  /** The answer's text, as one text or as the deltas to stream. */
  text?: string | string[];
  /** Tool calls, sent after the text. */
  toolCalls?: ScriptedToolCall[];
  /** Why the answer ends (default `tool_calls` when there are calls, else `stop`). */
  finishReason?: FinishReason;
  /** Tokens reported (default zero). */
  usage?: Usage;
  /** A wait before the first event. */
  delayMs?: number;
  /** A wait between deltas. */
  deltaDelayMs?: number;
  /** Thrown after the step's output instead of finishing, e.g. a retryable ProviderError. */
  error?: Error;
  /** Waits ignore the abort signal, like a provider that does not stop when asked. */
  ignoreSignal?: boolean;
}

/** A step, or a function of the request that gives one. */
export type ScriptedTurn =
  | ScriptedStep
  | ((request: ModelRequest, call: number) => ScriptedStep | Promise<ScriptedStep>);

/** Options of {@link scriptedModel}. */
export interface ScriptedModelOptions {
  /** The provider name reported (default `scripted`). */
  provider?: string;
  /** The model id reported (default `scripted-model`). */
  id?: string;
  /** Keep a copy of every request in `requests` (default true). */
  record?: boolean;
}

/** A model that plays a script, and remembers what it was asked. */
export interface ScriptedModel extends Model {
  /** Every request received, with its messages copied at the time of the call. */
  readonly requests: ModelRequest[];
  /** How many calls were made. */
  readonly calls: number;
}

/**
 * Creates a model that answers each call with the next step of `script` (an array of steps, or
 * a function of the request and the call number from 0). A call past the end of the script
 * throws.
 *
 * @example
 * ```ts
 * import { scriptedModel } from "./scripted_model.ts";
 * import { runAgent } from "../loop/loop.ts";
 * const model = scriptedModel([
 *   { text: ["Hel", "lo"] },
 * ]);
 * const run = runAgent({ model, input: "Hi" });
 * let step = await run.next();
 * while (!step.done) step = await run.next();
 * if (step.value.text !== "Hello" || model.calls !== 1) throw new Error("unexpected");
 * ```
 */
export function scriptedModel(
  script: readonly ScriptedTurn[] | ((request: ModelRequest, call: number) => ScriptedStep),
  options: ScriptedModelOptions = {},
): ScriptedModel {
  const requests: ModelRequest[] = [];
  let calls = 0;
  return {
    provider: options.provider ?? "scripted",
    id: options.id ?? "scripted-model",
    requests,
    get calls() {
      return calls;
    },
    async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
      const call = calls++;
      if (options.record !== false) requests.push({ ...request, messages: [...request.messages] });
      const turn = typeof script === "function" ? script : script[call];
      if (turn === undefined) {
        throw new Error(
          `The scripted model has no step for call ${call + 1}: the script has ${
            (script as readonly ScriptedTurn[]).length
          } steps`,
        );
      }
      const step = typeof turn === "function" ? await turn(request, call) : turn;
      const signal = step.ignoreSignal ? undefined : request.signal;
      const wait = (ms?: number) => ms ? sleep(ms, signal) : undefined;

      await wait(step.delayMs);
      for (const text of _deltas(step.reasoning)) {
        yield { type: "reasoning_delta", text };
        await wait(step.deltaDelayMs);
      }
      for (const text of _deltas(step.text)) {
        yield { type: "text_delta", text };
        await wait(step.deltaDelayMs);
      }
      for (const [index, scripted] of (step.toolCalls ?? []).entries()) {
        const part: ToolCallPart = {
          type: "tool_call",
          id: scripted.id ?? `call_${call + 1}_${index}`,
          name: scripted.name,
          input: scripted.invalidInput === undefined ? scripted.input ?? {} : {},
        };
        if (scripted.invalidInput !== undefined) part.invalidInput = scripted.invalidInput;
        yield { type: "tool_call", call: part };
      }
      if (step.error) throw step.error;
      yield {
        type: "finish",
        reason: step.finishReason ?? (step.toolCalls?.length ? "tool_calls" : "stop"),
        usage: step.usage ?? { inputTokens: 0, outputTokens: 0 },
      };
    },
  };
}

function _deltas(value: string | string[] | undefined): readonly string[] {
  if (value === undefined) return [];
  return typeof value === "string" ? [value] : value;
}
