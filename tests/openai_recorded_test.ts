/**
 * Streams shaped like recordings of real OpenAI-compatible servers (the fixtures other
 * open-source clients keep of them), each read for its text, reasoning, tool calls, finish and
 * usage: OpenAI, Azure, DeepSeek, Groq, Mistral, Alibaba's Qwen, Perplexity, Cerebras and
 * Moonshot.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { replay } from "./openai_support.ts";

type Fields = Record<string, unknown>;

/** Chunks of one recorded stream: `base` fields on each, one choice at index 0. */
function recorded(base: Fields) {
  const chunk = (delta: Fields | undefined, finish: string | null = null, rest: Fields = {}) => ({
    ...base,
    choices: [{ index: 0, ...(delta ? { delta } : {}), finish_reason: finish, logprobs: null }],
    ...rest,
  });
  const usage = (usage: Fields, rest: Fields = {}) => ({ ...base, choices: [], usage, ...rest });
  return { chunk, usage };
}

Deno.test("a recorded OpenAI stream reads right: text, then a call whose arguments come in pieces", async () => {
  const { chunk, usage } = recorded({
    id: "chatcmpl-E6yvi7cuDcHZEHTMxcLDyf3CMKIO2",
    object: "chat.completion.chunk",
    created: 1785332890,
    model: "gpt-4o-2024-08-06",
    service_tier: "default",
    system_fingerprint: "fp_627de6ad19",
  });
  const run = await replay({
    chunks: [
      chunk({ role: "assistant", content: "", refusal: null }, null, { obfuscation: "dOvUml6" }),
      chunk({ content: "Let me " }, null, { obfuscation: "kxfWAnRUqJ" }),
      chunk({ content: "check." }, null, { obfuscation: "rSSOWQoS" }),
      chunk({
        tool_calls: [{
          index: 0,
          id: "call_NZa7xqfefoaMI2YYHowVXVlU",
          type: "function",
          function: { name: "get_weather", arguments: "" },
        }],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city"' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: ':"Paris"}' } }] }),
      chunk({}, "tool_calls", { obfuscation: "c" }),
      usage({
        prompt_tokens: 58,
        completion_tokens: 12,
        total_tokens: 70,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
      }, { obfuscation: "C23hubYEX75JwXK" }),
    ],
  }, { provider: "openai", model: "gpt-4o" });
  assert.equal(run.text, "Let me check.");
  assert.deepEqual(run.calls, [{
    type: "tool_call",
    id: "call_NZa7xqfefoaMI2YYHowVXVlU",
    name: "get_weather",
    input: { city: "Paris" },
  }]);
  assert.equal(run.finish.reason, "tool_calls");
  assert.deepEqual(run.finish.usage, { inputTokens: 58, outputTokens: 12 });
});

const SAFE = { filtered: false, severity: "safe" };
const AZURE_FILTERS = { hate: SAFE, self_harm: SAFE, sexual: SAFE, violence: SAFE };

/** Azure OpenAI: prompt filter results first, filter results on every choice. */
const azure = recorded({
  created: 1762317021,
  id: "chatcmpl-CYb1OdVhgG6m5Y9fUuEvXKx2nWqj8",
  model: "gpt-4o-2024-11-20",
  object: "chat.completion.chunk",
  system_fingerprint: "fp_ee1d74bde0",
});

/** Azure's first chunk: no choices, the prompt's filter results. */
const AZURE_FIRST = {
  choices: [],
  created: 0,
  id: "",
  model: "",
  object: "",
  prompt_filter_results: [{
    prompt_index: 0,
    content_filter_results: { ...AZURE_FILTERS, jailbreak: { filtered: false, detected: false } },
  }],
};

Deno.test("a recorded Azure stream reads right: a first chunk of prompt filter results, a choice of filter offsets", async () => {
  const { chunk, usage } = azure;
  const run = await replay({
    chunks: [
      AZURE_FIRST,
      chunk({ content: "", refusal: null, role: "assistant" }, null, { usage: null }),
      chunk({ content: "Hello" }, null, { usage: null }),
      chunk({ content: " World" }, null, { usage: null }),
      chunk({}, "stop", { usage: null }),
      // Filter results for the text so far: a choice without a delta.
      {
        ...chunk(undefined),
        choices: [{
          content_filter_offsets: { check_offset: 0, start_offset: 0, end_offset: 11 },
          content_filter_results: AZURE_FILTERS,
          finish_reason: null,
          index: 0,
        }],
      },
      usage({
        completion_tokens: 5,
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
        prompt_tokens: 15,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        total_tokens: 20,
      }),
    ],
  }, { provider: "azure", model: "gpt-4o" });
  assert.equal(run.text, "Hello World");
  assert.equal(run.finish.reason, "stop");
  assert.deepEqual(run.finish.usage, { inputTokens: 15, outputTokens: 5 });
});

Deno.test("a recorded Azure stream reads right: output cut by the content filter keeps its text", async () => {
  const { chunk } = azure;
  const run = await replay({
    chunks: [
      AZURE_FIRST,
      chunk({ content: "", refusal: null, role: "assistant" }),
      chunk({ content: "Here is how" }),
      {
        ...chunk({}, "content_filter"),
        choices: [{
          content_filter_results: {
            ...AZURE_FILTERS,
            violence: { filtered: true, severity: "medium" },
          },
          delta: {},
          finish_reason: "content_filter",
          index: 0,
        }],
      },
    ],
  }, { provider: "azure", model: "gpt-4o" });
  assert.equal(run.text, "Here is how");
  assert.equal(run.finish.reason, "content_filter");
});

/** DeepSeek: reasoning as reasoning_content, usage in the finish chunk, cache hits of its own. */
const deepseek = recorded({
  id: "6e77be01-935b-42f6-8b05-d6c763528589",
  object: "chat.completion.chunk",
  created: 1786782779,
  model: "deepseek-reasoner",
  system_fingerprint: "fp_a26a795594",
});

Deno.test("a recorded DeepSeek stream reads right: reasoning_content, a call, cache hits", async () => {
  const { chunk } = deepseek;
  const run = await replay({
    chunks: [
      chunk({ role: "assistant", content: null, reasoning_content: "" }, null, { usage: null }),
      chunk({ content: null, reasoning_content: "The user asks" }, null, { usage: null }),
      chunk({ content: null, reasoning_content: " about Paris." }, null, { usage: null }),
      chunk(
        {
          tool_calls: [{
            index: 0,
            id: "call_00_IhCAliIHtM9gKpgfqbBV9873",
            type: "function",
            function: { name: "get_weather", arguments: "" },
          }],
        },
        null,
        { usage: null },
      ),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"' } }] }, null, { usage: null }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: 'city": "Paris"}' } }] }, null, {
        usage: null,
      }),
      chunk({ content: "", reasoning_content: null }, "tool_calls", {
        usage: {
          prompt_tokens: 374,
          completion_tokens: 61,
          total_tokens: 435,
          prompt_tokens_details: { cached_tokens: 256 },
          completion_tokens_details: { reasoning_tokens: 17 },
          prompt_cache_hit_tokens: 256,
          prompt_cache_miss_tokens: 118,
        },
      }),
    ],
  }, { provider: "deepseek", model: "deepseek-reasoner" });
  assert.equal(run.reasoning, "The user asks about Paris.");
  assert.equal(run.text, "");
  assert.deepEqual(run.calls.map(({ id, input }) => ({ id, input })), [
    { id: "call_00_IhCAliIHtM9gKpgfqbBV9873", input: { city: "Paris" } },
  ]);
  assert.equal(run.finish.reason, "tool_calls");
  assert.deepEqual(run.finish.usage, {
    inputTokens: 374,
    outputTokens: 61,
    cacheReadTokens: 256,
    reasoningTokens: 17,
  });
});

