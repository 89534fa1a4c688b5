import "./isolated_env.ts";
import assert from "node:assert/strict";
import { Agent } from "../mod.ts";
import { anthropicModel } from "../lib/providers/mod.ts";
import { startMockAnthropicServer } from "../lib/testing/mod.ts";
import { runAnthropic } from "./anthropic_support.ts";
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

const OVERLOADED = { type: "overloaded_error", message: "Overloaded" };

Deno.test("anthropic provider: waits a 429's retry-after, then succeeds", async () => {
  const run = await runAnthropic([
    { status: 429, headers: { "retry-after": "1" } },
    { text: "Fine now." },
  ]);
  assertRetriedOnce(run, /^anthropic failed with 429/);
  assert.equal(eventsOf(run.events, "retry")[0].delayMs, 1_000);
  assert.equal(run.result.text, "Fine now.");
});

Deno.test("anthropic provider: retries a 529 overloaded_error, then succeeds", async () => {
  const run = await runAnthropic([{ status: 529 }, { text: "Fine now." }]);
  assertRetriedOnce(run, /^anthropic failed with 529: Overloaded/);
  assert.equal(run.result.text, "Fine now.");
});

Deno.test("anthropic provider: retries an overloaded `event: error` mid-stream without repeating text", async () => {
  const run = await runAnthropic([
    { text: ["Half ", "of it"], errorAfter: { events: 4, error: OVERLOADED } },
    { text: ["All ", "of it."] },
  ]);
  assertRetriedOnce(run, /^anthropic sent an error in the stream: overloaded_error: Overloaded/);
  const retry = run.events.findIndex((event) => event.type === "retry");
  const partial = run.events.findIndex((e) => e.type === "text_delta" && e.text === "Half ");
  assert.ok(partial >= 0 && partial < retry, "the partial text streamed before the retry");
  assert.equal(deltaText(run.events, "text_delta"), "Half of itAll of it.");
  assert.equal(run.result.text, "All of it.");
  assert.deepEqual(run.result.messages.at(-1), {
    role: "assistant",
    content: [{ type: "text", text: "All of it." }],
  });
});

Deno.test("anthropic provider: retries a stream cut before message_stop", async () => {
  const run = await runAnthropic([
    { text: ["Partial ", "answer"], cutAfter: 3 },
    { text: "Complete answer." },
  ]);
  assertRetriedOnce(run, /^anthropic cut the stream before the answer finished/);
  assert.equal(run.result.text, "Complete answer.");
});

Deno.test("anthropic provider: retries a stream cut just before message_stop, after the stop reason", async () => {
  // message_start, block start, 1 delta, block stop, message_delta: cut before message_stop.
  const run = await runAnthropic([{ text: "Almost", cutAfter: 5 }, { text: "Done." }]);
  assertRetriedOnce(run, /cut the stream/);
  assert.equal(run.result.text, "Done.");
});

Deno.test("anthropic provider: fails at once with a ConfigError naming ANTHROPIC_API_KEY on 401", async () => {
  const run = await runAnthropic([{ status: 401 }, { text: "never sent" }]);
  assertFailedAtOnce(run, "ConfigError", /\(401\): invalid x-api-key.*ANTHROPIC_API_KEY/);
});

Deno.test("anthropic provider: fails at once with a ConfigError on 403", async () => {
  const run = await runAnthropic([{ status: 403 }, { text: "never sent" }]);
  assertFailedAtOnce(run, "ConfigError", /\(403\).*ANTHROPIC_API_KEY/);
});

Deno.test("anthropic provider: fails at once with a ContextLengthError on a 400 prompt too long", async () => {
  const errorBody = {
    type: "error",
    error: {
      type: "invalid_request_error",
      message: "prompt is too long: 210000 tokens > 200000 maximum",
    },
  };
  const run = await runAnthropic([{ status: 400, errorBody }, { text: "never sent" }]);
  assertFailedAtOnce(run, "ContextLengthError", /context window.*210000 tokens > 200000 maximum/);
});

Deno.test("anthropic provider: fails at once on another 400", async () => {
  const errorBody = {
    type: "error",
    error: { type: "invalid_request_error", message: "messages: roles must alternate" },
  };
  const run = await runAnthropic([{ status: 400, errorBody }, { text: "never sent" }]);
  assertFailedAtOnce(run, "ProviderError", /^anthropic failed with 400: messages: roles must/);
});

