/**
 * Which run loop a message belongs to: the one it names, an active one it continues, or a new
 * one. A cheap model call judges continuation, with a structured answer and a confidence
 * threshold; when no model answer is usable, a deterministic rule decides.
 *
 * @module
 */

import { callModel } from "../model_call.ts";
import type { Model } from "../model.ts";
import type { RunLoop } from "../memory/types.ts";
import type { Usage } from "../usage.ts";

/** Where a message goes. */
export interface RouteDecision {
  /** Continue an active run loop, or start a new one. */
  action: "continue" | "new";
  /** The run loop to continue. */
  runLoopId?: string;
  /** How sure the model was (absent when the deterministic rule decided). */
  confidence?: number;
  /** Why, in words. */
  reason: string;
  /** Tokens the model's judgement used, when a model answered (its answer taken or not). */
  usage?: Usage;
}

/** Options of {@link routeMessage}. */
export interface RouteOptions {
  /** The model that judges; none: the deterministic rule decides. */
  model?: Model;
  /** The least confidence taken from the model (default 0.6). */
  threshold?: number;
  /** Cancels the model call. */
  signal?: AbortSignal;
}

const WORD = /[\p{L}\p{N}_]+/gu;
const STOP = new Set(
  "a also an and are as at be but by can could do does for from had has have how i if in into is it its me my of on or our please should so than that the then there these this those to up us was we were what when where which who why will with would you your"
    .split(" "),
);
const FOLLOW_UP =
  /^(and|also|now|then|next|ok(ay)?|great|thanks|but|what about|how about|same|again|continue|go on|it|that|this|those|them|fix it|try)\b/i;

/**
 * Routes a message among the active run loops.
 *
 * @example
 * ```ts
 * import { routeMessage } from "./router.ts";
 * const active = [{
 *   id: "rl1", goal: "Fix the login bug in auth.ts", status: "active" as const,
 *   iterations: [], createdAt: "2026-01-01T00:00:00Z",
 * }];
 * const decision = await routeMessage("also add a test for the login bug", active);
 * if (decision.action !== "continue" || decision.runLoopId !== "rl1") throw new Error(decision.reason);
 * ```
 */
export async function routeMessage(
  message: string,
  active: readonly RunLoop[],
  options: RouteOptions = {},
): Promise<RouteDecision> {
  if (active.length === 0) return { action: "new", reason: "no run loop is active" };
  if (options.model) {
    const { judged, usage } = await _judge(message, active, options).catch(() => ({
      judged: undefined,
      usage: undefined,
    }));
    const spent = usage ? { usage } : {};
    const threshold = options.threshold ?? 0.6;
    if (judged && judged.confidence >= threshold) return { ...judged, ...spent };
    const fallback = fallbackRoute(message, active);
    const why = judged
      ? `the model was unsure (${judged.confidence.toFixed(2)} < ${threshold})`
      : "the model gave no usable answer";
    return { ...fallback, reason: `${fallback.reason}; ${why}`, ...spent };
  }
  return fallbackRoute(message, active);
}

/**
 * The deterministic rule: a message that reads like a follow-up, or shares enough words with
 * an active run loop's goal and last answer, continues the best-matching loop; anything else
 * starts a new one.
 *
 * @example
 * ```ts
 * import { fallbackRoute } from "./router.ts";
 * const loop = { id: "a", goal: "Write the release notes", status: "active" as const, iterations: [], createdAt: "" };
 * if (fallbackRoute("Translate the manual into French", [loop]).action !== "new") throw new Error("unexpected");
 * ```
 */
export function fallbackRoute(message: string, active: readonly RunLoop[]): RouteDecision {
  const words = _words(message);
  let best: { loop: RunLoop; score: number } | undefined;
  for (const loop of active) {
    const last = loop.iterations.at(-1);
    const known = _words(
      `${loop.goal} ${last?.userMessage ?? ""} ${last?.response.slice(0, 2_000) ?? ""}`,
    );
    const shared = [...words].filter((word) => known.has(word)).length;
    const score = words.size === 0 ? 0 : shared / words.size;
    if (!best || score > best.score) best = { loop, score };
  }
  const latest = active.reduce((a, b) => (a.createdAt >= b.createdAt ? a : b));
  if (best && best.score >= 0.3) {
    return {
      action: "continue",
      runLoopId: best.loop.id,
      reason: `it shares words with "${best.loop.goal}"`,
    };
  }
  if (FOLLOW_UP.test(message.trim())) {
    return { action: "continue", runLoopId: latest.id, reason: "it reads like a follow-up" };
  }
  return { action: "new", reason: "it shares too little with the active run loops" };
}

/**
 * Asks the model; gives its decision (none when the answer cannot be used) and the tokens the
 * call used.
 */
async function _judge(
  message: string,
  active: readonly RunLoop[],
  options: RouteOptions,
): Promise<{ judged?: RouteDecision & { confidence: number }; usage: Usage }> {
  const loops = active.map((loop) => {
    const last = loop.iterations.at(-1)?.response.slice(0, 300).replace(/\s+/g, " ") ?? "";
    return `- id: ${loop.id}\n  goal: ${loop.goal.slice(0, 300)}\n  last answer: ${last}`;
  }).join("\n");
  const prompt = `Active tasks:\n${loops}\n\nNew message:\n${message.slice(0, 2_000)}\n\n` +
    `Does the new message continue one of the active tasks, or start a new task? Answer with ` +
    `one JSON object and nothing else: {"decision": "continue" | "new", "runLoopId": ` +
    `"<id when continuing>", "confidence": <0 to 1>, "reason": "<a few words>"}`;
  const call = callModel(options.model!, {
    system: "You route messages to tasks. You answer only with JSON.",
    messages: [{ role: "user", content: prompt }],
    tools: [],
    maxOutputTokens: 200,
    signal: options.signal ?? new AbortController().signal,
  }, { maxRetries: 1, initialDelayMs: 200 });
  let step = await call.next();
  while (!step.done) step = await call.next();
  const { usage } = step.value;
  const text = step.value.content.map((part) => part.type === "text" ? part.text : "").join("");
  return { judged: _decision(text, active), usage };
}

/** The decision in the model's answer, or undefined when it cannot be used. */
function _decision(
  text: string,
  active: readonly RunLoop[],
): (RouteDecision & { confidence: number }) | undefined {
  let answer: Record<string, unknown>;
  try {
    answer = JSON.parse(/\{[\s\S]*\}/.exec(text)?.[0] ?? "null") ?? {};
  } catch {
    return undefined;
  }
  const confidence = Number(answer.confidence);
  if (!Number.isFinite(confidence)) return undefined;
  const reason = typeof answer.reason === "string" ? answer.reason : "the model judged so";
  if (answer.decision === "new") return { action: "new", confidence, reason };
  const loop = active.find((candidate) => candidate.id === answer.runLoopId);
  if (answer.decision !== "continue" || !loop) return undefined;
  return { action: "continue", runLoopId: loop.id, confidence, reason };
}

function _words(text: string): Set<string> {
  const words = new Set<string>();
  for (const [word] of text.toLowerCase().matchAll(WORD)) {
    if (word.length > 2 && !STOP.has(word)) words.add(word.replace(/(ing|ed|es|s)$/, ""));
  }
  return words;
}
