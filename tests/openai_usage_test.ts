/**
 * Usage as servers report it, read so that `outputTokens` always counts the reasoning: xAI
 * leaves reasoning out of `completion_tokens`, OpenAI and most others count it in. Which habit a
 * server has is read from its numbers, so the same model reached through a router or a proxy
 * reads the same. The streams are shaped like recordings of the real servers.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { Agent, type Pricing } from "../mod.ts";
import { openaiModel } from "../lib/providers/mod.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { replay } from "./openai_support.ts";
import { collect, eventsOf, FAST_RETRY, recordingTools } from "./run_support.ts";

/** A chunk of xAI's stream for grok-3-mini. */
function grok(rest: Record<string, unknown>): Record<string, unknown> {
  return {
    id: "7327b9f5-1c2f-0a15-3fef-c14a71c460d3",
    object: "chat.completion.chunk",
    created: 1770774058,
    model: "grok-3-mini",
    system_fingerprint: "fp_2a885414fb",
    ...rest,
  };
}

/** xAI's usage chunk: `completion_tokens` without the reasoning, which `total_tokens` holds. */
function grokUsage(prompt: number, completion: number, reasoning: number, cached: number) {
  return grok({
    choices: [],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion + reasoning,
      prompt_tokens_details: {
        text_tokens: prompt,
        audio_tokens: 0,
        image_tokens: 0,
        cached_tokens: cached,
      },
      completion_tokens_details: {
        reasoning_tokens: reasoning,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
      num_sources_used: 0,
      cost_in_usd_ticks: 1466250,
    },
  });
}

/** A recorded grok-3-mini answer: reasoning, a one-word answer, usage after the finish. */
const GROK_TEXT = [
  grok({ choices: [{ index: 0, delta: { reasoning_content: "First", role: "assistant" } }] }),
  grok({ choices: [{ index: 0, delta: { reasoning_content: ", the user said hello." } }] }),
  grok({ choices: [{ index: 0, delta: { content: "Hello" } }] }),
  grok({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }),
  grokUsage(12, 1, 290, 11),
];

/** A recorded grok-3-mini tool call: reasoning, the call sent whole, then usage. */
const GROK_CALL = [
  grok({ choices: [{ index: 0, delta: { reasoning_content: "First", role: "assistant" } }] }),
  grok({ choices: [{ index: 0, delta: { reasoning_content: ", the user wants weather." } }] }),
  grok({
    choices: [{
      index: 0,
      delta: {
        tool_calls: [{
          id: "call_55117580",
          function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          index: 0,
          type: "function",
        }],
      },
    }],
  }),
  grok({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] }),
  grokUsage(291, 26, 196, 290),
];

Deno.test("a recorded xAI stream reads right: output tokens include the reasoning", async () => {
  const run = await replay({ chunks: GROK_TEXT }, { provider: "xai", model: "grok-3-mini" });
  assert.equal(run.reasoning, "First, the user said hello.");
  assert.equal(run.text, "Hello");
  assert.equal(run.finish.reason, "stop");
  assert.deepEqual(run.finish.usage, {
    inputTokens: 12,
    outputTokens: 291,
    cacheReadTokens: 11,
    reasoningTokens: 290,
  });
});

Deno.test("a recorded xAI tool call reads right, with its reasoning counted as output", async () => {
  const run = await replay({ chunks: GROK_CALL }, { provider: "xai", model: "grok-3-mini" });
  assert.deepEqual(run.calls, [
    { type: "tool_call", id: "call_55117580", name: "get_weather", input: { city: "Paris" } },
  ]);
  assert.equal(run.finish.reason, "tool_calls");
  assert.deepEqual(run.finish.usage, {
    inputTokens: 291,
    outputTokens: 222,
    cacheReadTokens: 290,
    reasoningTokens: 196,
  });
});

