/**
 * The agent loop: input → model → tool calls → results back to the model → … until the model
 * answers. A function over options that streams {@link AgentEvent}s and returns a
 * {@link RunResult}. It holds no state between runs: history goes in and comes out. Each
 * request is kept inside the model's context window by compaction (`lib/compaction`).
 *
 * @module
 */

import { describeError, ModelBehaviorError } from "../errors.ts";
import type { AgentEvent, RunResult } from "../events.ts";
import { announcesAction, repeatGuard } from "./repeat_guard.ts";
import {
  type AssistantMessage,
  type Message,
  textOf,
  toolCallsOf,
  type ToolMessage,
  userMessage,
} from "../messages.ts";
import { callModelInContext, createCompactor } from "../compaction/compact.ts";
import { DEFAULT_MAX_TURNS, NUDGE_MESSAGE, type RunAgentOptions } from "./options.ts";
import type { Model } from "../model.ts";
import { offeredTools } from "./offered_tools.ts";
import type { ToolRunResult } from "../tool_runner.ts";
import { hookedModel } from "../hooks.ts";
import { runTurnTools, toolCallCheck } from "./tool_phase.ts";
import { addUsage, emptyUsage, type Usage } from "../usage.ts";
import { type CostMeter, costMeter } from "../cost.ts";

export {
  DEFAULT_MAX_TURNS,
  DEFAULT_REPEAT_STOP_AT,
  DEFAULT_REPEAT_WARN_AT,
  type MaxTurnsInfo,
  NUDGE_MESSAGE,
  type NudgeOptions,
  type RepeatGuardOptions,
  type RunAgentOptions,
} from "./options.ts";

/**
 * Runs the agent loop, streaming every step as an event and returning the result. Failures
 * (provider errors after retries, a model stuck in a loop) end the run with status `error`;
 * only invalid options throw.
 *
 * @example
 * ```ts
 * import { runAgent } from "./loop.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const run = runAgent({ model: scriptedModel([{ text: "Hello!" }]), input: "Hi" });
 * let step = await run.next();
 * while (!step.done) step = await run.next();
 * if (step.value.text !== "Hello!") throw new Error("unexpected");
 * ```
 */
export function runAgent(options: RunAgentOptions): AsyncGenerator<AgentEvent, RunResult> {
  const onEvent = options.hooks?.onEvent;
  // Without a hook to call, the run's own events, with no step of their own per event.
  return onEvent ? _seen(_run(options), onEvent) : _run(options);
}

/** `run`, each event shown to `onEvent` as it passes. */
async function* _seen(
  run: AsyncGenerator<AgentEvent, RunResult>,
  onEvent: (event: AgentEvent) => void,
): AsyncGenerator<AgentEvent, RunResult> {
  try {
    let step = await run.next();
    while (!step.done) {
      onEvent(step.value);
      yield step.value;
      step = await run.next();
    }
    return step.value;
  } finally {
    await run.return(undefined as never);
  }
}

