import "./isolated_env.ts";
import assert from "node:assert/strict";
import { Agent, type Message } from "../mod.ts";
import { anthropicModel } from "../lib/providers/mod.ts";
import { startMockAnthropicServer } from "../lib/testing/mod.ts";
import { cacheBreakpoints, runAnthropic, wireTurns } from "./anthropic_support.ts";
import { collect, deltaText, eventsOf, recordingTools } from "./run_support.ts";

Deno.test("anthropic provider: streams text through the SDK and sends the key and API version", async () => {
  const run = await runAnthropic([{ text: ["Hello", ", ", "world."] }], { input: "Hi" });
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(eventsOf(run.events, "text_delta").map((event) => event.text), [
    "Hello",
    ", ",
    "world.",
  ]);
  assert.equal(run.result.text, "Hello, world.");
  assert.equal(run.result.finishReason, "stop");
  assert.equal(run.requests.length, 1);
  const [request] = run.requests;
  assert.equal(request.headers.get("x-api-key"), "sk-ant-test");
  assert.equal(request.headers.get("authorization"), "Bearer sk-ant-test");
  assert.match(request.headers.get("anthropic-version") ?? "", /^\d{4}-\d{2}-\d{2}$/);
  assert.equal(request.body.model, "claude-test");
  assert.equal(request.body.stream, true);
  assert.equal(request.body.max_tokens, 8192);
  assert.deepEqual(wireTurns(request), [
    { role: "user", content: [{ type: "text", text: "Hi", cache_control: { type: "ephemeral" } }] },
  ]);
});

Deno.test("anthropic provider: runs a tool whose input arrives in pieces and sends the result back", async () => {
  const run = await runAnthropic([
    {
      text: "Checking.",
      toolCalls: [{ id: "toolu_w", name: "get_weather", input: { city: "Paris" } }],
    },
    { text: "22°C." },
  ]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(run.received, [{
    id: "toolu_w",
    name: "get_weather",
    input: { city: "Paris" },
  }]);
  assert.deepEqual(
    eventsOf(run.events, "tool_result").map(({ id, output, isError }) => ({ id, output, isError })),
    [{ id: "toolu_w", output: "22°C in Paris", isError: false }],
  );
  const turns = wireTurns(run.requests[1]);
  assert.deepEqual(turns.slice(1), [
    {
      role: "assistant",
      content: [
        { type: "text", text: "Checking." },
        { type: "tool_use", id: "toolu_w", name: "get_weather", input: { city: "Paris" } },
      ],
    },
    {
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: "toolu_w",
        content: "22°C in Paris",
        is_error: false,
        cache_control: { type: "ephemeral" },
      }],
    },
  ]);
  assert.equal(run.result.text, "22°C.");
});

