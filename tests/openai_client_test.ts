import "./isolated_env.ts";
import assert from "node:assert/strict";
import { openaiClient, openaiConnection } from "../lib/providers/openai_client.ts";
import { openaiModel } from "../lib/providers/mod.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";

const base = { baseURL: "http://127.0.0.1:9/v1", apiKey: "sk-one", timeoutMs: 60_000 };

Deno.test("openaiClient() gives models of one configuration one client", async () => {
  const first = await openaiClient({ ...base, headers: { "x-team": "a" } })();
  const again = await openaiClient({ ...base, headers: { "x-team": "a" } })();
  assert.equal(again.client, first.client);
  const connection = await openaiConnection({ model: "m", ...base, timeoutMs: undefined })
    .connect();
  const sameAsConnection = await openaiClient({ ...base, timeoutMs: 600_000 })();
  assert.equal(sameAsConnection.client, connection.client);
});

Deno.test("openaiClient() gives each other configuration a client of its own", async () => {
  const { client } = await openaiClient(base)();
  const others = [
    { ...base, apiKey: "sk-two" },
    { ...base, baseURL: "http://127.0.0.1:10/v1" },
    { ...base, timeoutMs: 30_000 },
    { ...base, headers: { "x-team": "b" } },
    { ...base, fetch: (input: RequestInfo | URL, init?: RequestInit) => fetch(input, init) },
  ];
  for (const options of others) {
    const other = await openaiClient(options)();
    assert.notEqual(other.client, client, JSON.stringify(options));
    assert.equal(other.client.apiKey, options.apiKey);
    assert.equal(other.client.baseURL, options.baseURL);
    assert.equal(other.client.timeout, options.timeoutMs);
  }
});

Deno.test("two models of one configuration each send their own requests through the shared client", async () => {
  await using server = startMockOpenAIServer({ replies: [{ text: "one" }, { text: "two" }] });
  const models = ["first-model", "second-model"].map((model) =>
    openaiModel({ model, baseURL: server.url, apiKey: "sk-shared" })
  );
  const texts: string[] = [];
  for (const model of models) {
    let text = "";
    for await (
      const event of model.stream({ messages: [{ role: "user", content: "hi" }], tools: [] })
    ) {
      if (event.type === "text_delta") text += event.text;
    }
    texts.push(text);
  }
  assert.deepEqual(texts, ["one", "two"]);
  assert.deepEqual(server.requests.map((request) => request.body.model), [
    "first-model",
    "second-model",
  ]);
  assert.deepEqual(server.requests.map((request) => request.headers.get("authorization")), [
    "Bearer sk-shared",
    "Bearer sk-shared",
  ]);
});