async function* _run(options: RunAgentOptions): AsyncGenerator<AgentEvent, RunResult> {
  const started = performance.now();
  const { model } = options;
  let limit = options.maxTurns ?? DEFAULT_MAX_TURNS;
  if (!Number.isInteger(limit) || limit < 0) {
    throw new RangeError(`maxTurns must be a whole number ≥ 0, got ${limit}`);
  }
  const tools = offeredTools(options.tools);
  let { registry, definitions } = tools();
  const sessionId = options.sessionId ?? crypto.randomUUID();
  const cwd = options.cwd ?? _cwd();
  const maxNudges = options.nudge === false ? 0 : options.nudge?.max ?? 2;
  const nudgeText = (options.nudge ? options.nudge.message : undefined) ?? NUDGE_MESSAGE;
  const guard = options.repeatGuard === false ? undefined : repeatGuard(options.repeatGuard);
  const pricing = model.info?.pricing;
  // Each call is priced by its own usage: a tier follows the size of one request.
  const meter = pricing ? costMeter(pricing) : undefined;
  const priced = meter ? meter.wrap(model) : model;
  const compactor = createCompactor({
    ...options,
    model: priced,
    compaction: _pricedCompaction(options, priced, meter),
    tools: definitions,
  });
  const hooks = options.hooks ?? {};
  let turn = 0;
  // The messages the model was last sent, compaction and hooks applied: what the tools of its
  // answer may take as seen (ToolContext.history).
  let sent: readonly Message[] = [];
  const called = hookedModel(_sending(priced, (messages) => sent = messages), hooks, () => turn);
  // Aborted when the caller cancels, and when the caller stops reading the stream early. Tied
  // to the caller's signal, which may outlive many runs, by a listener taken off at the end.
  const stop = new AbortController();
  const signal = stop.signal;
  const cancel = () => stop.abort(options.signal!.reason);
  options.signal?.addEventListener("abort", cancel, { once: true });
  if (options.signal?.aborted) cancel();
  const before = toolCallCheck(options, cwd, signal, () => turn);

  const messages: Message[] = [...(options.messages ?? [])];
  const result: RunResult = {
    status: "success",
    text: "",
    messages,
    turns: 0,
    toolCalls: 0,
    usage: emptyUsage(),
    // Beside the tokens, when the model's prices are known.
    ...(pricing ? { costUsd: 0 } : {}),
    durationMs: 0,
    sessionId,
  };
  let nudges = 0;

  try {
    yield {
      type: "start",
      sessionId,
      model: `${model.provider}/${model.id}`,
      tools: [...registry.keys()],
      cwd,
      ...(options.capabilities ? { capabilities: options.capabilities } : {}),
      ...(options.sandbox ? { sandbox: options.sandbox } : {}),
      ...(options.project ? { project: options.project } : {}),
    };
    const input = typeof options.input === "string"
      ? [userMessage(options.input)]
      : options.input ?? [];
    for (const message of input) yield* _push(messages, message);

    while (true) {
      if (signal.aborted) {
        result.status = "aborted";
        break;
      }
      if (limit > 0 && result.turns >= limit) {
        const more = await options.onMaxTurns?.({ turns: result.turns, messages }) ?? 0;
        if (!(more > 0)) {
          result.status = "max_turns";
          break;
        }
        limit += more;
      }
      // What the user typed while the agent worked joins the conversation at a turn boundary.
      for (const message of options.pendingInput?.() ?? []) yield* _push(messages, message);
      turn = ++result.turns;
      yield { type: "turn_start", turn };
      // The tools as they stand now: a list may change during a run.
      ({ registry, definitions } = tools());

      const answer = yield* callModelInContext(
        called,
        {
          system: options.systemPrompt,
          messages,
          tools: definitions,
          maxOutputTokens: options.maxOutputTokens,
          temperature: options.temperature,
          signal,
        },
        compactor,
        options.retry,
      );
      addUsage(result.usage, answer.usage);
      result.finishReason = answer.finishReason;

      if (answer.aborted) {
        // Keep what the model said; drop calls that will never run.
        const content = answer.content.filter((part) => part.type !== "tool_call");
        if (content.length > 0) yield* _push(messages, { role: "assistant", content });
        yield _turnEnd(turn, answer.usage, meter, result);
        result.status = "aborted";
        break;
      }
      const assistant: AssistantMessage = { role: "assistant", content: answer.content };
      yield* _push(messages, assistant);
      await hooks.afterModelCall?.({
        turn,
        message: assistant,
        usage: answer.usage,
        finishReason: answer.finishReason,
      });
      const calls = toolCallsOf(assistant);

      if (calls.length === 0) {
        yield _turnEnd(turn, answer.usage, meter, result);
        // A paused answer (a long server-side step) goes on when the model is called again.
        if (answer.finishReason === "pause") continue;
        const nudge = nudges < maxNudges && registry.size > 0 &&
          answer.finishReason === "stop" && announcesAction(textOf(assistant));
        if (nudge) {
          nudges++;
          yield { type: "notice", kind: "nudge", message: nudgeText };
          yield* _push(messages, userMessage(nudgeText));
          continue;
        }
        const queued = options.pendingInput?.() ?? [];
        if (queued.length === 0) break;
        for (const message of queued) yield* _push(messages, message);
        continue;
      }

      const ran = yield* runTurnTools(calls, {
        guard,
        registry,
        hooks,
        turn,
        run: {
          cwd,
          signal,
          concurrency: options.toolConcurrency,
          timeoutMs: options.toolTimeoutMs,
          maxOutputChars: options.maxToolOutputChars,
          before,
          checks: options.permission?.checks,
          history: sent,
        },
      });
      const results = ran.results;
      if (ran.stopped) {
        result.status = "error";
        result.error = describeError(new ModelBehaviorError(ran.stopped));
      }
      result.toolCalls += calls.length;
      for (const done of results) yield* _push(messages, _toolMessage(done));
      yield _turnEnd(turn, answer.usage, meter, result);
      if (result.status === "error") break;
    }
  } catch (error) {
    result.status = "error";
    result.error = describeError(error);
  } finally {
    options.signal?.removeEventListener("abort", cancel);
    stop.abort();
  }

  result.text = _lastText(messages, options.messages?.length ?? 0);
  if (compactor.state) result.compaction = compactor.state;
  result.durationMs = Math.round(performance.now() - started);
  const { messages: _, ...summary } = result;
  yield { type: "result", ...summary };
  return result;
}