Deno.test("a recorded DeepSeek stream reads right: cut at the limit, all of its output spent on reasoning", async () => {
  const { chunk } = deepseek;
  const run = await replay({
    chunks: [
      chunk({ role: "assistant", content: "" }, null, { usage: null }),
      chunk({ content: "Par" }, "length", {
        usage: {
          prompt_tokens: 88,
          completion_tokens: 4,
          total_tokens: 92,
          prompt_tokens_details: { cached_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 4 },
          prompt_cache_hit_tokens: 0,
          prompt_cache_miss_tokens: 88,
        },
      }),
    ],
  }, { provider: "deepseek", model: "deepseek-reasoner" });
  assert.equal(run.text, "Par");
  assert.equal(run.finish.reason, "length");
  // total = prompt + completion: the completion already holds the reasoning.
  assert.deepEqual(run.finish.usage, { inputTokens: 88, outputTokens: 4, reasoningTokens: 4 });
});

Deno.test("a recorded Groq stream reads right: reasoning as `reasoning`, usage under x_groq", async () => {
  const { chunk } = recorded({
    id: "chatcmpl-3556c041-562b-471f-9a90-763dbcea5a3f",
    object: "chat.completion.chunk",
    created: 1770770846,
    model: "qwen/qwen3-32b",
    system_fingerprint: "fp_78ac7f3229",
  });
  const run = await replay({
    chunks: [
      chunk({ role: "assistant", content: "" }, null, {
        x_groq: { id: "req_01kh52nmbjem9bfhxdbabnjv0x", seed: 872656815 },
      }),
      chunk({ reasoning: "Okay, count" }),
      chunk({ reasoning: " the r's." }),
      chunk({ content: "There are " }),
      chunk({ content: "3." }),
      chunk({}, "stop", {
        x_groq: {
          id: "req_01kh52nmbjem9bfhxdbabnjv0x",
          usage: {
            queue_time: 0.171721454,
            prompt_tokens: 17,
            prompt_time: 0.000792801,
            completion_tokens: 1107,
            completion_time: 3.206170277,
            total_tokens: 1124,
            total_time: 3.206963078,
            completion_tokens_details: { reasoning_tokens: 963 },
          },
        },
      }),
    ],
  }, { provider: "groq", model: "qwen/qwen3-32b" });
  assert.equal(run.reasoning, "Okay, count the r's.");
  assert.equal(run.text, "There are 3.");
  assert.equal(run.finish.reason, "stop");
  assert.deepEqual(run.finish.usage, {
    inputTokens: 17,
    outputTokens: 1107,
    reasoningTokens: 963,
  });
});

