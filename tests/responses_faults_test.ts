import "./isolated_env.ts";
import assert from "node:assert/strict";
import { Agent } from "../mod.ts";
import { openaiResponsesModel } from "../lib/providers/mod.ts";
import { startMockResponsesServer } from "../lib/testing/mod.ts";
import {
  assertFailedAtOnce,
  assertRetriedOnce,
  collect,
  deltaText,
  eventsOf,
  FAST_RETRY,
} from "./run_support.ts";
import { runResponses } from "./responses_support.ts";

Deno.test("responses provider: waits retry-after-ms after a 429, then succeeds", async () => {
  const run = await runResponses([
    { status: 429, headers: { "retry-after-ms": "7" } },
    { text: "Fine now." },
  ]);
  assertRetriedOnce(run, /^openai failed with 429/);
  assert.equal(eventsOf(run.events, "retry")[0].delayMs, 7);
  assert.equal(run.result.text, "Fine now.");
});

Deno.test("responses provider: retries a 500, then succeeds", async () => {
  const run = await runResponses([{ status: 500 }, { text: "Fine now." }]);
  assertRetriedOnce(run, /^openai failed with 500/);
  assert.equal(run.result.text, "Fine now.");
});

Deno.test("responses provider: fails at once with a ConfigError naming OPENAI_API_KEY on 401", async () => {
  const run = await runResponses([{ status: 401 }, { text: "never sent" }]);
  assertFailedAtOnce(run, "ConfigError", /\(401\).*OPENAI_API_KEY/);
});

Deno.test("responses provider: fails at once with a ContextLengthError on a 400 about the context window", async () => {
  const error = {
    message: "Your input exceeds the context window of this model. Please adjust your input " +
      "and try again.",
    type: "invalid_request_error",
    param: "input",
    code: "context_length_exceeded",
  };
  const run = await runResponses([{ status: 400, errorBody: { error } }, { text: "never sent" }]);
  assertFailedAtOnce(run, "ContextLengthError", /exceeds the context window/);
});

Deno.test("responses provider: fails at once on a 400 with the server's message", async () => {
  const error = {
    message: "Unsupported parameter: 'temperature' is not supported with this model.",
    type: "invalid_request_error",
    param: "temperature",
    code: "unsupported_parameter",
  };
  const run = await runResponses([{ status: 400, errorBody: { error } }, { text: "never sent" }]);
  assertFailedAtOnce(run, "ProviderError", /400.*'temperature' is not supported/);
});

Deno.test("responses provider: retries a stream cut before the response ended and keeps only the retry's text", async () => {
  const run = await runResponses([
    { reasoning: ["Plan."], text: ["Partial ", "answer ", "that breaks"], cutAfter: 13 },
    { text: ["Complete ", "answer."] },
  ]);
  assertRetriedOnce(run, /^openai cut the stream before the answer finished/);
  assert.equal(deltaText(run.events, "text_delta"), "Partial answer Complete answer.");
  assert.equal(run.result.text, "Complete answer.");
  assert.equal(run.result.messages.length, 2);
  const last = run.result.messages[1];
  assert.equal(last.role, "assistant");
  assert.deepEqual(last.content.map((part) => part.type), ["text"]);
});

Deno.test("responses provider: retries a stream cut after the last output item, before response.completed", async () => {
  const run = await runResponses([{ text: "All but the end.", cutAfter: 8 }, { text: "Whole." }]);
  assertRetriedOnce(run, /cut the stream before the answer finished/);
  assert.equal(run.result.text, "Whole.");
});

Deno.test("responses provider: retries a connection reset mid-stream", async () => {
  const run = await runResponses([{ text: ["Half ", "of it"], resetAfter: 5 }, { text: "All." }]);
  assertRetriedOnce(run, /^The connection to openai failed/);
  assert.equal(run.result.text, "All.");
});

Deno.test("responses provider: retries an empty stream", async () => {
  const run = await runResponses([{ text: "unused", empty: true }, { text: "Now." }]);
  assertRetriedOnce(run, /^openai sent an empty stream/);
  assert.equal(run.result.text, "Now.");
});

Deno.test("responses provider: retries an error event of a retryable kind", async () => {
  for (const code of ["server_error", "rate_limit_exceeded"]) {
    const run = await runResponses([
      { text: ["Half ", "of it"], errorAfter: { events: 5, code, message: "Try again later." } },
      { text: "All of it." },
    ]);
    assertRetriedOnce(
      run,
      new RegExp(`^openai sent an error in the stream: Try again later\\. \\(${code}\\)`),
    );
    assert.equal(run.result.text, "All of it.");
  }
});