/** The turn_end event, adding the turn's cost (its calls', summaries included) to the run's. */
function _turnEnd(
  turn: number,
  usage: Usage,
  meter: CostMeter | undefined,
  result: RunResult,
): AgentEvent {
  if (!meter) return { type: "turn_end", turn, usage };
  const costUsd = _usd(meter.take());
  result.costUsd = _usd((result.costUsd ?? 0) + costUsd);
  return { type: "turn_end", turn, usage, costUsd };
}

/** The compaction options with a summarizer of its own priced too, at its prices if known. */
function _pricedCompaction(
  options: RunAgentOptions,
  priced: Model,
  meter: CostMeter | undefined,
): RunAgentOptions["compaction"] {
  const compaction = options.compaction;
  if (!meter || !compaction || !compaction.model) return compaction;
  const summarizer = compaction.model;
  const model = summarizer === options.model
    ? priced
    : meter.wrap(summarizer, summarizer.info?.pricing);
  return { ...compaction, model };
}

/** Dollars to a billionth, so that sums carry no float noise (0.0001468, not …0000002). */
function _usd(amount: number): number {
  return Math.round(amount * 1e9) / 1e9;
}

/** `model`, telling `onSend` the messages of each request it gets. */
function _sending(model: Model, onSend: (messages: readonly Message[]) => void): Model {
  return {
    provider: model.provider,
    id: model.id,
    info: model.info,
    stream(request) {
      onSend(request.messages);
      return model.stream(request);
    },
  };
}

function* _push(messages: Message[], message: Message): Generator<AgentEvent> {
  messages.push(message);
  yield { type: "message", message };
}

function _toolMessage(done: ToolRunResult): ToolMessage {
  return {
    role: "tool",
    toolCallId: done.call.id,
    name: done.call.name,
    content: done.output,
    isError: done.isError,
  };
}

/** The text of the last assistant message this run added. */
function _lastText(messages: readonly Message[], from: number): string {
  for (let i = messages.length - 1; i >= from; i--) {
    const message = messages[i];
    if (message.role === "assistant") return textOf(message);
  }
  return "";
}

function _cwd(): string {
  try {
    return Deno.cwd();
  } catch {
    return ".";
  }
}