/** Mistral: usage in the finish chunk, content as parts for its reasoning models. */
const mistral = recorded({
  id: "a4e29c5b82f94d67b23e108a7c9df6e1",
  object: "chat.completion.chunk",
  created: 1769088912,
  model: "magistral-medium-2507",
});

Deno.test("a recorded Mistral stream reads right: thinking parts, text parts, an empty-choices chunk", async () => {
  const { chunk } = mistral;
  const thinking = (text: string) => [{ type: "thinking", thinking: [{ type: "text", text }] }];
  const run = await replay({
    chunks: [
      chunk({ role: "assistant", content: thinking("The user is asking") }),
      { ...chunk({}), choices: [], usage: null },
      chunk({ content: thinking(" for 2+2.") }),
      chunk({ content: [...thinking(" It is 4."), { type: "text", text: "2 + 2" }] }),
      chunk({ content: " = 4" }, "stop", {
        usage: { prompt_tokens: 10, total_tokens: 56, completion_tokens: 46 },
      }),
    ],
  }, { provider: "mistral", model: "magistral-medium-2507" });
  assert.equal(run.reasoning, "The user is asking for 2+2. It is 4.");
  assert.equal(run.text, "2 + 2 = 4");
  assert.equal(run.finish.reason, "stop");
  assert.deepEqual(run.finish.usage, { inputTokens: 10, outputTokens: 46 });
});

