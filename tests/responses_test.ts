import "./isolated_env.ts";
import assert from "node:assert/strict";
import { Agent, type AssistantMessage, type ReasoningPart } from "../mod.ts";
import { openaiResponsesModel } from "../lib/providers/mod.ts";
import { startMockResponsesServer } from "../lib/testing/mod.ts";
import { abortAtFirstText, deltaText, eventsOf, recordingTools } from "./run_support.ts";
import {
  doneItems,
  inputItems,
  REASONING,
  recordingFetch,
  runResponses,
} from "./responses_support.ts";

const ORIGIN = "openai-responses:openai:gpt-5";

Deno.test("responses provider: a 20-turn tool loop sends every earlier reasoning item back byte for byte, in order", async () => {
  const run = await runResponses((body) => {
    const turn = (body.input as unknown[]).filter((item) =>
      (item as { type?: string }).type === "function_call_output"
    ).length;
    return turn < 19
      ? {
        reasoning: [`Step ${turn}: add.`, `Then check ${turn}.`],
        toolCalls: [{ name: "add", arguments: { a: turn, b: 1 } }],
      }
      : { reasoning: ["All added."], text: "Done." };
  }, { maxTurns: 25 });
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.equal(run.result.turns, 20);
  assert.equal(run.result.text, "Done.");
  assert.equal(run.requests.length, 20);
  assert.equal(run.exchanges.length, 20);

  const sent: string[] = []; // every reasoning item the server sent, as its JSON text
  for (const [i, exchange] of run.exchanges.entries()) {
    const reasoning = inputItems(run.requests[i]).filter((item) => item.type === "reasoning");
    assert.deepEqual(reasoning.map((item) => JSON.stringify(item)), sent, `request ${i + 1}`);
    let at = 0;
    for (const item of sent) {
      at = exchange.request.indexOf(item, at);
      assert.ok(at >= 0, `request ${i + 1} carries ${item.slice(0, 40)}… as sent, in order`);
    }
    const items = doneItems(await exchange.response);
    sent.push(...items.filter((item) => JSON.parse(item).type === "reasoning"));
  }
  assert.equal(sent.length, 20);
  for (const item of sent) assert.match(JSON.parse(item).encrypted_content, /^gAAAAA/);

  const reasoning = run.result.messages.flatMap((message) =>
    message.role === "assistant"
      ? message.content.filter((part): part is ReasoningPart => part.type === "reasoning")
      : []
  );
  assert.equal(reasoning.length, 20);
  assert.equal(reasoning[0].text, "Step 0: add.\n\nThen check 0.");
  assert.ok(reasoning.every((part) => part.origin === ORIGIN));
  assert.match(deltaText(run.events, "reasoning_delta"), /^Step 0: add\.\n\nThen check 0\.Step 1/);
});