Deno.test("anthropic provider: a mid-stream invalid_request_error is not retried", async () => {
  const error = { type: "invalid_request_error", message: "bad block" };
  const run = await runAnthropic([{ text: "Hmm", errorAfter: { events: 2, error } }, {
    text: "never sent",
  }]);
  assertFailedAtOnce(run, "ProviderError", /in the stream: invalid_request_error: bad block/);
});

Deno.test("anthropic provider: a mid-stream prompt-too-long error is a ContextLengthError", async () => {
  const error = { type: "invalid_request_error", message: "prompt is too long: 9 tokens > 8" };
  const run = await runAnthropic([{ text: "Hmm", errorAfter: { events: 1, error } }, {
    text: "never sent",
  }]);
  assertFailedAtOnce(run, "ContextLengthError", /prompt is too long/);
});

Deno.test("anthropic provider: a mid-stream authentication_error is a ConfigError", async () => {
  const error = { type: "authentication_error", message: "invalid x-api-key" };
  const run = await runAnthropic([{ text: "Hmm", errorAfter: { events: 1, error } }]);
  assertFailedAtOnce(run, "ConfigError", /authentication_error.*ANTHROPIC_API_KEY/);
});

Deno.test("anthropic provider: ends with an error once 529s exhaust maxRetries", async () => {
  const run = await runAnthropic(Array(5).fill({ status: 529 }), {
    retry: { ...FAST_RETRY, maxRetries: 2 },
  });
  assert.equal(run.result.status, "error");
  assert.equal(run.result.error?.name, "ProviderError");
  assert.equal(run.requests.length, 3);
  assert.deepEqual(eventsOf(run.events, "retry").map((event) => event.attempt), [1, 2]);
});

Deno.test("anthropic provider: a refused connection fails at once and says to check the server", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  const model = anthropicModel({ model: "claude-test", baseURL: `http://127.0.0.1:${port}` });
  const agent = new Agent({ model, retry: { ...FAST_RETRY, maxRetries: 2 } });
  const { events, result } = await collect(agent.stream("Hi"));
  assert.equal(result.status, "error");
  assert.equal(result.error?.name, "ProviderError");
  assert.match(
    result.error?.message ?? "",
    new RegExp(`Could not reach anthropic at .*:${port}: .*refused.*Is the server running`),
  );
  assert.deepEqual(eventsOf(events, "retry"), []);
});

Deno.test("anthropic provider: retries a stream that stalls past idleTimeoutMs", async () => {
  await using server = startMockAnthropicServer({
    replies: [{ text: ["Slow ", "answer"], eventDelayMs: 200 }, { text: "Quick answer." }],
  });
  const model = anthropicModel({ model: "claude-test", baseURL: server.url, idleTimeoutMs: 50 });
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

Deno.test("anthropic provider: ping events keep a slow stream from counting as stalled", async () => {
  await using server = startMockAnthropicServer({
    // Eight pings 100 ms apart: the stream lasts longer than the idle timeout, and a ping comes
    // well within it, even on a loaded machine.
    replies: [{ pings: 8, text: "Thought long.", eventDelayMs: 100 }],
  });
  const model = anthropicModel({ model: "claude-test", baseURL: server.url, idleTimeoutMs: 600 });
  const { events, result } = await collect(new Agent({ model, retry: FAST_RETRY }).stream("Hi"));
  assert.equal(result.status, "success", result.error?.message);
  assert.deepEqual(eventsOf(events, "retry"), []);
  assert.equal(result.text, "Thought long.");
  assert.equal(server.requests.length, 1);
});

Deno.test("anthropic provider: an abort mid-stream ends the run fast as aborted, with a valid history", async () => {
  const slow = Array.from({ length: 20 }, (_, i) => `word${i} `);
  await using server = startMockAnthropicServer({
    replies: [
      { toolCalls: [{ id: "toolu_w", name: "get_weather", input: { city: "Paris" } }] },
      { text: slow, eventDelayMs: 300 },
    ],
  });
  const { tools, received } = recordingTools();
  const model = anthropicModel({ model: "claude-test", apiKey: "k", baseURL: server.url });
  const agent = new Agent({ model, tools });
  const result = await abortAtFirstText(agent, "Weather?");
  assert.deepEqual(received, [{ id: "toolu_w", name: "get_weather", input: { city: "Paris" } }]);
  assert.deepEqual(result.messages.map((message) => message.role), [
    "user",
    "assistant",
    "tool",
    "assistant",
  ]);
  assert.equal(server.requests.length, 2, "no retry after an abort");
});
