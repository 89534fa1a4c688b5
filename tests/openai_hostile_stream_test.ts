/**
 * What a Chat Completions server sends cannot break a conversation: reasoning pieces by the
 * hundred thousand are read in linear time and not kept past a limit, a stored answer with as
 * many still goes back, and a tool call's provider data goes back only to the model that made
 * it. Each run goes through the real SDK to the loopback mock server.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { z } from "zod";
import { Agent, defineTool, type Message, type RunResult, userMessage } from "../mod.ts";
import { openaiModel } from "../lib/providers/mod.ts";
import { reasoningPieces } from "../lib/providers/reasoning_pieces.ts";
import { type MockReply, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { FAST_RETRY } from "./run_support.ts";

/** A Chat Completions chunk with one choice. */
function chunk(delta: Record<string, unknown>, finish: string | null = null) {
  return {
    id: "gen-1",
    object: "chat.completion.chunk",
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

const ls = defineTool({
  name: "ls",
  description: "List files",
  parameters: z.object({}),
  execute: () => "a.txt",
});

/** Runs `input` on `model` at `provider` against a mock server playing `replies`. */
async function run(
  replies: MockReply[],
  input: string | Message[],
  where: { provider?: string; model?: string } = {},
) {
  await using server = startMockOpenAIServer({ replies });
  const started = performance.now();
  const result: RunResult = await new Agent({
    model: openaiModel({
      provider: where.provider ?? "openrouter",
      model: where.model ?? "anthropic/claude-sonnet-4.5",
      baseURL: server.url,
      apiKey: "sk-test",
    }),
    tools: [ls],
    retry: FAST_RETRY,
  }).run(input);
  return { result, seconds: (performance.now() - started) / 1000, requests: server.requests };
}

/** The assistant messages of the requests' bodies. */
function sentAssistants(requests: { body: Record<string, unknown> }[]) {
  return requests.flatMap((request) =>
    (request.body.messages as Record<string, unknown>[]).filter((m) => m.role === "assistant")
  );
}

Deno.test("agent: a stream of 200,000 reasoning pieces breaks neither the run nor the next", async () => {
  // Pieces that never merge (types alternate, no index): one entry each, were they all kept.
  const pieces = Array.from({ length: 200_000 }, (_, i) => ({ type: i % 2 ? "a" : "b" }));
  const call = {
    index: 0,
    id: "call_1",
    type: "function",
    function: { name: "ls", arguments: "{}" },
  };
  const hostile = [
    chunk({ role: "assistant", reasoning_details: pieces }),
    chunk({ tool_calls: [call] }),
    chunk({}, "tool_calls"),
  ];
  const first = await run([{ chunks: hostile }, { text: "Listed." }], "List");
  assert.equal(first.result.status, "success", first.result.error?.message);
  assert.equal(first.result.text, "Listed.");
  assert.equal(first.requests.length, 2);
  // The pieces are not kept: neither sent back nor stored.
  assert.equal(JSON.stringify(first.result.messages).includes('"type":"a"'), false);
  const next = await run([{ text: "Still here." }], [
    ...first.result.messages,
    userMessage("And now?"),
  ]);
  assert.equal(next.result.status, "success", next.result.error?.message);
  assert.equal(next.result.text, "Still here.");
});

Deno.test("agent: 60,000 reasoning pieces with an index are read in linear time", async () => {
  const pieces = Array.from({ length: 60_000 }, (_, i) => ({
    type: "reasoning.text",
    text: "",
    index: i,
  }));
  const chunks = [];
  for (let i = 0; i < pieces.length; i += 1000) {
    chunks.push(chunk({ reasoning_details: pieces.slice(i, i + 1000) }));
  }
  chunks.push(chunk({ content: "Hi" }), chunk({}, "stop"));
  const first = await run([{ chunks }], "Hello");
  assert.equal(first.result.status, "success", first.result.error?.message);
  assert.equal(first.result.text, "Hi");
  // About 3 MB: a tenth of a second when linear, many seconds when each piece scans the list.
  assert.ok(first.seconds < 5, `the run took ${first.seconds.toFixed(1)} s`);
  const next = await run([{ text: "Bye" }], [...first.result.messages, userMessage("Again")]);
  assert.equal(next.result.status, "success", next.result.error?.message);
  assert.equal(sentAssistants(next.requests)[0].reasoning_details, undefined);
});

Deno.test("reasoningPieces() merges 100,000 deltas of 10,000 pieces in well under a second", () => {
  const piece = (index: number, text: string) => ({ type: "reasoning.text", text, index });
  const pieces = Array.from({ length: 10_000 }, (_, index) => piece(index, "x"));
  // Deltas of the first pieces: the farthest from the end of the list.
  const deltas = Array.from({ length: 90_000 }, (_, i) => piece(i % 1_000, "y"));
  const details = reasoningPieces();
  const started = performance.now();
  details.push(pieces);
  for (let i = 0; i < deltas.length; i += 1_000) details.push(deltas.slice(i, i + 1_000));
  const seconds = (performance.now() - started) / 1000;
  assert.equal(details.dropped, false);
  assert.equal(details.list.length, 10_000);
  assert.equal(details.list[0].text, "x" + "y".repeat(90));
  assert.equal(details.list[9_999].text, "x");
  // About a tenth of a second when linear; about ten when each delta scans the list.
  assert.ok(seconds < 2, `merging took ${seconds.toFixed(2)} s`);
});

Deno.test("reasoningPieces() keeps nothing past its limits, and still shows the text", () => {
  const many = reasoningPieces({ maxPieces: 3 });
  const shown = many.push(
    ["a", "b", "c", "d", "e"].map((text, index) => ({ type: "reasoning.text", text, index })),
  );
  assert.equal(shown, "abcde");
  assert.deepEqual(many.list, []);
  assert.equal(many.dropped, true);
  // Later deltas, even of a piece once kept, are not kept again.
  assert.equal(many.push([{ type: "reasoning.text", text: "f", index: 0 }]), "f");
  assert.deepEqual(many.list, []);

  const large = reasoningPieces({ maxChars: 1_000 });
  large.push([{ type: "reasoning.text", text: "a".repeat(600), index: 0 }]);
  assert.equal(large.list.length, 1);
  // The same piece growing past the limit.
  assert.equal(
    large.push([{ type: "reasoning.text", text: "b".repeat(600), index: 0 }]).length,
    600,
  );
  assert.equal(large.dropped, true);
  assert.deepEqual(large.list, []);
});

Deno.test("agent: a stored answer with 200,000 reasoning pieces still goes back to its model", async () => {
  const model = "anthropic/claude-sonnet-4.5";
  const details = Array.from({ length: 200_000 }, (_, i) => ({ type: "reasoning.text", index: i }));
  const history: Message[] = [
    userMessage("Think"),
    {
      role: "assistant",
      content: [
        {
          type: "reasoning",
          text: "",
          origin: `openai-chat:openrouter:${model}`,
          extra: { reasoning_details: details, thinking_blocks: details },
        },
        { type: "text", text: "Thought." },
      ],
    },
    userMessage("Go on"),
  ];
  const resumed = await run([{ text: "Going on." }], history, { model });
  assert.equal(resumed.result.status, "success", resumed.result.error?.message);
  const [sent] = sentAssistants(resumed.requests);
  assert.equal((sent.reasoning_details as unknown[]).length, 200_000);
  assert.equal((sent.thinking_blocks as unknown[]).length, 200_000);
});

Deno.test("agent: a Gemini thought signature on a tool call goes back to Gemini only", async () => {
  const signature = { google: { thought_signature: "CvQBAdHtim8=" } };
  const call = {
    index: 0,
    id: "call_1",
    type: "function",
    function: { name: "ls", arguments: "{}" },
    extra_content: signature,
  };
  const gemini = { provider: "gemini", model: "gemini-3-pro-preview" };
  const first = await run(
    [{ chunks: [chunk({ role: "assistant", tool_calls: [call] }), chunk({}, "tool_calls")] }, {
      text: "One file.",
    }],
    "List",
    gemini,
  );
  assert.equal(first.result.status, "success", first.result.error?.message);
  const made = first.result.messages.flatMap((m) => m.role === "assistant" ? m.content : [])
    .find((part) => part.type === "tool_call");
  assert.equal(made?.origin, "openai-chat:gemini:gemini-3-pro-preview");
  // Back to Gemini, within the run.
  const toGemini = sentAssistants(first.requests)[0].tool_calls as Record<string, unknown>[];
  assert.deepEqual(toGemini[0].extra_content, signature);

  const history = [...first.result.messages, userMessage("And now?")];
  const groq = await run([{ text: "Still one." }], history, { provider: "groq", model: "llama" });
  assert.equal(groq.result.status, "success", groq.result.error?.message);
  const toGroq = sentAssistants(groq.requests)[0].tool_calls as Record<string, unknown>[];
  assert.deepEqual(toGroq[0], {
    id: "call_1",
    type: "function",
    function: { name: "ls", arguments: "{}" },
  });
  // The same Gemini model, later, still gets it.
  const again = await run([{ text: "One." }], history, gemini);
  const toGeminiAgain = sentAssistants(again.requests)[0].tool_calls as Record<string, unknown>[];
  assert.deepEqual(toGeminiAgain[0].extra_content, signature);
});