Deno.test("responses provider: fails at once on an error event about the prompt", async () => {
  const run = await runResponses([
    {
      text: "Hmm",
      errorAfter: {
        events: 2,
        code: "invalid_prompt",
        message:
          "Invalid prompt: your prompt was flagged as potentially violating our usage policy.",
      },
    },
    { text: "never sent" },
  ]);
  assertFailedAtOnce(
    run,
    "ProviderError",
    /Invalid prompt: your prompt was flagged.*invalid_prompt/,
  );
});

Deno.test("responses provider: fails at once with a ContextLengthError on an error event about the context", async () => {
  const run = await runResponses([
    {
      text: "Hmm",
      errorAfter: {
        events: 2,
        code: "context_length_exceeded",
        message: "Your input exceeds the context window of this model.",
      },
    },
    { text: "never sent" },
  ]);
  assertFailedAtOnce(run, "ContextLengthError", /context window/);
});

Deno.test("responses provider: retries a response.failed with a server error", async () => {
  const run = await runResponses([
    { text: "Some", failed: { code: "server_error", message: "The server had an error." } },
    { text: "Recovered." },
  ]);
  assertRetriedOnce(run, /The server had an error\. \(server_error\)/);
  assert.equal(run.result.text, "Recovered.");
});

Deno.test("responses provider: fails at once on a response.failed with an invalid prompt", async () => {
  const run = await runResponses([
    { text: "Some", failed: { code: "invalid_prompt", message: "Invalid prompt." } },
    { text: "never sent" },
  ]);
  assertFailedAtOnce(run, "ProviderError", /Invalid prompt\. \(invalid_prompt\)/);
});

Deno.test("responses provider: reads a whole JSON response sent in place of a stream", async () => {
  const run = await runResponses([
    {
      reasoning: ["First", "Second"],
      text: "Checking.",
      toolCalls: [{ name: "now", callId: "call_now" }],
      json: true,
    },
    { text: "It is noon.", json: true },
  ]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(run.received, [{ id: "call_now", name: "now", input: {} }]);
  assert.equal(deltaText(run.events, "reasoning_delta"), "First\n\nSecond");
  assert.equal(run.result.text, "It is noon.");
  const types = (run.requests[1].body.input as { type?: string }[]).map((item) => item.type);
  assert.deepEqual(types, [
    undefined,
    "reasoning",
    "message",
    "function_call",
    "function_call_output",
  ]);
});

Deno.test("responses provider: reads a stream with keep-alive comments and CRLF line endings", async () => {
  const run = await runResponses([
    { reasoning: ["Hm."], toolCalls: [{ name: "add", arguments: { a: 1, b: 2 } }] },
    { text: "3." },
  ], { habits: { keepAlive: true, crlf: true } });
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(run.received.map((call) => call.input), [{ a: 1, b: 2 }]);
  assert.equal(run.result.text, "3.");
});

Deno.test("responses provider: arguments that are not JSON become a tool error the model sees", async () => {
  const run = await runResponses([
    { toolCalls: [{ name: "add", arguments: '{"a": 1, "b":', callId: "call_bad" }] },
    { text: "Sorry." },
  ]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(run.received, []);
  const [result] = eventsOf(run.events, "tool_result");
  assert.equal(result.isError, true);
  assert.equal(result.id, "call_bad");
  const output = (run.requests[1].body.input as { type?: string; output?: string }[])
    .find((item) => item.type === "function_call_output");
  assert.ok(output?.output);
});

Deno.test("responses provider: retries a stream that stalls past idleTimeoutMs", async () => {
  await using server = startMockResponsesServer({
    replies: [{ text: ["Slow ", "answer"], eventDelayMs: 200 }, { text: "Quick answer." }],
  });
  const model = openaiResponsesModel({
    model: "gpt-5",
    baseURL: server.url,
    apiKey: "sk-test",
    idleTimeoutMs: 50,
  });
  const { events, result } = await collect(new Agent({ model, retry: FAST_RETRY }).stream("Hi"));
  assert.equal(result.status, "success", result.error?.message);
  assert.match(eventsOf(events, "retry")[0].error, /sent nothing for 50 ms; the stream stalled/);
  assert.equal(result.text, "Quick answer.");
});

Deno.test("responses provider: an answer whose message has no text is empty, tried once more", async () => {
  const run = await runResponses([{ text: "" }, { text: "Now." }]);
  assertRetriedOnce(run, /returned an empty answer/);
  assert.equal(run.result.text, "Now.");
  const last = run.result.messages.at(-1);
  assert.equal(last?.role, "assistant");
  assert.deepEqual(last.content.map((part) => part.type === "text" && part.text), ["Now."]);
});