Deno.test("responses provider: two calls in one answer run, and both results go back under their call ids", async () => {
  const run = await runResponses([
    {
      reasoning: ["Two lookups."],
      text: "Checking both.",
      toolCalls: [
        { name: "get_weather", arguments: { city: "Paris" }, callId: "call_weather" },
        { name: "add", arguments: { a: 2, b: 3 }, callId: "call_add" },
      ],
    },
    { text: ["All ", "done."] },
  ]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(run.received, [
    { id: "call_add", name: "add", input: { a: 2, b: 3 } },
    { id: "call_weather", name: "get_weather", input: { city: "Paris" } },
  ]);
  assert.equal(run.result.text, "All done.");
  const input = inputItems(run.requests[1]);
  assert.deepEqual(input.map((item) => item.type ?? item.role), [
    "user",
    "reasoning",
    "message",
    "function_call",
    "function_call",
    "function_call_output",
    "function_call_output",
  ]);
  const [, reasoning, message, weather, add, ...outputs] = input;
  assert.match(String(reasoning.id), /^rs_/);
  assert.match(String(message.id), /^msg_/);
  assert.deepEqual(message.content, [
    { type: "output_text", text: "Checking both.", annotations: [] },
  ]);
  assert.equal(weather.call_id, "call_weather");
  assert.match(String(weather.id), /^fc_/);
  assert.equal(weather.arguments, JSON.stringify({ city: "Paris" }));
  assert.equal(add.call_id, "call_add");
  assert.deepEqual(outputs.map(({ call_id, output }) => ({ call_id, output })).sort(), [
    { call_id: "call_weather", output: "22°C in Paris" },
    { call_id: "call_add", output: "5" },
  ]);
  const assistant = run.result.messages[1] as AssistantMessage;
  assert.deepEqual(assistant.content.map((part) => part.type), [
    "reasoning",
    "text",
    "tool_call",
    "tool_call",
  ]);
  assert.deepEqual(assistant.content[2].extra, { itemId: weather.id });
  assert.equal(assistant.content[2].origin, ORIGIN);
});

Deno.test("responses provider: a refusal ends the run with its text as the answer and the reason refusal", async () => {
  const run = await runResponses([{ refusal: "I can't help with that." }]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.equal(run.result.finishReason, "refusal");
  assert.equal(run.result.text, "I can't help with that.");
  assert.equal(deltaText(run.events, "text_delta"), "I can't help with that.");
  const last = run.result.messages.at(-1) as AssistantMessage;
  assert.equal(last.content.length, 1);
  assert.equal(last.content[0].type, "text");
  assert.equal((last.content[0] as { text: string }).text, "I can't help with that.");
  assert.equal(last.content[0].origin, ORIGIN);
  assert.match(String(last.content[0].extra?.id), /^msg_/);
});

Deno.test("responses provider: an incomplete response finishes with length or content_filter", async () => {
  const cut = await runResponses([{ text: "Half an ans", incomplete: "max_output_tokens" }]);
  assert.equal(cut.result.finishReason, "length");
  assert.equal(cut.result.text, "Half an ans");
  const filtered = await runResponses([{ text: "Well", incomplete: "content_filter" }]);
  assert.equal(filtered.result.finishReason, "content_filter");
});

Deno.test("responses provider: the request holds instructions, function tools, store false and the encrypted reasoning include", async () => {
  const run = await runResponses([{ text: "Hi." }], {
    model: {
      reasoning: { effort: "high", summary: "auto" },
      extraBody: { prompt_cache_key: "k1" },
    },
  });
  const body = run.requests[0].body;
  assert.equal(body.model, "gpt-5");
  assert.equal(body.instructions, "You are terse.");
  assert.equal(body.stream, true);
  assert.equal(body.store, false);
  assert.deepEqual(body.include, ["reasoning.encrypted_content"]);
  assert.deepEqual(body.reasoning, { effort: "high", summary: "auto" });
  assert.equal(body.parallel_tool_calls, true);
  assert.equal(body.prompt_cache_key, "k1");
  assert.equal(body.temperature, undefined);
  assert.deepEqual(body.input, [{ role: "user", content: [{ type: "input_text", text: "Go" }] }]);
  const tools = body.tools as Record<string, unknown>[];
  assert.deepEqual(tools.map((tool) => tool.name), ["get_weather", "add", "now"]);
  assert.deepEqual(Object.keys(tools[0]).sort(), [
    "description",
    "name",
    "parameters",
    "strict",
    "type",
  ]);
  assert.equal(tools[0].type, "function");
  assert.equal(tools[0].strict, false);
  assert.equal((tools[0].parameters as { type: string }).type, "object");
});

Deno.test("responses provider: usage counts reasoning inside output tokens, cached input, and the cost", async () => {
  const run = await runResponses([{
    reasoning: ["Think."],
    text: "Answer.",
    usage: { input_tokens: 1_000, cached_tokens: 400, output_tokens: 300, reasoning_tokens: 200 },
  }], { model: { info: _priced } });
  assert.deepEqual(run.result.usage, {
    inputTokens: 1_000,
    outputTokens: 300,
    cacheReadTokens: 400,
    reasoningTokens: 200,
  });
  const [turnEnd] = eventsOf(run.events, "turn_end");
  assert.equal(turnEnd.usage.outputTokens, 300);
  const cost = (600 * 1.25 + 400 * 0.125 + 300 * 10) / 1_000_000;
  assert.ok(Math.abs((run.result.costUsd ?? 0) - cost) < 1e-12, `cost ${run.result.costUsd}`);
});

const _priced = {
  contextWindow: 400_000,
  maxOutputTokens: 128_000,
  pricing: { input: 1.25, output: 10, cacheRead: 0.125 },
};

Deno.test("responses provider: an abort mid-stream ends the run fast as aborted, and the history goes on", async () => {
  const slow = Array.from({ length: 20 }, (_, i) => `word${i} `);
  await using server = startMockResponsesServer({
    replies: [
      {
        reasoning: ["Weather first."],
        toolCalls: [{ name: "get_weather", arguments: { city: "Oslo" } }],
      },
      { reasoning: ["Now answer."], text: slow, eventDelayMs: 300 },
      { text: "Resumed." },
    ],
  });
  const { tools } = recordingTools();
  const model = openaiResponsesModel({
    ...REASONING,
    model: "gpt-5",
    baseURL: server.url,
    apiKey: "sk-test",
  });
  const agent = new Agent({ model, tools });
  const result = await abortAtFirstText(agent, "Weather?");
  const last = result.messages.at(-1) as AssistantMessage;
  assert.deepEqual(last.content.map((part) => part.type), ["reasoning", "text"]);

  // The cut answer's reasoning lost the item after it: it stays home, and the server accepts.
  const next = await agent.run("Go on", { messages: result.messages });
  assert.equal(next.status, "success", next.error?.message);
  assert.equal(next.text, "Resumed.");
  const input = inputItems(server.requests[2]);
  assert.equal(input.filter((item) => item.type === "reasoning").length, 1);
  assert.deepEqual(input.at(-2), {
    type: "message",
    role: "assistant",
    content: [{ type: "output_text", text: "word0 ", annotations: [] }],
    status: "completed",
  });
});

Deno.test("responses provider: the mock refuses reasoning sent back without its encrypted content or its following item", async () => {
  await using server = startMockResponsesServer({
    replies: [{ reasoning: ["Hm."], toolCalls: [{ name: "now" }] }, { text: "never" }],
  });
  const { fetch, exchanges } = recordingFetch();
  const model = openaiResponsesModel({
    ...REASONING,
    model: "gpt-5",
    baseURL: server.url,
    apiKey: "k",
    fetch,
  });
  const finishes = [];
  for await (
    const event of model.stream({ messages: [{ role: "user", content: "Hi" }], tools: [] })
  ) {
    if (event.type === "finish") finishes.push(event);
  }
  assert.equal(finishes.length, 1);
  const [reasoning, call] = doneItems(await exchanges[0].response).map((item) => JSON.parse(item));
  const post = (input: unknown[]) =>
    fetch(`${server.url}/responses`, {
      method: "POST",
      body: JSON.stringify({ model: "gpt-5", store: false, stream: true, input }),
    }).then(async (response) => ({ status: response.status, body: await response.json() }));
  const output = { type: "function_call_output", call_id: call.call_id, output: "12:00" };
  const { encrypted_content: _, ...bare } = reasoning;
  const without = await post([bare, call, output]);
  assert.equal(without.status, 400);
  assert.match(without.body.error.message, /Items are not persisted when `store` is set to false/);
  const alone = await post([reasoning, { ...call, id: undefined }, output]);
  assert.equal(alone.status, 400);
  assert.equal(
    alone.body.error.message,
    `Item '${reasoning.id}' of type 'reasoning' was provided without its required following item.`,
  );
  const whole = await post([reasoning, call]);
  assert.match(whole.body.error.message, /No tool output found for function call/);
});

Deno.test("responses provider: a model not known to reason asks no encrypted reasoning, and sends back no reasoning it could not name", async () => {
  const run = await runResponses([
    { reasoning: ["Hm."], toolCalls: [{ name: "now" }] },
    { text: "Noon." },
  ], { model: { model: "gpt-4.1", reasoning: undefined } });
  assert.equal(run.result.status, "success", run.result.error?.message);
  const [first, second] = run.requests.map((request) => request.body);
  assert.equal(first.include, undefined);
  assert.equal(first.reasoning, undefined);
  // The reasoning came without encrypted content: kept nowhere, it cannot go back.
  const kinds = inputItems(run.requests[1]).map((item) => item.type ?? item.role);
  assert.deepEqual(kinds, ["user", "function_call", "function_call_output"]);
  assert.equal(second.include, undefined);
  const reasoning = run.result.messages[1].role === "assistant"
    ? run.result.messages[1].content.find((part) => part.type === "reasoning")
    : undefined;
  // No summary was asked for: the reasoning is there, unseen.
  assert.equal(reasoning?.text, "");
});