Deno.test("anthropic provider: a failing tool's result goes back with is_error", async () => {
  const run = await runAnthropic([
    { toolCalls: [{ id: "toolu_x", name: "explode", input: {} }] },
    { text: "It failed." },
  ]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  const result = wireTurns(run.requests[1]).at(-1)?.content[0];
  assert.equal(result?.type, "tool_result");
  assert.equal(result?.tool_use_id, "toolu_x");
  assert.equal(result?.is_error, true);
  assert.match(String(result?.content), /boom/);
});

Deno.test("anthropic provider: parallel tool calls are answered in one user turn", async () => {
  const run = await runAnthropic([
    {
      toolCalls: [
        { id: "toolu_w", name: "get_weather", input: { city: "Paris" } },
        { id: "toolu_a", name: "add", input: { a: 2, b: 3 } },
      ],
    },
    { text: "Done." },
  ]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(run.received, [
    { id: "toolu_a", name: "add", input: { a: 2, b: 3 } },
    { id: "toolu_w", name: "get_weather", input: { city: "Paris" } },
  ]);
  const turns = wireTurns(run.requests[1]);
  assert.deepEqual(turns.map((turn) => turn.role), ["user", "assistant", "user"]);
  assert.deepEqual(
    turns[2].content.map(({ type, tool_use_id, content }) => ({ type, tool_use_id, content })),
    [
      { type: "tool_result", tool_use_id: "toolu_w", content: "22°C in Paris" },
      { type: "tool_result", tool_use_id: "toolu_a", content: "5" },
    ],
  );
});

Deno.test("anthropic provider: invalid JSON tool input becomes an error result the model sees", async () => {
  const run = await runAnthropic([
    { toolCalls: [{ id: "toolu_b", name: "add", input: '{"a": 1, "b":' }] },
    { text: "Sorry." },
  ]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(run.received, []);
  const [result] = eventsOf(run.events, "tool_result");
  assert.equal(result.isError, true);
  const sent = wireTurns(run.requests[1]);
  assert.deepEqual(sent[1].content[0], { type: "tool_use", id: "toolu_b", name: "add", input: {} });
  assert.equal(sent[2].content[0].is_error, true);
});

Deno.test("anthropic provider: thinking streams as reasoning and goes back signed, across turns", async () => {
  await using server = startMockAnthropicServer({
    replies: [
      {
        thinking: { text: ["Need the ", "weather."], signature: "sig-1" },
        toolCalls: [{ id: "toolu_w", name: "get_weather", input: { city: "Oslo" } }],
      },
      { thinking: { text: "Got it.", signature: "sig-2" }, text: "Cold." },
      { text: "Still cold." },
    ],
  });
  const model = anthropicModel({
    model: "claude-test",
    apiKey: "sk-ant-test",
    baseURL: server.url,
    thinking: { budgetTokens: 2048 },
    maxOutputTokens: 1024,
  });
  const agent = new Agent({ model, tools: recordingTools().tools });
  const { events, result } = await collect(agent.stream("Weather in Oslo?"));
  assert.equal(result.status, "success", result.error?.message);
  assert.equal(deltaText(events, "reasoning_delta"), "Need the weather.Got it.");
  assert.deepEqual(result.messages[1], {
    role: "assistant",
    content: [
      { type: "reasoning", text: "Need the weather.", signature: "sig-1" },
      { type: "tool_call", id: "toolu_w", name: "get_weather", input: { city: "Oslo" } },
    ],
  });
  const thinking = { type: "thinking", thinking: "Need the weather.", signature: "sig-1" };
  const second = wireTurns(server.requests[1]);
  assert.deepEqual(second[1].content[0], thinking);
  assert.equal(second[1].content[1].type, "tool_use");
  assert.deepEqual(server.requests[0].body.thinking, { type: "enabled", budget_tokens: 2048 });
  assert.ok(Number(server.requests[0].body.max_tokens) > 2048, "max_tokens exceeds the budget");

  await agent.run("And now?", { messages: result.messages });
  const third = wireTurns(server.requests[2]);
  assert.deepEqual(third.map((turn) => turn.role), [
    "user",
    "assistant",
    "user",
    "assistant",
    "user",
  ]);
  assert.deepEqual(third[1].content[0], thinking);
  assert.deepEqual(third[3].content, [
    { type: "thinking", thinking: "Got it.", signature: "sig-2" },
    { type: "text", text: "Cold." },
  ]);
});

Deno.test("anthropic provider: redacted thinking round-trips as its encrypted data", async () => {
  const run = await runAnthropic([
    {
      thinking: { redacted: "EncRypTeD==" },
      toolCalls: [{ id: "toolu_n", name: "now", input: {} }],
    },
    { text: "Noon." },
  ]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(run.result.messages[1], {
    role: "assistant",
    content: [
      { type: "reasoning", text: "", redacted: "EncRypTeD==" },
      { type: "tool_call", id: "toolu_n", name: "now", input: {} },
    ],
  });
  assert.deepEqual(wireTurns(run.requests[1])[1].content, [
    { type: "redacted_thinking", data: "EncRypTeD==" },
    { type: "tool_use", id: "toolu_n", name: "now", input: {} },
  ]);
});

const STOP_REASONS: [stopReason: string, finishReason: string][] = [
  ["end_turn", "stop"],
  ["stop_sequence", "stop"],
  ["max_tokens", "length"],
  ["model_context_window_exceeded", "length"],
  ["refusal", "content_filter"],
  ["something_new", "other"],
];

for (const [stopReason, finishReason] of STOP_REASONS) {
  Deno.test(`anthropic provider: stop_reason ${stopReason} ends the run with ${finishReason}`, async () => {
    const run = await runAnthropic([{ text: "Partial answer", stopReason }]);
    assert.equal(run.result.status, "success", run.result.error?.message);
    assert.equal(run.result.finishReason, finishReason);
    assert.equal(run.result.text, "Partial answer");
    assert.equal(run.requests.length, 1);
  });
}

Deno.test("anthropic provider: pause_turn calls the model again with the paused answer", async () => {
  const run = await runAnthropic([
    { text: "Searching the web… ", stopReason: "pause_turn" },
    { text: "Found it." },
  ]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.equal(run.requests.length, 2);
  assert.equal(run.result.turns, 2);
  assert.equal(run.result.text, "Found it.");
  const turns = wireTurns(run.requests[1]);
  assert.deepEqual(turns.map((turn) => turn.role), ["user", "assistant"]);
  assert.equal(turns[1].content[0].text, "Searching the web…", "trailing whitespace trimmed");
});

Deno.test("anthropic provider: maps usage with cache reads and writes into the input total", async () => {
  const usage = {
    input_tokens: 5,
    output_tokens: 7,
    cache_read_input_tokens: 1000,
    cache_creation_input_tokens: 100,
  };
  const run = await runAnthropic([{ text: "Cached.", usage }]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  const expected = {
    inputTokens: 1105,
    outputTokens: 7,
    cacheReadTokens: 1000,
    cacheWriteTokens: 100,
  };
  assert.deepEqual(run.result.usage, expected);
  assert.deepEqual(eventsOf(run.events, "turn_end")[0].usage, expected);
});

Deno.test("anthropic provider: marks cache breakpoints on the system prompt, last tool and last block", async () => {
  const run = await runAnthropic([
    { toolCalls: [{ id: "toolu_n", name: "now", input: {} }] },
    { text: "Noon." },
  ], { systemPrompt: "You are terse." });
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(run.requests[0].body.system, [
    { type: "text", text: "You are terse.", cache_control: { type: "ephemeral" } },
  ]);
  assert.deepEqual(cacheBreakpoints(run.requests[0]), [
    "system[0]",
    "tool explode",
    "messages[0].content[0] text",
  ]);
  assert.deepEqual(cacheBreakpoints(run.requests[1]), [
    "system[0]",
    "tool explode",
    "messages[2].content[0] tool_result",
  ]);
  const tools = run.requests[0].body.tools as { name: string; input_schema: { type: string } }[];
  assert.deepEqual(tools.map((tool) => tool.name), ["get_weather", "add", "now", "explode"]);
  assert.equal(tools[0].input_schema.type, "object");
});

Deno.test("anthropic provider: cache: false marks no breakpoints", async () => {
  const run = await runAnthropic([{ text: "Hi." }], {
    systemPrompt: "You are terse.",
    model: { cache: false },
  });
  assert.deepEqual(cacheBreakpoints(run.requests[0]), []);
});

Deno.test("anthropic provider: converts a foreign history into alternating turns the API accepts", async () => {
  const history: Message[] = [
    { role: "user", content: "List files" },
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "unsigned, from another provider" },
        { type: "text", text: "" },
        { type: "tool_call", id: "functions.ls:0", name: "ls", input: { path: "." } },
        { type: "tool_call", id: "call 2", name: "ls", input: {}, invalidInput: "{oops" },
      ],
    },
    { role: "tool", toolCallId: "functions.ls:0", name: "ls", content: "a.txt", isError: false },
    { role: "tool", toolCallId: "call 2", name: "ls", content: "", isError: true },
    { role: "user", content: "   " },
    { role: "assistant", content: [] },
  ];
  const run = await runAnthropic([{ text: "Two results." }], {
    messages: history,
    input: "Sum up",
  });
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(wireTurns(run.requests[0]), [
    { role: "user", content: [{ type: "text", text: "List files" }] },
    {
      role: "assistant",
      content: [
        { type: "tool_use", id: "functions_ls_0", name: "ls", input: { path: "." } },
        { type: "tool_use", id: "call_2", name: "ls", input: {} },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "functions_ls_0", content: "a.txt", is_error: false },
        { type: "tool_result", tool_use_id: "call_2", is_error: true },
        { type: "text", text: "Sum up", cache_control: { type: "ephemeral" } },
      ],
    },
  ]);
});

Deno.test("anthropic provider: max_tokens comes from the request, the options, then the model info", async () => {
  const info = { contextWindow: 200_000, maxOutputTokens: 64_000 };
  const fromRequest = await runAnthropic([{ text: "a" }], {
    maxOutputTokens: 99,
    model: { maxOutputTokens: 321, info },
  });
  assert.equal(fromRequest.requests[0].body.max_tokens, 99);
  const fromOptions = await runAnthropic([{ text: "a" }], {
    model: { maxOutputTokens: 321, info },
  });
  assert.equal(fromOptions.requests[0].body.max_tokens, 321);
  const fromInfo = await runAnthropic([{ text: "a" }], { model: { info } });
  assert.equal(fromInfo.requests[0].body.max_tokens, 64_000);
});

Deno.test("anthropic provider: exposes the model info it was given", () => {
  const info = { contextWindow: 200_000, maxOutputTokens: 64_000 };
  const model = anthropicModel({ model: "claude-test", apiKey: "k", info });
  assert.deepEqual(model.info, info);
  assert.equal(model.provider, "anthropic");
});

Deno.test("anthropic provider: a missing key at Anthropic's API is a ConfigError naming the env var", () => {
  assert.throws(
    () => anthropicModel({ model: "claude-test" }),
    (error: Error) =>
      error.name === "ConfigError" &&
      error.message === "No API key for anthropic: set ANTHROPIC_API_KEY",
  );
});

Deno.test("anthropic provider: without a key, another server gets no credential headers", async () => {
  await using server = startMockAnthropicServer({ replies: [{ text: "Local." }] });
  const model = anthropicModel({ model: "local", baseURL: `${server.url}/` });
  const result = await new Agent({ model }).run("Hi");
  assert.equal(result.status, "success", result.error?.message);
  assert.equal(result.text, "Local.");
  assert.equal(server.requests[0].headers.get("x-api-key"), null);
  assert.equal(server.requests[0].headers.get("authorization"), null);
});
