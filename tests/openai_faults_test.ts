import "./isolated_env.ts";
import assert from "node:assert/strict";
import { Agent } from "../mod.ts";
import { openaiModel } from "../lib/providers/mod.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { runMock } from "./openai_support.ts";
import {
  abortAtFirstText,
  assertFailedAtOnce,
  assertRetriedOnce,
  collect,
  deltaText,
  eventsOf,
  FAST_RETRY,
  recordingTools,
} from "./run_support.ts";

Deno.test("openai provider: waits retry-after-ms after a 429, then succeeds", async () => {
  const run = await runMock([
    { status: 429, headers: { "retry-after-ms": "7" } },
    { text: "Fine now." },
  ]);
  assertRetriedOnce(run, /^openai failed with 429/);
  assert.equal(eventsOf(run.events, "retry")[0].delayMs, 7);
  assert.equal(run.result.text, "Fine now.");
});

Deno.test("openai provider: caps a 429's retry-after seconds at maxRetryAfterMs", async () => {
  const run = await runMock([
    { status: 429, headers: { "retry-after": "30" } },
    { text: "Fine now." },
  ], { retry: { ...FAST_RETRY, maxRetryAfterMs: 20 } });
  assertRetriedOnce(run, /^openai failed with 429/);
  assert.equal(eventsOf(run.events, "retry")[0].delayMs, 20);
});

Deno.test("openai provider: retries a 500, then succeeds", async () => {
  const run = await runMock([{ status: 500 }, { text: "Fine now." }]);
  assertRetriedOnce(run, /^openai failed with 500/);
  assert.equal(run.result.text, "Fine now.");
});

Deno.test("openai provider: ends with an error once 503s exhaust maxRetries", async () => {
  const run = await runMock(Array(5).fill({ status: 503 }), {
    retry: { ...FAST_RETRY, maxRetries: 2 },
  });
  assert.equal(run.result.status, "error");
  assert.equal(run.result.error?.name, "ProviderError");
  assert.match(run.result.error?.message ?? "", /^openai failed with 503: mock error 503/);
  assert.equal(run.requests.length, 3);
  assert.deepEqual(eventsOf(run.events, "retry").map((event) => event.attempt), [1, 2]);
});

Deno.test("openai provider: retries a stream cut before its finish and keeps only the retry's text", async () => {
  const run = await runMock([
    { text: ["Partial ", "answer ", "that breaks"], cutAfter: 3 },
    { text: ["Complete ", "answer."] },
  ]);
  assertRetriedOnce(run, /^openai cut the stream before the answer finished/);
  const types = run.events.map((event) => event.type);
  const partial = run.events.findIndex((e) => e.type === "text_delta" && e.text === "Partial ");
  assert.ok(partial >= 0 && partial < types.indexOf("retry"), "partial text streamed first");
  assert.equal(deltaText(run.events, "text_delta"), "Partial answer Complete answer.");
  assert.equal(run.result.text, "Complete answer.");
  assert.deepEqual(run.result.messages.at(-1), {
    role: "assistant",
    content: [{ type: "text", text: "Complete answer." }],
  });
});

Deno.test("openai provider: retries a connection reset mid-stream", async () => {
  const run = await runMock([
    { text: ["Half ", "of it"], resetAfter: 2 },
    { text: "All of it." },
  ]);
  assertRetriedOnce(run, /^The connection to openai failed/);
  assert.equal(run.result.text, "All of it.");
});

Deno.test("openai provider: retries an error object sent mid-stream", async () => {
  const run = await runMock([
    {
      text: ["Half ", "of it"],
      errorAfter: { events: 2, error: { message: "Provider disconnected", code: 502 } },
    },
    { text: "All of it." },
  ]);
  assertRetriedOnce(run, /^openai sent an error in the stream: Provider disconnected/);
  assert.equal(run.result.text, "All of it.");
});

