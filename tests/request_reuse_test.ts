/**
 * Request bodies reuse each message's wire shape from one request to the next: what was made for
 * one server's habits never reaches another, through the real SDK and the loopback server.
 */

import assert from "node:assert/strict";
import type { Message, ModelRequest } from "../mod.ts";
import { openaiModel, openaiResponsesModel } from "../lib/providers/mod.ts";
import { startMockOpenAIServer, startMockResponsesServer } from "../lib/testing/mod.ts";
import { wireMessages } from "./openai_support.ts";

Deno.test("openai provider: one history sent to a server that wants 9-character call ids and to one that does not gets each its own ids", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ text: "ok" }) });
  const history: Message[] = [
    { role: "user", content: "List the files." },
    {
      role: "assistant",
      content: [{ type: "tool_call", id: "call_0fypS1hVXlong", name: "ls", input: {} }],
    },
    { role: "tool", toolCallId: "call_0fypS1hVXlong", name: "ls", content: "a.ts", isError: false },
  ];
  const mistral = openaiModel({ model: "m", baseURL: server.url, toolCallIds: "alnum9" });
  const plain = openaiModel({ model: "m", baseURL: server.url });
  const request: ModelRequest = { messages: history, tools: [] };
  for (const model of [mistral, plain, mistral]) {
    for await (const _ of model.stream(request)) { /* drained */ }
  }
  const ids = server.requests.map((sent) => {
    const [, assistant, tool] = wireMessages(sent);
    assert.equal(assistant.tool_calls?.[0].id, tool.tool_call_id);
    return tool.tool_call_id;
  });
  assert.match(ids[0]!, /^[a-zA-Z0-9]{9}$/);
  assert.deepEqual(ids, [ids[0], "call_0fypS1hVXlong", ids[0]]);
});

Deno.test("openai provider: a history changed in place between requests is sent as it is now", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ text: "ok" }) });
  const model = openaiModel({ model: "m", baseURL: server.url });
  const history: Message[] = [{ role: "user", content: "my password is hunter2" }];
  for await (const _ of model.stream({ messages: history, tools: [] })) { /* drained */ }
  (history[0] as { content: string }).content = "my password is [redacted]";
  for await (const _ of model.stream({ messages: history, tools: [] })) { /* drained */ }
  (history[0] as { content: string }).content = "my password is [gone]";
  for await (const _ of model.stream({ messages: history, tools: [] })) { /* drained */ }
  const sent = server.requests.map((request) => JSON.stringify(wireMessages(request)));
  assert.match(sent[1], /\[redacted\]/);
  assert.doesNotMatch(sent[2], /hunter2|\[redacted\]/);
  assert.match(sent[2], /\[gone\]/);
});

Deno.test("openai-responses provider: a history changed in place between requests is sent as it is now", async () => {
  await using server = startMockResponsesServer({ replies: () => ({ text: "ok" }) });
  const model = openaiResponsesModel({ model: "m", baseURL: server.url });
  const message: Message = { role: "user", content: "my password is hunter2" };
  for await (const _ of model.stream({ messages: [message], tools: [] })) { /* drained */ }
  (message as { content: string }).content = "my password is [redacted]";
  for await (const _ of model.stream({ messages: [message], tools: [] })) { /* drained */ }
  const second = JSON.stringify(server.requests[1].body);
  assert.doesNotMatch(second, /hunter2/);
  assert.match(second, /\[redacted\]/);
});
