import "./isolated_env.ts";
import assert from "node:assert/strict";
import { openaiModel } from "../lib/providers/mod.ts";
import { userMessage } from "../mod.ts";
import { type MockHabits, type MockReply, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { assertSentBack, type MockRun, runMock, wireMessages } from "./openai_support.ts";
import { deltaText, eventsOf } from "./run_support.ts";

/** A turn with two parallel calls, then the answer. */
const TWO_CALLS: MockReply[] = [
  {
    toolCalls: [
      { id: "call_weather", name: "get_weather", arguments: { city: "Paris" } },
      { id: "call_add", name: "add", arguments: { a: 2, b: 3 } },
    ],
  },
  { text: ["All ", "done."] },
];

/** What the tools of {@link TWO_CALLS} receive, sorted by name. */
const TWO_CALLS_RECEIVED = [
  { id: "call_add", name: "add", input: { a: 2, b: 3 } },
  { id: "call_weather", name: "get_weather", input: { city: "Paris" } },
];

function assertSuccess(run: MockRun): void {
  assert.equal(run.result.status, "success", run.result.error?.message);
}

/** The two calls ran with their ids and inputs, went back to the model, and it answered. */
function assertTwoCallsRan(run: MockRun): void {
  assertSuccess(run);
  assert.deepEqual(run.received, TWO_CALLS_RECEIVED);
  assert.deepEqual(
    eventsOf(run.events, "tool_call").map(({ id, name, input }) => ({ id, name, input })),
    [TWO_CALLS_RECEIVED[1], TWO_CALLS_RECEIVED[0]],
  );
  assert.equal(run.result.toolCalls, 2);
  assert.equal(run.result.turns, 2);
  assert.equal(run.requests.length, 2);
  assertSentBack(run.requests[1], run.received);
  assert.equal(deltaText(run.events, "text_delta"), "All done.");
  assert.equal(run.result.text, "All done.");
}

const HABITS: [behaviour: string, habits: MockHabits][] = [
  ["accumulates tool calls sent without index", { noIndex: true }],
  ["tells apart tool calls that all use index 0", { sameIndex: true }],
  ["keeps one call when its id is repeated on every delta", { repeatId: true }],
  ["keeps the name when it is repeated on every delta", { repeatName: true }],
  ["reads arguments sent whole in one chunk", { wholeArguments: true }],
  ["reads arguments sent as a JSON object", { objectArguments: true }],
  ["reads arguments re-sent cumulatively", { cumulativeArguments: true }],
  ["ignores arguments re-sent in the finish chunk", { resendArguments: true }],
  ["ignores SSE comment keep-alive lines", { keepAlive: true }],
  ["ignores `event: ping` events with non-JSON data", { pings: true }],
  ["finishes a stream that has no [DONE]", { noDone: true }],
  ["skips an Azure-style first chunk with empty choices", { emptyChoicesFirst: true }],
  ["reads CRLF line endings", { crlf: true }],
  ["copes with repeated ids and names, whole arguments and no [DONE] at once", {
    repeatId: true,
    repeatName: true,
    wholeArguments: true,
    noDone: true,
  }],
];

for (const [behaviour, habits] of HABITS) {
  Deno.test(`openai provider: ${behaviour}`, async () => {
    assertTwoCallsRan(await runMock(TWO_CALLS, { habits }));
  });
}

Deno.test("openai provider: makes up unique ids for calls without one and answers under them", async () => {
  const run = await runMock(TWO_CALLS, { habits: { noId: true } });
  assertSuccess(run);
  assert.deepEqual(run.received.map(({ name, input }) => ({ name, input })), [
    { name: "add", input: { a: 2, b: 3 } },
    { name: "get_weather", input: { city: "Paris" } },
  ]);
  const ids = run.received.map((call) => call.id);
  for (const id of ids) assert.match(id, /^call_[0-9a-f]{24}$/);
  assert.equal(new Set(ids).size, 2);
  assertSentBack(run.requests[1], run.received);
  assert.equal(run.result.text, "All done.");
});

Deno.test("openai provider: runs the tools when finish_reason is stop after tool calls", async () => {
  const run = await runMock(TWO_CALLS, { habits: { stopWithToolCalls: true } });
  assertTwoCallsRan(run);
  const first = run.result.messages.find((message) => message.role === "assistant");
  assert.ok(first?.role === "assistant" && first.content.every((p) => p.type === "tool_call"));
});

Deno.test("openai provider: reports tool_calls as the finish when a server says stop after calls", async () => {
  await using server = startMockOpenAIServer({
    replies: [TWO_CALLS[0]],
    habits: { stopWithToolCalls: true },
  });
  const model = openaiModel({ model: "test-model", baseURL: server.url });
  const events = await Array.fromAsync(model.stream({ messages: [userMessage("Go")], tools: [] }));
  assert.deepEqual(events.map((event) => event.type), ["tool_call", "tool_call", "finish"]);
  assert.equal(events[2].type === "finish" && events[2].reason, "tool_calls");
});

Deno.test("openai provider: reads a JSON body from a server that ignores stream: true", async () => {
  const run = await runMock([
    { reasoning: "Two tools.", ...TWO_CALLS[0] },
    { text: "All done.", usage: { prompt_tokens: 40, completion_tokens: 3 } },
  ], { habits: { ignoreStream: true } });
  assertTwoCallsRan(run);
  assert.equal(deltaText(run.events, "reasoning_delta"), "Two tools.");
  assert.deepEqual(eventsOf(run.events, "turn_end").at(-1)?.usage, {
    inputTokens: 40,
    outputTokens: 3,
  });
});

const NO_ID_PARALLEL: [where: string, habits: MockHabits][] = [
  ["without index", { noIndex: true, noId: true }],
  ["all at index 0", { sameIndex: true, noId: true }],
];

for (const [where, habits] of NO_ID_PARALLEL) {
  Deno.test(`openai provider: separates parallel calls sent without id and ${where}`, async () => {
    const run = await runMock([
      {
        text: "Checking.",
        toolCalls: [
          { name: "get_weather", arguments: { city: "Paris" } },
          { name: "get_weather", arguments: { city: "Rome" } },
          { name: "add", arguments: { a: 2, b: 3 } },
        ],
      },
      { text: "Paris 22°C, Rome 22°C, 5." },
    ], { habits });
    assertSuccess(run);
    assert.deepEqual(run.received.map(({ name, input }) => ({ name, input })), [
      { name: "add", input: { a: 2, b: 3 } },
      { name: "get_weather", input: { city: "Paris" } },
      { name: "get_weather", input: { city: "Rome" } },
    ]);
    assert.equal(new Set(run.received.map((call) => call.id)).size, 3);
    assertSentBack(run.requests[1], run.received);
    assert.equal(wireMessages(run.requests[1]).at(-4)?.content, "Checking.");
    assert.equal(run.result.text, "Paris 22°C, Rome 22°C, 5.");
  });
}

Deno.test("openai provider: gives {} to a zero-parameter tool called with empty arguments", async () => {
  const run = await runMock([
    { toolCalls: [{ id: "call_now", name: "now", arguments: "" }] },
    { text: "It is noon." },
  ]);
  assertSuccess(run);
  assert.deepEqual(run.received, [{ id: "call_now", name: "now", input: {} }]);
  assert.equal(eventsOf(run.events, "tool_result")[0].isError, false);
  assert.equal(run.result.text, "It is noon.");
});

Deno.test("openai provider: answers arguments that are not JSON with a tool error and goes on", async () => {
  const run = await runMock([
    { toolCalls: [{ id: "call_bad", name: "get_weather", arguments: '{"city": "Par' }] },
    { text: "Sorry, let me retry later." },
  ]);
  assertSuccess(run);
  assert.deepEqual(run.received, [], "the tool does not run");
  const [result] = eventsOf(run.events, "tool_result");
  assert.equal(result.id, "call_bad");
  assert.equal(result.isError, true);
  assert.match(result.output, /not valid JSON: \{"city": "Par/);
  const sent = wireMessages(run.requests[1]).at(-1);
  assert.equal(sent?.role, "tool");
  assert.equal(sent?.tool_call_id, "call_bad");
  assert.equal(sent?.content, result.output);
  assert.equal(run.result.text, "Sorry, let me retry later.");
});

for (const field of ["reasoning_content", "reasoning", "think_tags"] as const) {
  Deno.test(`openai provider: streams reasoning sent as ${field} as reasoning, not text`, async () => {
    const run = await runMock([
      {
        reasoning: ["The user wants ", "the weather."],
        toolCalls: [{ id: "call_w", name: "get_weather", arguments: { city: "Paris" } }],
      },
      { reasoning: "Got it.", text: ["It is ", "22°C."] },
    ], { habits: { reasoningField: field } });
    assertSuccess(run);
    assert.deepEqual(run.received, [
      { id: "call_w", name: "get_weather", input: { city: "Paris" } },
    ]);
    assert.equal(deltaText(run.events, "reasoning_delta"), "The user wants the weather.Got it.");
    assert.equal(deltaText(run.events, "text_delta"), "It is 22°C.");
    assert.equal(run.result.text, "It is 22°C.");
    // Reasoning that came as reasoning_content is marked so, for the model it came from.
    const marked = field === "reasoning_content"
      ? { origin: "openai-chat:openai:test-model", extra: { field: "reasoning_content" } }
      : {};
    assert.deepEqual(run.result.messages.at(-1), {
      role: "assistant",
      content: [
        { type: "reasoning", text: "Got it.", ...marked },
        { type: "text", text: "It is 22°C." },
      ],
    });
    const sentBack = wireMessages(run.requests[1]).find((m) => m.role === "assistant");
    assert.equal(sentBack?.content, null, "reasoning is not sent back as text");
  });
}

Deno.test("openai provider: replaces usage sent in every chunk instead of summing it", async () => {
  const run = await runMock([
    { text: ["a", "b", "c", "d"], usage: { prompt_tokens: 50, completion_tokens: 8 } },
  ], { habits: { usageInEveryChunk: true } });
  assertSuccess(run);
  assert.equal(run.result.text, "abcd");
  assert.deepEqual(run.result.usage, { inputTokens: 50, outputTokens: 8 });
});

Deno.test("openai provider: maps the include_usage chunk onto turn and run usage", async () => {
  const run = await runMock([
    {
      toolCalls: [{ id: "call_w", name: "get_weather", arguments: { city: "Paris" } }],
      usage: {
        prompt_tokens: 100,
        completion_tokens: 20,
        total_tokens: 120,
        prompt_tokens_details: { cached_tokens: 64 },
        completion_tokens_details: { reasoning_tokens: 5 },
      },
    },
    { text: "22°C.", usage: { prompt_tokens: 130, completion_tokens: 4, total_tokens: 134 } },
  ]);
  assertSuccess(run);
  assert.deepEqual(eventsOf(run.events, "turn_end").map((event) => event.usage), [
    { inputTokens: 100, outputTokens: 20, cacheReadTokens: 64, reasoningTokens: 5 },
    { inputTokens: 130, outputTokens: 4 },
  ]);
  assert.deepEqual(run.result.usage, {
    inputTokens: 230,
    outputTokens: 24,
    cacheReadTokens: 64,
    reasoningTokens: 5,
  });
});
