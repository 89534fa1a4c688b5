import "./isolated_env.ts";
import assert from "node:assert/strict";
import { Agent, type Message, type ReasoningPart } from "../mod.ts";
import { openaiModel, openaiResponsesModel } from "../lib/providers/mod.ts";
import { fileSessionStore, resumeSession } from "../lib/session/mod.ts";
import { compactConversation, loadTokenCounter, messageTokens } from "../lib/compaction/mod.ts";
import {
  scriptedModel,
  startMockOpenAIServer,
  startMockResponsesServer,
} from "../lib/testing/mod.ts";
import { responsesItems } from "../lib/providers/responses_request.ts";
import { assertEveryCallAnswered, FAST_RETRY, recordingTools } from "./run_support.ts";
import { doneItems, inputItems, REASONING, recordingFetch } from "./responses_support.ts";

const ORIGIN = "openai-responses:openai:gpt-5";

/** Whatever only the Responses API made: ids of its items, encrypted reasoning, part data. */
const RESPONSES_DATA = /rs_|fc_|msg_|encrypted_content|gAAAAA|itemId|openai-responses/;

/** Saves `messages` as a new session and reads them back through the session store. */
async function saveAndResume(dir: string, messages: readonly Message[]): Promise<Message[]> {
  const store = fileSessionStore({ dir });
  const writer = await store.create({ cwd: dir, model: "openai/gpt-5" });
  const at = new Date().toISOString();
  for (const message of messages) await writer.append({ type: "message", message, at });
  await writer.close();
  const resumed = await resumeSession(store, writer.id);
  await resumed.writer.close();
  return resumed.messages;
}

