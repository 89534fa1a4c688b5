/**
 * Running one node of a graph: a code step, or an LLM node that runs the agent loop over the
 * current context; each tried again after a failure as its retry policy says. Also the judge
 * of conditions written in words.
 *
 * @module
 */

import { sleep } from "../async.ts";
import type { AgentEvent } from "../events.ts";
import { runAgent } from "../loop/loop.ts";
import type { Message } from "../messages.ts";
import { callModel } from "../model_call.ts";
import type { Model } from "../model.ts";
import type { GraphState, NodeDefinition } from "./types.ts";

/** What running a node gave. */
export interface NodeOutcome {
  /** The state after the node. */
  state: GraphState;
  /** Attempts made. */
  attempts: number;
}

/** The node was cancelled (its execution was aborted). */
export class NodeCancelled extends Error {}

/**
 * Runs a node, trying again after a failure as its retry policy says. Agent events of an LLM
 * node go to `emit`.
 *
 * @example
 * ```ts
 * import { runNode } from "./nodes.ts";
 * let calls = 0;
 * const node = { kind: "code" as const, key: "flaky", retry: { maxAttempts: 2 }, run: () => {
 *   if (++calls === 1) throw new Error("once");
 *   return { output: "fine" };
 * } };
 * const state = { history: [], messages: [], data: {} };
 * const { state: after, attempts } = await runNode(node, state, {
 *   signal: new AbortController().signal, executionId: "e", emit: () => {},
 * });
 * if (after.output !== "fine" || attempts !== 2) throw new Error("unexpected");
 * ```
 */
export async function runNode(
  node: NodeDefinition,
  state: GraphState,
  options: { signal: AbortSignal; executionId: string; emit(event: AgentEvent): void },
): Promise<NodeOutcome> {
  const maxAttempts = Math.max(1, node.retry?.maxAttempts ?? 1);
  for (let attempt = 1;; attempt++) {
    try {
      const next = node.kind === "code"
        ? await _code(node, state, options)
        : await _llm(node, state, options);
      return { state: next, attempts: attempt };
    } catch (error) {
      if (options.signal.aborted) throw new NodeCancelled("the execution was aborted");
      if (attempt >= maxAttempts) throw error;
      const wait = (node.retry?.backoffMs ?? 0) * 2 ** (attempt - 1);
      if (wait > 0) await sleep(wait, options.signal).catch(() => {});
    }
  }
}

async function _code(
  node: Extract<NodeDefinition, { kind: "code" }>,
  state: GraphState,
  options: { signal: AbortSignal; executionId: string },
): Promise<GraphState> {
  const change = await node.run(state, {
    node: node.key,
    signal: options.signal,
    executionId: options.executionId,
  });
  return change ? { ...state, ...change } : state;
}

async function _llm(
  node: Extract<NodeDefinition, { kind: "llm" }>,
  state: GraphState,
  options: { signal: AbortSignal; emit(event: AgentEvent): void },
): Promise<GraphState> {
  // The node takes its turn with its task stated, unless the context already ends with one.
  const input: Message[] = state.messages.at(-1)?.role === "user"
    ? []
    : [{ role: "user", content: `[${node.key}] ${node.description}` }];
  const run = runAgent({
    model: node.model,
    tools: node.tools,
    systemPrompt: node.systemPrompt,
    messages: state.messages,
    input,
    signal: options.signal,
  });
  let step = await run.next();
  while (!step.done) {
    options.emit(step.value);
    step = await run.next();
  }
  const result = step.value;
  if (result.status === "aborted") throw new NodeCancelled("the execution was aborted");
  if (result.status === "error") {
    throw new Error(`LLM node "${node.key}" failed: ${result.error?.message ?? "unknown error"}`);
  }
  const added = result.messages.slice(state.messages.length);
  return {
    ...state,
    history: [...state.history, ...added],
    messages: result.messages,
    output: result.text,
  };
}

/**
 * Asks `model` whether a condition written in words holds, from the recent context: a
 * structured yes/no answer with a reason. An answer that cannot be read counts as no.
 *
 * @example
 * ```ts
 * import { judgeCondition } from "./nodes.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const model = scriptedModel([{ text: '{"answer": "yes", "reason": "the tests pass"}' }]);
 * const state = { history: [], messages: [{ role: "user" as const, content: "All 12 tests pass." }], data: {} };
 * const verdict = await judgeCondition(model, "the tests pass", state, new AbortController().signal);
 * if (!verdict.holds || verdict.reason !== "the tests pass") throw new Error("unexpected");
 * ```
 */
export async function judgeCondition(
  model: Model,
  condition: string,
  state: Readonly<GraphState>,
  signal: AbortSignal,
): Promise<{ holds: boolean; reason: string }> {
  const recent = state.messages.slice(-8).map((message) => {
    const text = message.role === "user"
      ? message.content
      : message.role === "tool"
      ? `[${message.name} result] ${message.content}`
      : message.content.map((part) =>
        part.type === "text" ? part.text : part.type === "tool_call" ? `[calls ${part.name}]` : ""
      ).join(" ");
    return `${message.role}: ${text.slice(0, 2_000)}`;
  }).join("\n");
  const call = callModel(model, {
    system:
      "You judge whether a statement holds, from the conversation given. You answer only with JSON.",
    messages: [{
      role: "user",
      content:
        `Conversation:\n${recent || "(empty)"}\n\nLast output:\n${
          state.output?.slice(0, 4_000) ?? "(none)"
        }\n\n` +
        `Statement: ${condition}\n\nDoes the statement hold? Answer with one JSON object: ` +
        `{"answer": "yes" | "no", "reason": "<a few words>"}`,
    }],
    tools: [],
    maxOutputTokens: 200,
    signal,
  }, { maxRetries: 2, initialDelayMs: 200 });
  let step = await call.next();
  while (!step.done) step = await call.next();
  const text = step.value.content.map((part) => part.type === "text" ? part.text : "").join("");
  try {
    const answer = JSON.parse(/\{[\s\S]*\}/.exec(text)?.[0] ?? "");
    const reason = typeof answer.reason === "string" ? answer.reason : "the model judged so";
    return { holds: String(answer.answer).toLowerCase() === "yes", reason };
  } catch {
    return { holds: false, reason: `the model's answer could not be read: ${text.slice(0, 120)}` };
  }
}