Deno.test("a recorded Mistral stream reads right: a call without index, whole, in the finish chunk", async () => {
  const { chunk } = mistral;
  const run = await replay({
    chunks: [
      chunk({ role: "assistant", content: "" }),
      chunk(
        {
          content: null,
          tool_calls: [{
            id: "gSIMJiOkT",
            function: { name: "get_weather", arguments: '{"city": "Paris"}' },
          }],
        },
        "tool_calls",
        { usage: { prompt_tokens: 124, total_tokens: 146, completion_tokens: 22 } },
      ),
    ],
  }, { provider: "mistral", model: "mistral-small-latest" });
  assert.deepEqual(run.calls, [
    { type: "tool_call", id: "gSIMJiOkT", name: "get_weather", input: { city: "Paris" } },
  ]);
  assert.equal(run.finish.reason, "tool_calls");
  assert.deepEqual(run.finish.usage, { inputTokens: 124, outputTokens: 22 });
});

/** Alibaba's Qwen (DashScope): choice fields first, empty ids after the first delta. */
const qwen = recorded({
  object: "chat.completion.chunk",
  created: 1770764938,
  system_fingerprint: null,
  model: "qwen3-max",
  id: "chatcmpl-8e243c57-23b3-9db2-a02e-e3c53929c368",
});

Deno.test("a recorded Alibaba Qwen stream reads right: a call whose later deltas carry an empty id, cache writes", async () => {
  const { chunk, usage } = qwen;
  const call = (fields: Fields) => ({ index: 0, id: "", type: "function", ...fields });
  const run = await replay({
    chunks: [
      chunk({ content: null, role: "assistant", reasoning_content: "" }, null, { usage: null }),
      chunk({ content: null, reasoning_content: "Weather in Paris." }, null, { usage: null }),
      chunk(
        {
          content: null,
          tool_calls: [call({
            id: "call_eee11723464a4b9eb8cee71d",
            function: { name: "get_weather", arguments: "" },
          })],
        },
        null,
        { usage: null },
      ),
      chunk(
        {
          content: null,
          tool_calls: [call({ function: { arguments: '{"city": "Paris' } })],
        },
        null,
        { usage: null },
      ),
      chunk({ content: null, tool_calls: [call({ function: { arguments: '"}' } })] }, null, {
        usage: null,
      }),
      chunk({ tool_calls: [call({ function: { arguments: "" } })] }, null, { usage: null }),
      chunk({}, "tool_calls", { usage: null }),
      usage({
        prompt_tokens: 2295,
        completion_tokens: 22,
        total_tokens: 2317,
        prompt_tokens_details: { cached_tokens: 0, cache_creation_input_tokens: 2048 },
      }),
    ],
  }, { provider: "qwen", model: "qwen3-max" });
  assert.equal(run.reasoning, "Weather in Paris.");
  assert.deepEqual(run.calls, [{
    type: "tool_call",
    id: "call_eee11723464a4b9eb8cee71d",
    name: "get_weather",
    input: { city: "Paris" },
  }]);
  assert.equal(run.finish.reason, "tool_calls");
  assert.deepEqual(run.finish.usage, {
    inputTokens: 2295,
    outputTokens: 22,
    cacheWriteTokens: 2048,
  });
});

const CITATIONS = [
  "https://en.wikipedia.org/wiki/San_Francisco",
  "https://worldpopulationreview.com/us-cities/california/san-francisco",
];

