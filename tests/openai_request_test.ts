import "./isolated_env.ts";
import assert from "node:assert/strict";
import { Agent, type AgentOptions, ConfigError } from "../mod.ts";
import {
  OPENAI_BASE_URL,
  openaiModel,
  PROVIDER_NAMES,
  resolveModel,
} from "../lib/providers/mod.ts";
import { type MockRequest, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { wireMessages } from "./openai_support.ts";
import { collect, FAST_RETRY, recordingTools } from "./run_support.ts";

/** A tool turn then an answer, with a system prompt; gives back the requests the server got. */
async function requestsOf(options: Partial<AgentOptions> = {}): Promise<MockRequest[]> {
  await using server = startMockOpenAIServer({
    replies: [
      {
        text: "Let me look.",
        toolCalls: [{ id: "call_w", name: "get_weather", arguments: { city: "Paris" } }],
      },
      { text: "22°C." },
    ],
  });
  const { tools } = recordingTools();
  const agent = new Agent({
    model: "openai/test-model",
    baseURL: server.url,
    apiKey: "sk-test",
    systemPrompt: "You are terse.",
    tools,
    retry: FAST_RETRY,
    ...options,
  });
  const { result } = await collect(agent.stream("Weather in Paris?"));
  assert.equal(result.status, "success", result.error?.message);
  return server.requests;
}

function assertConfigError(create: () => unknown, message: RegExp): void {
  assert.throws(create, (error) => {
    assert.ok(error instanceof ConfigError, `a ConfigError, got ${error}`);
    assert.match(error.message, message);
    return true;
  });
}

Deno.test("openai provider: sends the system prompt first, with role system", async () => {
  const [first] = await requestsOf();
  assert.deepEqual(wireMessages(first), [
    { role: "system", content: "You are terse." },
    { role: "user", content: "Weather in Paris?" },
  ]);
});

Deno.test("openai provider: sends tools as functions with the zod JSON schema and no $schema", async () => {
  const [first] = await requestsOf();
  assert.deepEqual(first.body.tools, [
    {
      type: "function",
      function: {
        name: "get_weather",
        description: "Current weather for a city",
        parameters: {
          type: "object",
          properties: { city: { type: "string" } },
          required: ["city"],
        },
      },
    },
    {
      type: "function",
      function: {
        name: "add",
        description: "Adds two numbers",
        parameters: {
          type: "object",
          properties: { a: { type: "number" }, b: { type: "number" } },
          required: ["a", "b"],
        },
      },
    },
    {
      type: "function",
      function: {
        name: "now",
        description: "The current time",
        parameters: { type: "object", properties: {} },
      },
    },
  ]);
});

Deno.test("openai provider: streams and asks for usage in the stream", async () => {
  const [first] = await requestsOf();
  assert.equal(first.body.model, "test-model");
  assert.equal(first.body.stream, true);
  assert.deepEqual(first.body.stream_options, { include_usage: true });
});

Deno.test("openai provider: sends the tool calls and their results back in the next request", async () => {
  const requests = await requestsOf();
  assert.equal(requests.length, 2);
  assert.deepEqual(wireMessages(requests[1]), [
    { role: "system", content: "You are terse." },
    { role: "user", content: "Weather in Paris?" },
    {
      role: "assistant",
      content: "Let me look.",
      tool_calls: [{
        id: "call_w",
        type: "function",
        function: { name: "get_weather", arguments: '{"city":"Paris"}' },
      }],
    },
    { role: "tool", tool_call_id: "call_w", content: "22°C in Paris" },
  ]);
});

Deno.test("openai provider: sends the API key as a Bearer token", async () => {
  const requests = await requestsOf();
  for (const request of requests) {
    assert.equal(request.headers.get("authorization"), "Bearer sk-test");
  }
});

Deno.test("openai provider: sends maxOutputTokens as max_tokens to a custom base URL", async () => {
  const [first] = await requestsOf({ maxOutputTokens: 256, temperature: 0.2 });
  assert.equal(first.body.max_tokens, 256);
  assert.equal(first.body.max_completion_tokens, undefined);
  assert.equal(first.body.temperature, 0.2);
});

Deno.test("openai provider: sends maxOutputTokens as max_completion_tokens to OpenAI", async () => {
  await using server = startMockOpenAIServer({ replies: [{ text: "Hi." }] });
  const model = openaiModel({
    model: "gpt-4.1-mini",
    apiKey: "sk-test",
    // Stands in for api.openai.com: the request goes to the mock instead.
    fetch: (input, init) => fetch(String(input).replace(OPENAI_BASE_URL, server.url), init),
  });
  const result = await new Agent({ model, maxOutputTokens: 256 }).run("Hi");
  assert.equal(result.text, "Hi.");
  assert.equal(server.requests[0].body.max_completion_tokens, 256);
  assert.equal(server.requests[0].body.max_tokens, undefined);
});

Deno.test("resolveModel() refuses an unknown provider, listing the known ones", () => {
  assertConfigError(
    () => new Agent({ model: "acme/model-1", apiKey: "sk-test" }),
    new RegExp(
      `^Unknown provider "acme" in "acme/model-1"\\. Known providers: ${
        PROVIDER_NAMES.join(", ")
      }\\.`,
    ),
  );
});

Deno.test("resolveModel() refuses a model without a provider", () => {
  assertConfigError(
    () => new Agent({ model: "gpt-4", apiKey: "sk-test" }),
    /^Model "gpt-4" names no provider: write provider\/model/,
  );
  assertConfigError(() => resolveModel("openai/", { apiKey: "sk-test" }), /names no provider/);
});

Deno.test("resolveModel() refuses OpenAI's own URL without a key, naming OPENAI_API_KEY", () => {
  assertConfigError(
    () => resolveModel("openai/gpt-4.1-mini", { env: () => undefined }),
    /^No API key for openai: set OPENAI_API_KEY/,
  );
  assertConfigError(() => openaiModel({ model: "gpt-4.1-mini" }), /OPENAI_API_KEY/);
});

Deno.test("resolveModel() needs no key for a custom base URL", async () => {
  await using server = startMockOpenAIServer({ replies: [{ text: "Local hello." }] });
  const model = resolveModel("openai/llama3.2", { baseURL: server.url, env: () => undefined });
  assert.equal(model.id, "llama3.2");
  const result = await new Agent({ model }).run("Hi");
  assert.equal(result.status, "success", result.error?.message);
  assert.equal(result.text, "Local hello.");
  assert.equal(server.requests[0].body.model, "llama3.2");
});

Deno.test("resolveModel() reads the key and base URL from the environment", async () => {
  await using server = startMockOpenAIServer({ replies: [{ text: "Hello." }] });
  const env: Record<string, string> = { OPENAI_API_KEY: "sk-env", OPENAI_BASE_URL: server.url };
  const model = resolveModel("openai/test-model", { env: (name) => env[name] });
  const result = await new Agent({ model }).run("Hi");
  assert.equal(result.text, "Hello.");
  assert.equal(server.requests[0].headers.get("authorization"), "Bearer sk-env");
});
