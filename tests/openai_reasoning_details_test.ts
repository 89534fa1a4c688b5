/**
 * OpenRouter's `reasoning_details`: kept on the reasoning part with the model's origin, merged
 * per piece, and sent back unchanged on the next turn, to that same model only. And a tool
 * call's provider data goes back only when Chat Completions made it or this model did. The
 * streams are shaped like recordings of OpenRouter's.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { Agent, type Message, userMessage } from "../mod.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { replay } from "./openai_support.ts";
import { collect, deltaText, FAST_RETRY, recordingTools } from "./run_support.ts";

/** A chunk of OpenRouter's stream for `model`. */
function routed(model: string, delta: Record<string, unknown>, finish: string | null = null) {
  return {
    id: "gen-1761234567-AbCdEfGhIjKlMnOp",
    provider: model.startsWith("google/") ? "Google" : "Anthropic",
    model,
    object: "chat.completion.chunk",
    created: 1761234567,
    choices: [{
      index: 0,
      delta,
      finish_reason: finish,
      native_finish_reason: finish,
      logprobs: null,
    }],
  };
}

/** OpenRouter's usage chunk. */
function routedUsage(model: string) {
  return {
    ...routed(model, {}),
    choices: [],
    usage: {
      prompt_tokens: 120,
      completion_tokens: 48,
      total_tokens: 168,
      cost: 0.00108,
      is_byok: false,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 30 },
    },
  };
}

const CLAUDE = "anthropic/claude-sonnet-4.5";
const SIGNATURE = "ErUBCkYIBxgCKkBXqM4bLh7c9Zt0pQ2dvTQ+8xEwYBCzVgRjnKoQ==";