Deno.test("xAI usage reached through a router or a proxy reads the same, whatever the provider's name", async () => {
  const routed = await replay({ chunks: GROK_TEXT }, {
    provider: "openrouter",
    model: "x-ai/grok-3-mini",
  });
  assert.equal(routed.finish.usage.outputTokens, 291);
  // A proxy that drops total_tokens: reasoning larger than the completion cannot be part of it.
  const proxied = await replay({
    chunks: [
      ...GROK_TEXT.slice(0, 4),
      grok({
        choices: [],
        usage: {
          prompt_tokens: 40,
          completion_tokens: 2,
          completion_tokens_details: { reasoning_tokens: 340 },
        },
      }),
    ],
  });
  assert.deepEqual(proxied.finish.usage, {
    inputTokens: 40,
    outputTokens: 342,
    reasoningTokens: 340,
  });
});

/** A chunk of OpenAI's stream for o4-mini over Chat Completions. */
function o4(rest: Record<string, unknown>): Record<string, unknown> {
  return {
    id: "chatcmpl-C1qAbUz1OqFYw5sLSpRBq1V8uHM4g",
    object: "chat.completion.chunk",
    created: 1754400000,
    model: "o4-mini-2025-04-16",
    service_tier: "default",
    system_fingerprint: null,
    ...rest,
  };
}

Deno.test("a recorded OpenAI stream reads right: completion tokens that hold the reasoning stay as they are", async () => {
  const run = await replay({
    chunks: [
      o4({
        choices: [{
          index: 0,
          delta: { role: "assistant", content: "", refusal: null },
          finish_reason: null,
        }],
        obfuscation: "eK4d",
      }),
      o4({ choices: [{ index: 0, delta: { content: "4" }, finish_reason: null }] }),
      o4({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }], obfuscation: "Zx" }),
      o4({
        choices: [],
        usage: {
          prompt_tokens: 13,
          completion_tokens: 211,
          total_tokens: 224,
          prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
          completion_tokens_details: {
            reasoning_tokens: 192,
            audio_tokens: 0,
            accepted_prediction_tokens: 0,
            rejected_prediction_tokens: 0,
          },
        },
      }),
    ],
  }, { provider: "openai", model: "o4-mini" });
  assert.equal(run.text, "4");
  assert.equal(run.finish.reason, "stop");
  assert.deepEqual(run.finish.usage, {
    inputTokens: 13,
    outputTokens: 211,
    reasoningTokens: 192,
  });
});

/** grok-3-mini's prices in US dollars per million tokens. */
const GROK_PRICES: Pricing = { input: 0.3, output: 0.5, cacheRead: 0.075 };

Deno.test("an xAI run's cost counts the reasoning tokens at the output price", async () => {
  await using server = startMockOpenAIServer({
    replies: [{ chunks: GROK_CALL }, { chunks: GROK_TEXT }],
  });
  const model = openaiModel({
    model: "grok-3-mini",
    provider: "xai",
    baseURL: server.url,
    apiKey: "sk-test",
    info: { contextWindow: 131_072, maxOutputTokens: 131_072, pricing: GROK_PRICES },
  });
  const { tools } = recordingTools();
  const agent = new Agent({ model, tools, retry: FAST_RETRY });
  const { events, result } = await collect(agent.stream("Weather in Paris?"));
  assert.equal(result.status, "success", result.error?.message);
  assert.equal(result.text, "Hello");
  assert.deepEqual(result.usage, {
    inputTokens: 303,
    outputTokens: 513,
    cacheReadTokens: 301,
    reasoningTokens: 486,
  });
  // Turn 1: 1 fresh input, 290 cached, 222 output; turn 2: 1 fresh, 11 cached, 291 output.
  const expected = [
    (1 * 0.3 + 290 * 0.075 + 222 * 0.5) / 1e6,
    (1 * 0.3 + 11 * 0.075 + 291 * 0.5) / 1e6,
  ];
  const turns = eventsOf(events, "turn_end").map((event) => event.costUsd ?? NaN);
  assert.equal(turns.length, 2);
  for (const [i, cost] of turns.entries()) {
    assert.ok(Math.abs(cost - expected[i]) < 1e-9, `${cost}`);
  }
  assert.ok(Math.abs((result.costUsd ?? NaN) - (expected[0] + expected[1])) < 1e-9);
});