Deno.test("openai provider: fails without retrying on a mid-stream context-length error", async () => {
  const error = {
    message: "This model's maximum context length is 8192 tokens",
    type: "invalid_request_error",
    code: "context_length_exceeded",
  };
  const run = await runMock([
    { text: "Hmm", errorAfter: { events: 1, error } },
    { text: "never sent" },
  ]);
  assertFailedAtOnce(run, "ContextLengthError", /maximum context length/);
});

for (const status of [401, 403]) {
  Deno.test(`openai provider: fails at once with a ConfigError naming OPENAI_API_KEY on ${status}`, async () => {
    const run = await runMock([{ status }, { text: "never sent" }]);
    assertFailedAtOnce(run, "ConfigError", new RegExp(`\\(${status}\\).*OPENAI_API_KEY`));
  });
}

Deno.test("openai provider: fails at once with a ContextLengthError on a 400 about the context", async () => {
  const run = await runMock([
    {
      status: 400,
      errorBody: {
        error: {
          message:
            "This model's maximum context length is 8192 tokens. However, you requested 9000.",
          type: "invalid_request_error",
        },
      },
    },
    { text: "never sent" },
  ]);
  assertFailedAtOnce(run, "ContextLengthError", /context window.*8192 tokens/);
});

Deno.test("openai provider: fails at once with a ConfigError naming the model on 404", async () => {
  const run = await runMock([{ status: 404 }, { text: "never sent" }]);
  assertFailedAtOnce(run, "ConfigError", /404.*"test-model".*model name/);
});

Deno.test("openai provider: a refused connection fails at once and says to check the server", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  const agent = new Agent({
    model: "openai/test-model",
    baseURL: `http://127.0.0.1:${port}/v1`,
    retry: { ...FAST_RETRY, maxRetries: 2 },
  });
  const { events, result } = await collect(agent.stream("Hi"));
  assert.equal(result.status, "error");
  assert.equal(result.error?.name, "ProviderError");
  assert.match(
    result.error?.message ?? "",
    new RegExp(`Could not reach openai at .*:${port}/v1: .*refused.*Is the server running`),
  );
  assert.deepEqual(eventsOf(events, "retry"), []);
});

Deno.test("openai provider: retries a stream that stalls past idleTimeoutMs", async () => {
  await using server = startMockOpenAIServer({
    replies: [{ text: ["Slow ", "answer"], eventDelayMs: 200 }, { text: "Quick answer." }],
  });
  const model = openaiModel({ model: "test-model", baseURL: server.url, idleTimeoutMs: 50 });
  const started = performance.now();
  const { events, result } = await collect(new Agent({ model, retry: FAST_RETRY }).stream("Hi"));
  assert.equal(result.status, "success", result.error?.message);
  const retries = eventsOf(events, "retry");
  assert.equal(retries.length, 1);
  assert.match(retries[0].error, /sent nothing for 50 ms; the stream stalled/);
  assert.equal(result.text, "Quick answer.");
  assert.equal(server.requests.length, 2);
  assert.ok(performance.now() - started < 1_000, "the stall is noticed before the slow reply ends");
});

Deno.test("openai provider: an abort mid-stream ends the run fast as aborted, with a valid history", async () => {
  const slow = Array.from({ length: 20 }, (_, i) => `word${i} `);
  await using server = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ id: "call_w", name: "get_weather", arguments: { city: "Paris" } }] },
      { text: slow, eventDelayMs: 300 },
    ],
  });
  const { tools, received } = recordingTools();
  const agent = new Agent({ model: "openai/test-model", baseURL: server.url, tools });
  const result = await abortAtFirstText(agent, "Weather?");
  assert.deepEqual(received, [{ id: "call_w", name: "get_weather", input: { city: "Paris" } }]);
  assert.deepEqual(result.messages.map((message) => message.role), [
    "user",
    "assistant",
    "tool",
    "assistant",
  ]);
  const last = result.messages.at(-1);
  assert.ok(last?.role === "assistant" && last.content.every((part) => part.type === "text"));
  assert.equal(server.requests.length, 2, "no retry after an abort");
});