Deno.test("a recorded Perplexity stream reads right: running usage in every chunk, the cited sources after the answer", async () => {
  const base = {
    id: "58cb9740-f356-49e9-b71e-a02a1376c1b9",
    model: "sonar",
    created: 1770768240,
    citations: CITATIONS,
    object: "chat.completion.chunk",
  };
  const chunk = (content: string, completion: number, rest: Fields = {}) => ({
    ...base,
    usage: { prompt_tokens: 10, completion_tokens: completion, total_tokens: 10 + completion },
    choices: [{ index: 0, delta: { role: "assistant", content } }],
    ...rest,
  });
  const run = await replay({
    chunks: [
      chunk("The population", 2),
      chunk(" is about 808,000", 6),
      chunk(" [1][2].", 9),
      {
        ...chunk("", 9),
        object: "chat.completion.done",
        choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: "stop" }],
      },
    ],
  }, { provider: "perplexity", model: "sonar" });
  assert.equal(
    run.text,
    "The population is about 808,000 [1][2].\n\nSources:\n" +
      `[1] ${CITATIONS[0]}\n[2] ${CITATIONS[1]}`,
  );
  assert.equal(run.finish.reason, "stop");
  assert.deepEqual(run.finish.usage, { inputTokens: 10, outputTokens: 9 });
});

Deno.test("a recorded Cerebras stream reads right: reasoning as `reasoning`, a call, usage with time_info", async () => {
  const { chunk } = recorded({
    id: "chatcmpl-9e97f9ca-9626-4ef8-8543-6e3ee7cef659",
    created: 1779147581,
    model: "zai-glm-4.7",
    system_fingerprint: "fp_a33c042689e969567008",
    object: "chat.completion.chunk",
  });
  const run = await replay({
    chunks: [
      chunk({ role: "assistant" }),
      chunk({ reasoning: "The user asks" }),
      chunk({ reasoning: " for the time." }),
      chunk({
        tool_calls: [{
          function: { name: "now", arguments: "{}" },
          type: "function",
          id: "bbd2b9d98",
          index: 0,
        }],
      }),
      chunk({}, "tool_calls", {
        usage: {
          total_tokens: 426,
          completion_tokens: 104,
          completion_tokens_details: {
            accepted_prediction_tokens: 0,
            rejected_prediction_tokens: 0,
            reasoning_tokens: 97,
          },
          prompt_tokens: 322,
          prompt_tokens_details: { cached_tokens: 256 },
        },
        time_info: { queue_time: 0.00306479, prompt_time: 0.01150595, total_time: 0.1844 },
      }),
    ],
  }, { provider: "cerebras", model: "zai-glm-4.7" });
  assert.equal(run.reasoning, "The user asks for the time.");
  assert.deepEqual(run.calls, [{ type: "tool_call", id: "bbd2b9d98", name: "now", input: {} }]);
  assert.equal(run.finish.reason, "tool_calls");
  assert.deepEqual(run.finish.usage, {
    inputTokens: 322,
    outputTokens: 104,
    cacheReadTokens: 256,
    reasoningTokens: 97,
  });
});

Deno.test("a recorded Moonshot stream reads right: usage inside the finishing choice, cached tokens beside it", async () => {
  const { chunk } = recorded({
    id: "chatcmpl-6810567267ee141b4630dccb",
    object: "chat.completion.chunk",
    created: 1745901158,
    model: "kimi-k2-0905-preview",
  });
  const finish = chunk({}, "stop");
  const run = await replay({
    chunks: [
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Hello! How can I help?" }),
      {
        ...finish,
        choices: [{
          ...finish.choices[0],
          usage: { prompt_tokens: 19, completion_tokens: 13, total_tokens: 32, cached_tokens: 16 },
        }],
      },
    ],
  }, { provider: "moonshot", model: "kimi-k2-0905-preview" });
  assert.equal(run.text, "Hello! How can I help?");
  assert.equal(run.finish.reason, "stop");
  assert.deepEqual(run.finish.usage, { inputTokens: 19, outputTokens: 13, cacheReadTokens: 16 });
});
