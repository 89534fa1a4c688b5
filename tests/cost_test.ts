/**
 * What a run costs when prices step up with the size of a request (long-context tiers): each
 * model call is priced by its own request's input tokens, in the loop, in its summaries and in
 * the known models' prices.
 */

import assert from "node:assert/strict";
import { costMeter, costOf, pricesFor } from "../lib/cost.ts";
import type { Model, Pricing } from "../lib/model.ts";
import { lookupModelInfo } from "../lib/providers/models.ts";
import { runAgent } from "../lib/loop/loop.ts";
import { startConversation } from "../lib/conversation/mod.ts";
import type { AgentEvent, RunResult } from "../lib/events.ts";
import type { Message } from "../lib/messages.ts";
import { scriptedModel, type ScriptedStep } from "../lib/testing/scripted_model.ts";

/** $1 in / $2 out, $10 / $20 past 1,000 input tokens of one request. */
const TIERED: Pricing = {
  input: 1,
  output: 2,
  tiers: [{ above: 1_000, input: 10, output: 20 }],
};

/** Compares dollar amounts to a billionth. */
function assertUsd(actual: number | undefined, expected: number, message?: string): void {
  assert.ok(actual !== undefined, message ?? "a cost");
  assert.equal(Math.round(actual * 1e9), Math.round(expected * 1e9), message);
}

/** A scripted model with `pricing`. */
function pricedModel(steps: ScriptedStep[], pricing: Pricing): Model {
  const scripted = scriptedModel(steps);
  return {
    provider: "scripted",
    id: "tiered",
    info: { contextWindow: 1_000_000, maxOutputTokens: 100, pricing },
    stream: (request) => scripted.stream(request),
  };
}

/** Drains a run into its events and result. */
async function drain(
  run: AsyncGenerator<AgentEvent, RunResult>,
): Promise<{ events: AgentEvent[]; result: RunResult }> {
  const events: AgentEvent[] = [];
  let step = await run.next();
  while (!step.done) {
    events.push(step.value);
    step = await run.next();
  }
  return { events, result: step.value };
}

Deno.test("costOf() charges a request past a tier's threshold at the tier's prices, on every token", () => {
  const usage = (inputTokens: number) => ({ inputTokens, outputTokens: 100 });
  assertUsd(costOf(usage(1_000), TIERED), (1_000 * 1 + 100 * 2) / 1e6, "at the threshold: base");
  assertUsd(costOf(usage(1_001), TIERED), (1_001 * 10 + 100 * 20) / 1e6, "past it: the tier");
});

Deno.test("costOf() takes the tier with the highest threshold the request passes, in any order", () => {
  const pricing: Pricing = {
    input: 1,
    output: 1,
    tiers: [{ above: 5_000, input: 3, output: 3 }, { above: 1_000, input: 2, output: 2 }],
  };
  assert.equal(pricesFor(pricing, 999).input, 1);
  assert.equal(pricesFor(pricing, 1_001).input, 2);
  assert.equal(pricesFor(pricing, 5_001).input, 3);
  assert.equal(pricesFor({ input: 1, output: 1, tiers: [] }, 1e9).input, 1);
});

Deno.test("costOf() charges a tier's cache reads and writes at its own cache prices, else at the base ones scaled as its input price is", () => {
  const usage = {
    inputTokens: 3_000,
    outputTokens: 0,
    cacheReadTokens: 1_000,
    cacheWriteTokens: 500,
  };
  const priced: Pricing = {
    input: 3,
    output: 15,
    cacheRead: 0.3,
    cacheWrite: 3.75,
    tiers: [{ above: 2_000, input: 6, output: 22.5, cacheRead: 0.6, cacheWrite: 7.5 }],
  };
  assertUsd(costOf(usage, priced), (1_500 * 6 + 1_000 * 0.6 + 500 * 7.5) / 1e6);
  const plain: Pricing = { ...priced, tiers: [{ above: 2_000, input: 6, output: 22.5 }] };
  // The tier doubles the input price: the cache prices double too.
  assertUsd(
    costOf(usage, plain),
    (1_500 * 6 + 1_000 * 0.6 + 500 * 7.5) / 1e6,
    "cache prices keep their ratio to the input price",
  );
});

Deno.test("costMeter() prices each call by its own usage, never by the sum", async () => {
  const meter = costMeter(TIERED);
  const model = meter.wrap(pricedModel([
    { text: "a", usage: { inputTokens: 800, outputTokens: 10 } },
    { text: "b", usage: { inputTokens: 800, outputTokens: 10 } },
    { text: "c", usage: { inputTokens: 1_200, outputTokens: 10 } },
  ], TIERED));
  for (let i = 0; i < 3; i++) {
    for await (const _ of model.stream({ messages: [], tools: [] })) { /* drain */ }
  }
  assertUsd(meter.take(), (2 * (800 + 20) + (1_200 * 10 + 10 * 20)) / 1e6);
  assert.equal(meter.take(), 0);
});

Deno.test("runAgent() charges each turn by its own request: past the threshold at the tier, under it at base", async () => {
  const model = pricedModel([
    { toolCalls: [{ name: "nothing" }], usage: { inputTokens: 900, outputTokens: 10 } },
    { text: "done", usage: { inputTokens: 1_500, outputTokens: 10 } },
  ], TIERED);
  const { events, result } = await drain(runAgent({ model, input: "go", repeatGuard: false }));
  const turns = events.filter((event) => event.type === "turn_end");
  const first = (900 * 1 + 10 * 2) / 1e6;
  const second = (1_500 * 10 + 10 * 20) / 1e6;
  assertUsd(turns[0].type === "turn_end" ? turns[0].costUsd : undefined, first);
  assertUsd(turns[1].type === "turn_end" ? turns[1].costUsd : undefined, second);
  assertUsd(result.costUsd, first + second);
});

