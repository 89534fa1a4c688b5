/**
 * DeepSeek's thinking mode refuses (400: "The reasoning_content in the thinking mode must be
 * passed back to the API") a history whose tool-call turns lack their `reasoning_content`.
 * Reasoning that came as `reasoning_content` goes back so, on the turns that called tools, to
 * the model it came from only. The streams are shaped like recordings of DeepSeek's.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { Agent, type Message, userMessage } from "../mod.ts";
import { type MockRequest, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { replay } from "./openai_support.ts";
import { collect, FAST_RETRY, recordingTools } from "./run_support.ts";

/** A chunk of DeepSeek's stream. */
function deepseek(delta: Record<string, unknown>, finish: string | null = null) {
  return {
    id: "6e77be01-935b-42f6-8b05-d6c763528589",
    object: "chat.completion.chunk",
    created: 1786782779,
    model: "deepseek-v4-flash",
    system_fingerprint: "fp_a26a795594",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    usage: null,
  };
}

/** A tool-call turn of DeepSeek's thinking mode, with `reasoning` as its reasoning_content. */
function callTurn(reasoning: string[]): unknown[] {
  return [
    deepseek({ role: "assistant", content: null, reasoning_content: "" }),
    ...reasoning.map((text) => deepseek({ content: null, reasoning_content: text })),
    deepseek({
      tool_calls: [{
        index: 0,
        id: "call_00_IhCAliIHtM9gKpgfqbBV9873",
        type: "function",
        function: { name: "get_weather", arguments: '{"city": "Paris"}' },
      }],
    }),
    {
      ...deepseek({ content: "", reasoning_content: null }, "tool_calls"),
      usage: { prompt_tokens: 374, completion_tokens: 61, total_tokens: 435 },
    },
  ];
}

/** A text turn of DeepSeek's thinking mode. */
const TEXT_TURN = [
  deepseek({ role: "assistant", content: null, reasoning_content: "" }),
  deepseek({ content: null, reasoning_content: "It is warm." }),
  deepseek({ content: "22°C in Paris." }),
  {
    ...deepseek({ content: "" }, "stop"),
    usage: { prompt_tokens: 420, completion_tokens: 12, total_tokens: 432 },
  },
];

/** The assistant messages of a request the server received. */
function assistants(request: MockRequest): Record<string, unknown>[] {
  return (request.body.messages as Record<string, unknown>[])
    .filter((message) => message.role === "assistant");
}

/** Runs the agent as `deepseek/deepseek-v4-flash` against `replies`; gives what was sent. */
async function runDeepSeek(firstTurn: unknown[]): Promise<MockRequest[]> {
  await using server = startMockOpenAIServer({
    replies: [{ chunks: firstTurn }, { chunks: TEXT_TURN }],
  });
  const agent = new Agent({
    model: "deepseek/deepseek-v4-flash",
    baseURL: server.url,
    apiKey: "sk-test",
    tools: recordingTools().tools,
    retry: FAST_RETRY,
  });
  const { result } = await collect(agent.stream("Weather in Paris?"));
  assert.equal(result.status, "success", result.error?.message);
  assert.equal(result.text, "22°C in Paris.");
  return server.requests;
}

Deno.test("agent: DeepSeek's reasoning_content goes back on the turn that called a tool", async () => {
  const requests = await runDeepSeek(callTurn(["The user asks", " about Paris."]));
  assert.deepEqual(assistants(requests[1]), [{
    role: "assistant",
    content: null,
    reasoning_content: "The user asks about Paris.",
    tool_calls: [{
      id: "call_00_IhCAliIHtM9gKpgfqbBV9873",
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Paris"}' },
    }],
  }]);
});

Deno.test("agent: a DeepSeek tool-call turn that reasoned nothing still sends reasoning_content", async () => {
  const requests = await runDeepSeek(callTurn([]));
  assert.equal(assistants(requests[1])[0].reasoning_content, "");
});

/** A conversation with DeepSeek: a turn that called a tool, then one that answered. */
function history(origin: string): Message[] {
  return [
    userMessage("Weather in Paris?"),
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "Look it up.", origin, extra: { field: "reasoning_content" } },
        { type: "tool_call", id: "call_1", name: "get_weather", input: { city: "Paris" } },
      ],
    },
    { role: "tool", toolCallId: "call_1", name: "get_weather", content: "22°C", isError: false },
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "It is warm.", origin, extra: { field: "reasoning_content" } },
        { type: "text", text: "22°C in Paris." },
      ],
    },
    userMessage("And Rome?"),
  ];
}

Deno.test("openai provider: reasoning_content goes back only on tool-call turns, only to its model", async () => {
  const origin = "openai-chat:deepseek:deepseek-v4-flash";
  const same = await replay({ text: "25°C." }, {
    provider: "deepseek",
    model: "deepseek-v4-flash",
    messages: history(origin),
  });
  const [called, answered] = assistants(same.requests[0]);
  assert.equal(called.reasoning_content, "Look it up.");
  assert.equal("reasoning_content" in answered, false, "a text turn's reasoning stays out");
  // Another model (here Mistral, which refuses unknown fields) gets none of it.
  const other = await replay({ text: "25°C." }, {
    provider: "mistral",
    model: "mistral-large-latest",
    messages: history(origin),
  });
  for (const message of assistants(other.requests[0])) {
    assert.equal("reasoning_content" in message, false);
  }
});

Deno.test("openai provider: reasoning streamed as `reasoning` (Groq, OpenRouter) is not sent back as reasoning_content", async () => {
  const run = await replay({
    chunks: [
      deepseek({ role: "assistant", reasoning: "Look it up." }),
      ...callTurn([]).slice(1),
    ],
  }, { provider: "groq", model: "qwen/qwen3-32b" });
  assert.equal(run.reasoning, "Look it up.");
  assert.equal(run.events.some((event) => event.type === "reasoning_end"), false);
});

Deno.test("agent: DeepSeek reasoning on both sides of the text goes back whole", async () => {
  const turn = callTurn(["First I think."]);
  const requests = await runDeepSeek([
    ...turn.slice(0, 2),
    deepseek({ content: "Let me check." }),
    deepseek({ content: null, reasoning_content: " Then the tool." }),
    ...turn.slice(2),
  ]);
  const [called] = assistants(requests[1]);
  assert.equal(called.content, "Let me check.");
  assert.equal(called.reasoning_content, "First I think. Then the tool.");
});