/** Claude behind OpenRouter: reasoning text in three deltas, the signature in the last, a call. */
const CLAUDE_CALL = [
  routed(CLAUDE, {
    role: "assistant",
    content: "",
    reasoning: "The user wants ",
    reasoning_details: [{
      type: "reasoning.text",
      text: "The user wants ",
      format: "anthropic-claude-v1",
      index: 0,
    }],
  }),
  routed(CLAUDE, {
    content: "",
    reasoning: "the weather.",
    reasoning_details: [{
      type: "reasoning.text",
      text: "the weather.",
      format: "anthropic-claude-v1",
      index: 0,
    }],
  }),
  routed(CLAUDE, {
    content: "",
    reasoning_details: [{
      type: "reasoning.text",
      text: "",
      signature: SIGNATURE,
      format: "anthropic-claude-v1",
      index: 0,
    }],
  }),
  routed(CLAUDE, {
    content: "",
    tool_calls: [{
      index: 0,
      id: "toolu_01A09q90qw90lq917835lq9",
      type: "function",
      function: { name: "get_weather", arguments: "" },
    }],
  }),
  routed(CLAUDE, { content: "", tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
  routed(CLAUDE, { content: "", tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
  routed(CLAUDE, { content: "" }, "tool_calls"),
  routedUsage(CLAUDE),
];

/** The one piece the three deltas make. */
const CLAUDE_DETAILS = [{
  type: "reasoning.text",
  text: "The user wants the weather.",
  signature: SIGNATURE,
  format: "anthropic-claude-v1",
  index: 0,
}];

Deno.test("a recorded OpenRouter stream reads right: reasoning_details kept on the reasoning, merged per piece", async () => {
  const run = await replay({ chunks: CLAUDE_CALL }, { provider: "openrouter", model: CLAUDE });
  assert.equal(run.reasoning, "The user wants the weather.", "shown once, not twice");
  assert.deepEqual(run.events.filter((event) => event.type === "reasoning_end"), [{
    type: "reasoning_end",
    origin: `openai-chat:openrouter:${CLAUDE}`,
    extra: { reasoning_details: CLAUDE_DETAILS },
  }]);
  assert.deepEqual(run.calls.map(({ id, name, input }) => ({ id, name, input })), [
    { id: "toolu_01A09q90qw90lq917835lq9", name: "get_weather", input: { city: "Paris" } },
  ]);
  assert.equal(run.finish.reason, "tool_calls");
  assert.deepEqual(run.finish.usage, { inputTokens: 120, outputTokens: 48, reasoningTokens: 30 });
});

Deno.test("agent: OpenRouter's reasoning_details go back unchanged on the next turn", async () => {
  await using server = startMockOpenAIServer({
    replies: [{ chunks: CLAUDE_CALL }, { text: "22°C in Paris." }],
  });
  const agent = new Agent({
    model: `openrouter/${CLAUDE}`,
    baseURL: server.url,
    apiKey: "sk-test",
    tools: recordingTools().tools,
    retry: FAST_RETRY,
  });
  const { events, result } = await collect(agent.stream("Weather in Paris?"));
  assert.equal(result.status, "success", result.error?.message);
  assert.equal(deltaText(events, "reasoning_delta"), "The user wants the weather.");
  const first = result.messages.find((message) => message.role === "assistant");
  assert.deepEqual(first?.role === "assistant" && first.content[0], {
    type: "reasoning",
    text: "The user wants the weather.",
    origin: `openai-chat:openrouter:${CLAUDE}`,
    extra: { reasoning_details: CLAUDE_DETAILS },
  });
  const sent = (server.requests[1].body.messages as Record<string, unknown>[])
    .find((message) => message.role === "assistant");
  assert.deepEqual(sent?.reasoning_details, CLAUDE_DETAILS);
  assert.equal(sent?.content, null);
  assert.equal(result.text, "22°C in Paris.");
});

const GEMINI = "google/gemini-2.5-pro";

Deno.test("a recorded OpenRouter Gemini stream reads right: a summary and encrypted reasoning after the call", async () => {
  const encrypted = {
    type: "reasoning.encrypted",
    data: "CiQB0e2Kb7Vx3oHJq0Zy1k5c9Qm2ZB3uG1V8vKpq",
    id: "tool_get_weather_Y4l7ZkTnQ3",
    format: "google-gemini-v1",
    index: 1,
  };
  const run = await replay({
    chunks: [
      routed(GEMINI, {
        role: "assistant",
        content: "",
        reasoning: "**Checking the weather**",
        reasoning_details: [{
          type: "reasoning.summary",
          summary: "**Checking the weather**",
          format: "google-gemini-v1",
          index: 0,
        }],
      }),
      routed(GEMINI, {
        content: "",
        reasoning: "\nI will call the tool.",
        reasoning_details: [{
          type: "reasoning.summary",
          summary: "\nI will call the tool.",
          format: "google-gemini-v1",
          index: 0,
        }],
      }),
      routed(GEMINI, {
        content: null,
        tool_calls: [{
          index: 0,
          id: "tool_get_weather_Y4l7ZkTnQ3",
          type: "function",
          function: { name: "get_weather", arguments: '{"city":"Paris"}' },
        }],
      }),
      routed(GEMINI, { content: null, reasoning_details: [encrypted] }),
      routed(GEMINI, { content: "" }, "tool_calls"),
      routedUsage(GEMINI),
    ],
  }, { provider: "openrouter", model: GEMINI });
  assert.equal(run.reasoning, "**Checking the weather**\nI will call the tool.");
  const end = run.events.find((event) => event.type === "reasoning_end");
  assert.deepEqual(end?.type === "reasoning_end" && end.extra, {
    reasoning_details: [
      {
        type: "reasoning.summary",
        summary: "**Checking the weather**\nI will call the tool.",
        format: "google-gemini-v1",
        index: 0,
      },
      encrypted,
    ],
  });
  assert.equal(run.calls[0].name, "get_weather");
  assert.equal(run.finish.reason, "tool_calls");
});

/** A conversation whose first answer came from Claude behind OpenRouter. */
function history(): Message[] {
  return [
    userMessage("Weather in Paris?"),
    {
      role: "assistant",
      content: [
        {
          type: "reasoning",
          text: "The user wants the weather.",
          origin: `openai-chat:openrouter:${CLAUDE}`,
          extra: { reasoning_details: CLAUDE_DETAILS },
        },
        { type: "text", text: "Checking." },
        // Made by the Responses API: its item id means nothing to Chat Completions.
        {
          type: "tool_call",
          id: "call_r",
          name: "get_weather",
          input: { city: "Paris" },
          origin: "openai-responses:openai:gpt-5",
          extra: { itemId: "fc_68a1b2c3" },
        },
        // Chat Completions' own (Gemini's thought signature): no origin.
        {
          type: "tool_call",
          id: "call_g",
          name: "get_weather",
          input: { city: "Rome" },
          extra: { extra_content: { google: { thought_signature: "CvQBAdHtim8=" } } },
        },
        // Made by this very model.
        {
          type: "tool_call",
          id: "call_o",
          name: "get_weather",
          input: { city: "Oslo" },
          origin: `openai-chat:openrouter:${CLAUDE}`,
          extra: { extra_content: { routed: true } },
        },
      ],
    },
    { role: "tool", toolCallId: "call_r", name: "get_weather", content: "22°C", isError: false },
    { role: "tool", toolCallId: "call_g", name: "get_weather", content: "25°C", isError: false },
    { role: "tool", toolCallId: "call_o", name: "get_weather", content: "9°C", isError: false },
  ];
}

/** The assistant message `model` at `provider` sends for {@link history}. */
async function sentAssistant(provider: string, model: string): Promise<Record<string, unknown>> {
  const run = await replay({ text: "Done." }, { provider, model, messages: history() });
  const messages = run.requests[0].body.messages as Record<string, unknown>[];
  return messages.find((message) => message.role === "assistant")!;
}

Deno.test("openai provider: reasoning_details go back only to the model they came from", async () => {
  assert.deepEqual((await sentAssistant("openrouter", CLAUDE)).reasoning_details, CLAUDE_DETAILS);
  assert.equal((await sentAssistant("openrouter", GEMINI)).reasoning_details, undefined);
  assert.equal((await sentAssistant("anthropic-proxy", CLAUDE)).reasoning_details, undefined);
});

Deno.test("openai provider: a tool call's provider data goes back only when Chat Completions or this model made it", async () => {
  const sent = await sentAssistant("openrouter", CLAUDE);
  assert.deepEqual(sent.tool_calls, [
    {
      id: "call_r",
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Paris"}' },
    },
    {
      id: "call_g",
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Rome"}' },
      extra_content: { google: { thought_signature: "CvQBAdHtim8=" } },
    },
    {
      id: "call_o",
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Oslo"}' },
      extra_content: { routed: true },
    },
  ]);
  assert.equal(sent.content, "Checking.");
});

Deno.test("agent: a signature that comes after the answer's text began still goes back with its reasoning", async () => {
  const detail = (fields: Record<string, unknown>) => ({
    type: "reasoning.text",
    format: "anthropic-claude-v1",
    index: 0,
    ...fields,
  });
  await using server = startMockOpenAIServer({
    replies: [
      {
        chunks: [
          routed(CLAUDE, {
            role: "assistant",
            content: "",
            reasoning: "Say hi.",
            reasoning_details: [detail({ text: "Say hi." })],
          }),
          routed(CLAUDE, { content: "Hi!" }),
          routed(CLAUDE, { content: "", reasoning_details: [detail({ signature: SIGNATURE })] }),
          routed(CLAUDE, { content: "" }, "stop"),
          routedUsage(CLAUDE),
        ],
      },
      { text: "Bye!" },
    ],
  });
  const agent = new Agent({
    model: `openrouter/${CLAUDE}`,
    baseURL: server.url,
    apiKey: "sk-test",
  });
  const first = await agent.run("Hello");
  assert.equal(first.text, "Hi!");
  await agent.run("Bye", { messages: first.messages });
  const sent = (server.requests[1].body.messages as Record<string, unknown>[])
    .find((message) => message.role === "assistant");
  assert.deepEqual(sent, {
    role: "assistant",
    content: "Hi!",
    reasoning_details: [detail({ text: "Say hi.", signature: SIGNATURE })],
  });
});

/** A chunk of a LiteLLM proxy's stream for Claude with extended thinking. */
function litellm(delta: Record<string, unknown>, finish: string | null = null) {
  return {
    id: "chatcmpl-8d2d9f0a-4c1e-4d59-9b1f-3c0c2f5e7a11",
    created: 1761234567,
    model: "claude-sonnet-4-5-20250929",
    object: "chat.completion.chunk",
    system_fingerprint: null,
    choices: [{ index: 0, delta, finish_reason: finish }],
    provider_specific_fields: {},
  };
}

/** LiteLLM's thinking block delta, as it sends one beside `reasoning_content`. */
function thought(thinking: string, signature: string | null = null) {
  const blocks = [{ type: "thinking", thinking, signature }];
  return {
    reasoning_content: thinking,
    thinking_blocks: blocks,
    provider_specific_fields: { thinking_blocks: blocks },
    content: "",
  };
}

Deno.test("a recorded LiteLLM stream reads right: Claude's thinking_blocks go back whole, signed, to the same model", async () => {
  await using server = startMockOpenAIServer({
    replies: [
      {
        chunks: [
          litellm({ role: "assistant", ...thought("The user wants ") }),
          litellm(thought("the weather.")),
          litellm(thought("", SIGNATURE)),
          litellm({
            content: "",
            tool_calls: [{
              index: 1,
              id: "toolu_01A09q90qw90lq917835lq9",
              type: "function",
              function: { name: "get_weather", arguments: '{"city": "Paris"}' },
            }],
          }),
          litellm({}, "tool_calls"),
          {
            ...litellm({}),
            choices: [],
            usage: { prompt_tokens: 563, completion_tokens: 87, total_tokens: 650 },
          },
        ],
      },
      { text: "22°C in Paris." },
    ],
  });
  const agent = new Agent({
    model: "openai/claude-sonnet-4-5",
    baseURL: server.url,
    apiKey: "sk-test",
    tools: recordingTools().tools,
    retry: FAST_RETRY,
  });
  const { events, result } = await collect(agent.stream("Weather in Paris?"));
  assert.equal(result.status, "success", result.error?.message);
  assert.equal(deltaText(events, "reasoning_delta"), "The user wants the weather.");
  const sent = (server.requests[1].body.messages as Record<string, unknown>[])
    .find((message) => message.role === "assistant");
  assert.deepEqual(sent?.thinking_blocks, [
    { type: "thinking", thinking: "The user wants the weather.", signature: SIGNATURE },
  ]);
  assert.equal(sent?.reasoning_content, "The user wants the weather.");
});