Deno.test("runAgent() charges the summaries and the answer of one turn each by its own request", async () => {
  // Long turns overflow a window of 2,000 tokens: the next request is summarized first.
  const long = "word ".repeat(1_200);
  const messages: Message[] = [
    { role: "user", content: long },
    { role: "assistant", content: [{ type: "text", text: long }] },
    { role: "user", content: long },
    { role: "assistant", content: [{ type: "text", text: "ok" }] },
  ];
  const scripted = scriptedModel((request) =>
    request.system // only the summary requests have a system prompt here
      ? { text: "## Goal\nRead the words", usage: { inputTokens: 900, outputTokens: 10 } }
      : { text: "done", usage: { inputTokens: 600, outputTokens: 10 } }
  );
  const model: Model = {
    provider: "scripted",
    id: "tiered",
    info: { contextWindow: 2_000, maxOutputTokens: 100, pricing: TIERED },
    stream: (request) => scripted.stream(request),
  };
  const { events, result } = await drain(runAgent({ model, messages, input: "go on" }));
  assert.equal(result.status, "success", JSON.stringify(result.error));
  assert.ok(events.some((event) => event.type === "compaction"), "a summary was made");
  const summaries = scripted.requests.filter((request) => request.system).length;
  assert.ok(summaries >= 1 && scripted.requests.length === summaries + 1);
  // Over 1,000 input tokens in all, but each request stays under 1,000: base prices.
  const inputTokens = summaries * 900 + 600;
  assert.ok(inputTokens > 1_000);
  assert.deepEqual(result.usage, { inputTokens, outputTokens: (summaries + 1) * 10 });
  assertUsd(result.costUsd, (inputTokens * 1 + (summaries + 1) * 10 * 2) / 1e6);
});

Deno.test("startConversation().compact() charges each summary call by its own request", async () => {
  const long = "word ".repeat(1_200);
  const scripted = scriptedModel((request) =>
    request.system
      ? { text: "## Goal\nRead the words", usage: { inputTokens: 900, outputTokens: 10 } }
      : { text: long, usage: { inputTokens: 900, outputTokens: 10 } }
  );
  const model: Model = {
    provider: "scripted",
    id: "tiered",
    info: { contextWindow: 2_000, maxOutputTokens: 100, pricing: TIERED },
    stream: (request) => scripted.stream(request),
  };
  const driver = startConversation({ model, runOptions: { compaction: false } });
  for (const message of [long, long]) {
    const run = driver.send(message);
    let step = await run.next();
    while (!step.done) step = await run.next();
  }
  const before = scripted.requests.length;
  const compacted = await driver.compact();
  await driver.close();
  const summaries = scripted.requests.length - before;
  assert.ok(summaries >= 2, `the summary took ${summaries} calls`);
  // Each call stays under 1,000 input tokens, however many there are: base prices.
  assert.equal(compacted?.usage.inputTokens, summaries * 900);
  assertUsd(compacted?.costUsd, summaries * (900 * 1 + 10 * 2) / 1e6);
});

Deno.test("known models carry the long-request prices their providers publish", () => {
  const tiers = (provider: string, model: string) =>
    lookupModelInfo(provider, model, false).pricing?.tiers;
  assert.deepEqual(tiers("gemini", "gemini-2.5-pro"), [
    { above: 200_000, input: 2.5, output: 15, cacheRead: 0.25 },
  ]);
  assert.deepEqual(tiers("gemini", "gemini-3.1-pro-preview"), [
    { above: 200_000, input: 4, output: 18, cacheRead: 0.4 },
  ]);
  assert.deepEqual(tiers("anthropic", "claude-sonnet-4-5-20250929"), [
    { above: 200_000, input: 6, output: 22.5, cacheRead: 0.6, cacheWrite: 7.5 },
  ]);
  assert.deepEqual(tiers("anthropic", "claude-sonnet-4-20250514"), [
    { above: 200_000, input: 6, output: 22.5, cacheRead: 0.6, cacheWrite: 7.5 },
  ]);
  assert.deepEqual(tiers("openai", "gpt-5.4"), [
    { above: 272_000, input: 5, output: 22.5, cacheRead: 0.5 },
  ]);
  assert.deepEqual(tiers("openai", "gpt-5.6-luna"), [
    { above: 272_000, input: 0.4, output: 1.8, cacheRead: 0.04 },
  ]);
  assert.deepEqual(tiers("xai", "grok-4.5"), [
    { above: 200_000, input: 4, output: 12, cacheRead: 1 },
  ]);
  assert.deepEqual(tiers("openrouter", "google/gemini-2.5-pro"), tiers("gemini", "gemini-2.5-pro"));
  // Flat prices stay flat; a local server costs nothing at any size.
  assert.equal(tiers("openai", "gpt-5.4-mini"), undefined);
  assert.equal(tiers("anthropic", "claude-sonnet-4-6"), undefined);
  assert.equal(tiers("gemini", "gemini-2.5-flash"), undefined);
  assert.deepEqual(lookupModelInfo("gemini", "gemini-2.5-pro", true).pricing, {
    input: 0,
    output: 0,
  });
});