Deno.test("responses provider: a conversation moves to Chat Completions and back through saved sessions, each API getting only its own data", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await using responses = startMockResponsesServer({
      replies: [
        {
          reasoning: ["Look it up."],
          toolCalls: [{ name: "get_weather", arguments: { city: "Paris" }, callId: "call_w" }],
        },
        { reasoning: ["Report it."], text: "22°C in Paris." },
        { reasoning: ["Sum up."], text: "Paris is warm; 2 + 3 = 5." },
      ],
    });
    await using chat = startMockOpenAIServer({
      replies: [
        {
          reasoning: "Add them.",
          toolCalls: [{ id: "call_a", name: "add", arguments: { a: 2, b: 3 } }],
        },
        { text: "5." },
      ],
    });
    const { tools } = recordingTools();
    const { fetch, exchanges } = recordingFetch();
    const gpt5 = new Agent({
      model: openaiResponsesModel({
        ...REASONING,
        model: "gpt-5",
        baseURL: responses.url,
        apiKey: "k",
        fetch,
      }),
      tools,
      retry: FAST_RETRY,
    });
    const mini = new Agent({
      model: openaiModel({ model: "gpt-4.1-mini", baseURL: chat.url, apiKey: "k" }),
      tools,
      retry: FAST_RETRY,
    });

    const first = await gpt5.run("Weather in Paris?");
    assert.equal(first.status, "success", first.error?.message);
    const saved = await saveAndResume(dir, first.messages);
    assert.deepEqual(saved, first.messages, "the session keeps each part's origin and data");

    const second = await mini.run("Now add 2 and 3.", { messages: saved });
    assert.equal(second.status, "success", second.error?.message);
    assert.equal(chat.requests.length, 2);
    for (const request of chat.requests) {
      assert.doesNotMatch(JSON.stringify(request.body), RESPONSES_DATA);
    }

    const back = await saveAndResume(dir, second.messages);
    const third = await gpt5.run("Sum up.", { messages: back });
    assert.equal(third.status, "success", third.error?.message);
    assert.equal(third.text, "Paris is warm; 2 + 3 = 5.");
    assertEveryCallAnswered(third.messages);

    // The last request carries this model's two reasoning items as they came, and nothing of
    // Chat Completions' reasoning; Chat's call goes as a plain function call.
    const issued = (await Promise.all(exchanges.slice(0, 2).map((e) => e.response)))
      .flatMap(doneItems).filter((item) => JSON.parse(item).type === "reasoning");
    const input = inputItems(responses.requests[2]);
    const reasoning = input.filter((item) => item.type === "reasoning");
    assert.deepEqual(reasoning.map((item) => JSON.stringify(item)), issued);
    let at = 0;
    for (const item of issued) {
      at = exchanges[2].request.indexOf(item, at);
      assert.ok(at >= 0, "each reasoning item goes back byte for byte, in order");
    }
    assert.ok(!JSON.stringify(input).includes("Add them."), "Chat's reasoning stays with Chat");
    const chatCall = input.find((item) =>
      item.type === "function_call" && item.call_id === "call_a"
    );
    assert.deepEqual(chatCall, {
      type: "function_call",
      call_id: "call_a",
      name: "add",
      arguments: JSON.stringify({ a: 2, b: 3 }),
    });
    const chatText = input.find((item) =>
      item.type === "message" && JSON.stringify(item.content).includes('"5."')
    );
    assert.equal(chatText?.id, undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("responses provider: another Responses model gets the text and calls without the reasoning or item ids", async () => {
  await using server = startMockResponsesServer({
    replies: [
      { reasoning: ["Hm."], text: "Checking.", toolCalls: [{ name: "now", callId: "call_n" }] },
      { text: "Noon." },
      { text: "Still noon." },
    ],
  });
  const { tools } = recordingTools();
  const model = (id: string) =>
    openaiResponsesModel({ ...REASONING, model: id, baseURL: server.url, apiKey: "k" });
  const first = await new Agent({ model: model("gpt-5"), tools }).run("Time?");
  assert.equal(first.status, "success", first.error?.message);
  const reasoning = first.messages[1].role === "assistant" &&
    first.messages[1].content.find((part): part is ReasoningPart => part.type === "reasoning");
  assert.equal(reasoning && reasoning.origin, ORIGIN);

  const other = await new Agent({ model: model("gpt-5-mini"), tools })
    .run("Again?", { messages: first.messages });
  assert.equal(other.status, "success", other.error?.message);
  const input = inputItems(server.requests[2]);
  assert.deepEqual(input.filter((item) => item.type === "reasoning"), []);
  assert.doesNotMatch(JSON.stringify(input), /rs_|fc_|msg_|encrypted_content/);
  assert.ok(input.some((item) => item.type === "function_call" && item.call_id === "call_n"));
});

Deno.test("responses provider: Anthropic's thinking and another origin's data never reach the Responses API", () => {
  const items = responsesItems({
    role: "assistant",
    content: [
      { type: "reasoning", text: "Thinking", signature: "sig", origin: "anthropic:anthropic" },
      { type: "reasoning", text: "", origin: "openai-responses:openai:o3", extra: { item: {} } },
      { type: "text", text: "Hi", origin: "openai-responses:openai:o3", extra: { id: "msg_1" } },
      { type: "tool_call", id: "toolu_1", name: "ls", input: { path: "." }, origin: "x" },
    ],
  }, ORIGIN);
  assert.deepEqual(items, [
    {
      type: "message",
      role: "assistant",
      content: [{ type: "output_text", text: "Hi", annotations: [] }],
      status: "completed",
    },
    { type: "function_call", call_id: "toolu_1", name: "ls", arguments: '{"path":"."}' },
  ]);
});

Deno.test("responses provider: after a compaction, the summarised turns' reasoning is gone and the kept turns' goes back", async () => {
  await using server = startMockResponsesServer({
    replies: (body) => {
      const turn = (body.input as { type?: string }[]).filter((item) =>
        item.type === "function_call_output"
      ).length;
      return turn < 4
        ? {
          reasoning: [`Turn ${turn}.`],
          toolCalls: [{ name: "add", arguments: { a: turn, b: 1 } }],
        }
        : { reasoning: ["Report."], text: `Added ${turn} times.` };
    },
  });
  const { tools } = recordingTools();
  const model = openaiResponsesModel({
    ...REASONING,
    model: "gpt-5",
    baseURL: server.url,
    apiKey: "k",
  });
  const first = await new Agent({ model, tools, retry: FAST_RETRY }).run("Add four times.");
  assert.equal(first.status, "success", first.error?.message);
  const issued = first.messages.flatMap((message) =>
    message.role === "assistant"
      ? message.content.filter((part): part is ReasoningPart => part.type === "reasoning")
      : []
  ).map((part) => (part.extra?.item as { id: string }).id);
  assert.equal(issued.length, 5);

  // Summarise all but the last exchange (the last call, its result and the answer).
  const counter = await loadTokenCounter();
  const kept = first.messages.slice(-3);
  const { state } = await compactConversation({
    model: scriptedModel([{ text: "## Goal\nAdd four times; three adds done." }]),
    messages: first.messages,
    keepRecentTokens: kept.reduce((sum, message) => sum + messageTokens(message, counter), 0) + 1,
  });
  assert.ok(state.replaces > 0 && state.replaces < first.messages.length, `${state.replaces}`);

  const before = server.requests.length;
  const next = await new Agent({ model, tools, retry: FAST_RETRY }).run("Once more?", {
    messages: first.messages,
    compactionState: state,
  });
  assert.equal(next.status, "success", next.error?.message);
  const sent = inputItems(server.requests[before]).filter((item) => item.type === "reasoning")
    .map((item) => item.id);
  const keptIds = first.messages.slice(state.replaces).flatMap((message) =>
    message.role === "assistant"
      ? message.content.filter((part): part is ReasoningPart => part.type === "reasoning")
      : []
  ).map((part) => (part.extra?.item as { id: string }).id);
  assert.ok(keptIds.length > 0 && keptIds.length < issued.length);
  assert.deepEqual(sent, keptIds);
});

Deno.test("responses provider: reasoning another server or key encrypted is left out once refused, and the conversation goes on", async () => {
  await using before = startMockResponsesServer({
    replies: [
      { reasoning: ["Look."], toolCalls: [{ name: "now", callId: "call_1" }] },
      { reasoning: ["Tell."], text: "Noon." },
    ],
  });
  await using after = startMockResponsesServer({
    replies: (body) => {
      const outputs = (body.input as { type?: string }[]).filter((item) =>
        item.type === "function_call_output"
      ).length;
      return outputs < 2
        ? { reasoning: ["Again."], toolCalls: [{ name: "now", callId: "call_2" }] }
        : { reasoning: ["Done."], text: "Still noon." };
    },
  });
  const { tools } = recordingTools();
  const model = (baseURL: string) =>
    openaiResponsesModel({ ...REASONING, model: "gpt-5", baseURL, apiKey: "k" });
  const first = await new Agent({ model: model(before.url), tools }).run("Time?");
  assert.equal(first.status, "success", first.error?.message);

  // The same model at another server: it cannot read the first server's reasoning.
  const next = await new Agent({ model: model(after.url), tools, retry: FAST_RETRY }).run(
    "And now?",
    { messages: first.messages },
  );
  assert.equal(next.status, "success", next.error?.message);
  assert.equal(next.text, "Still noon.");
  const kinds = (index: number) =>
    inputItems(after.requests[index]).filter((item) => item.type === "reasoning").length;
  // Refused with the old reasoning, sent again without it, and never sent it again.
  assert.equal(after.requests.length, 3);
  assert.equal(kinds(0), 2);
  assert.equal(kinds(1), 0);
  assert.equal(kinds(2), 1, "only the new server's own reasoning goes back");
});
