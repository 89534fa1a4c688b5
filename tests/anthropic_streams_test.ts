/**
 * Streams shaped like those real Anthropic servers send, replayed through the loopback server
 * and the real SDK: a message whose content comes whole in `message_start`, a second
 * `message_start` spliced into a message, turns of server tools only, and usage split into
 * iterations by server-side compaction.
 *
 * @module
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import type { MockAnthropicEvent } from "../lib/testing/mod.ts";
import { runAnthropic, wireTurns } from "./anthropic_support.ts";
import { deltaText, eventsOf } from "./run_support.ts";

/** A `message_start` as the API sends it; `message` fields replace the defaults. */
function messageStart(message: Record<string, unknown> = {}): MockAnthropicEvent {
  return {
    type: "message_start",
    message: {
      id: "msg_01",
      type: "message",
      role: "assistant",
      model: "claude-test",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: 10,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 1,
      },
      ...message,
    },
  };
}

/** The events of one streamed block. */
function block(index: number, start: unknown, deltas: unknown[] = []): MockAnthropicEvent[] {
  return [
    { type: "content_block_start", index, content_block: start },
    ...deltas.map((delta) => ({ type: "content_block_delta", index, delta })),
    { type: "content_block_stop", index },
  ];
}

/** `message_delta` and `message_stop`. */
function end(
  stopReason: string,
  usage: Record<string, unknown> = { output_tokens: 5 },
): MockAnthropicEvent[] {
  return [
    { type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage },
    { type: "message_stop" },
  ];
}

const CODE_RESULT = {
  type: "code_execution_tool_result",
  tool_use_id: "srvtoolu_01",
  content: {
    type: "code_execution_result",
    stdout: "rolled 4\n",
    stderr: "",
    return_code: 0,
    content: [],
  },
};

Deno.test("anthropic provider: reads a tool call and its caller that come whole in message_start", async () => {
  // Programmatic tool calling: the code running at the provider calls a client tool, and the
  // message carries its blocks and stop reason in message_start, with no block events.
  const call = {
    type: "tool_use",
    id: "toolu_pre",
    name: "get_weather",
    input: { city: "Lyon" },
    caller: { type: "code_execution_20250825", tool_id: "srvtoolu_01" },
  };
  const run = await runAnthropic([
    {
      events: [
        messageStart({
          content: [CODE_RESULT, call],
          container: { id: "container_01", expires_at: "2026-12-01T00:00:00Z" },
          stop_reason: "tool_use",
          usage: { input_tokens: 0, output_tokens: 0, server_tool_use: { web_search_requests: 0 } },
        }),
        { type: "message_stop" },
      ],
    },
    { text: "Done." },
  ]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(eventsOf(run.events, "retry"), []);
  assert.deepEqual(run.received, [{
    id: "toolu_pre",
    name: "get_weather",
    input: { city: "Lyon" },
  }]);
  assert.equal(run.requests.length, 2);
  // The next request gives the provider its blocks back as they came, the caller kept, and
  // names the container the code runs in.
  assert.deepEqual(wireTurns(run.requests[1])[1], {
    role: "assistant",
    content: [CODE_RESULT, call],
  });
  assert.equal(run.requests[1].body.container, "container_01");
  assert.equal(run.result.text, "Done.");
});

Deno.test("anthropic provider: reads thinking, text and the stop reason that come in message_start", async () => {
  const run = await runAnthropic([{
    events: [
      messageStart({
        content: [
          { type: "thinking", thinking: "Short one.", signature: "sig_pre" },
          { type: "text", text: "All done already." },
        ],
        stop_reason: "max_tokens",
      }),
      { type: "message_stop" },
    ],
  }]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.equal(run.requests.length, 1);
  assert.equal(run.result.text, "All done already.");
  assert.equal(run.result.finishReason, "length");
  assert.equal(deltaText(run.events, "reasoning_delta"), "Short one.");
  const answer = run.result.messages.at(-1);
  assert.deepEqual(answer?.role === "assistant" && answer.content[0], {
    type: "reasoning",
    text: "Short one.",
    signature: "sig_pre",
  });
});

Deno.test("anthropic provider: a second message spliced into a message is a retried error, not a merge", async () => {
  const spliced: MockAnthropicEvent[] = [
    messageStart({ id: "msg_first" }),
    ...block(0, { type: "thinking", thinking: "", signature: "" }, [
      { type: "thinking_delta", thinking: "I will call the tool." },
      { type: "signature_delta", signature: "sig-first" },
    ]),
    {
      type: "content_block_start",
      index: 1,
      content_block: { type: "tool_use", id: "toolu_first", name: "get_weather", input: {} },
    },
    {
      type: "content_block_delta",
      index: 1,
      delta: { type: "input_json_delta", partial_json: '{"city":"Spa' },
    },
    messageStart({ id: "msg_second" }),
    ...block(0, { type: "thinking", thinking: "", signature: "" }, [
      { type: "thinking_delta", thinking: "Let me call the tool." },
      { type: "signature_delta", signature: "sig-second" },
    ]),
    ...block(1, { type: "tool_use", id: "toolu_second", name: "get_weather", input: {} }, [
      { type: "input_json_delta", partial_json: '{"city":"Ghent"}' },
    ]),
    ...end("tool_use"),
  ];
  const run = await runAnthropic([
    { events: spliced },
    { toolCalls: [{ id: "toolu_clean", name: "get_weather", input: { city: "Spa" } }] },
    { text: "Sunny." },
  ]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  const retries = eventsOf(run.events, "retry");
  assert.equal(retries.length, 1);
  assert.match(retries[0].error, /second message \(msg_second\) .*msg_first/);
  // Only the clean answer's call ran; nothing of the spliced one reached a tool.
  assert.deepEqual(run.received, [{
    id: "toolu_clean",
    name: "get_weather",
    input: { city: "Spa" },
  }]);
  assert.equal(run.result.text, "Sunny.");
});

Deno.test("anthropic provider: a message_start repeated before any block is the same message, read once", async () => {
  const run = await runAnthropic([{
    events: [
      messageStart({ id: "msg_dup", usage: { input_tokens: 10, output_tokens: 1 } }),
      messageStart({ id: "msg_dup", usage: { input_tokens: 99, output_tokens: 1 } }),
      ...block(0, { type: "text", text: "" }, [{ type: "text_delta", text: "ok" }]),
      ...end("end_turn", { output_tokens: 2 }),
    ],
  }]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.equal(run.requests.length, 1);
  assert.equal(run.result.text, "ok");
  assert.deepEqual(run.result.usage, { inputTokens: 10, outputTokens: 2 });
});

const SEARCH_RESULT = {
  type: "web_search_tool_result",
  tool_use_id: "srvtoolu_ws",
  content: [{
    type: "web_search_result",
    title: "Deno 2.9 released",
    url: "https://deno.com/blog/v2.9",
    encrypted_content: "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2MSDMuLeft",
    page_age: "2 days ago",
  }],
};

/** A turn of a web search and its result only, the input streamed in pieces. */
const SEARCH_ONLY: MockAnthropicEvent[] = [
  messageStart(),
  ...block(0, { type: "server_tool_use", id: "srvtoolu_ws", name: "web_search", input: {} }, [
    { type: "input_json_delta", partial_json: "" },
    { type: "input_json_delta", partial_json: '{"query": "deno' },
    { type: "input_json_delta", partial_json: ' 2.9"}' },
  ]),
  ...block(1, SEARCH_RESULT),
  ...end("end_turn", { output_tokens: 40, server_tool_use: { web_search_requests: 1 } }),
];

Deno.test("anthropic provider: a turn of server tools only is an answer, kept and sent back unchanged", async () => {
  const first = await runAnthropic([{ events: SEARCH_ONLY }]);
  assert.equal(first.result.status, "success", first.result.error?.message);
  assert.equal(first.requests.length, 1);
  assert.deepEqual(eventsOf(first.events, "retry"), []);
  assert.equal(first.result.text, "");
  const use = {
    type: "server_tool_use",
    id: "srvtoolu_ws",
    name: "web_search",
    input: { query: "deno 2.9" },
  };
  const answer = first.result.messages.at(-1);
  assert.deepEqual(answer, {
    role: "assistant",
    content: [
      { type: "text", text: "", origin: "anthropic:anthropic", extra: { block: use } },
      { type: "text", text: "", origin: "anthropic:anthropic", extra: { block: SEARCH_RESULT } },
    ],
  });

  // The next turn sends both blocks back as they came, after the user's first message.
  const next = await runAnthropic([{ text: "Deno 2.9 is out." }], {
    messages: first.result.messages,
    input: "And?",
  });
  assert.equal(next.result.status, "success", next.result.error?.message);
  const turns = wireTurns(next.requests[0]);
  assert.deepEqual(turns[1], { role: "assistant", content: [use, SEARCH_RESULT] });
  assert.equal(next.result.text, "Deno 2.9 is out.");
});

Deno.test("anthropic provider: a turn paused amid server tools goes on from its blocks", async () => {
  const paused = [...SEARCH_ONLY.slice(0, -2), ...end("pause_turn")];
  const run = await runAnthropic([{ events: paused }, { text: "Deno 2.9 is out." }]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.equal(run.requests.length, 2);
  // The paused answer ends the request, for the provider to continue it.
  const last = wireTurns(run.requests[1]).at(-1);
  assert.equal(last?.role, "assistant");
  assert.deepEqual(last?.content.map((block) => block.type), [
    "server_tool_use",
    "web_search_tool_result",
  ]);
  assert.deepEqual(last?.content[0].input, { query: "deno 2.9" });
  assert.equal(run.result.text, "Deno 2.9 is out.");
});

Deno.test("anthropic provider: server tool blocks of another provider are not sent", async () => {
  const run = await runAnthropic([{ text: "Hi." }], {
    messages: [
      { role: "user", content: "Search" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "", origin: "anthropic:gateway", extra: { block: SEARCH_RESULT } },
          { type: "text", text: "Found it." },
        ],
      },
    ],
  });
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(wireTurns(run.requests[0])[1], {
    role: "assistant",
    content: [{ type: "text", text: "Found it." }],
  });
});

Deno.test("anthropic provider: usage iterations of server-side compaction are added up", async () => {
  const iteration = (type: string, input: number, output: number) => ({
    type,
    input_tokens: input,
    output_tokens: output,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
  });
  const run = await runAnthropic([{
    events: [
      messageStart({ usage: { input_tokens: 60385, output_tokens: 5 } }),
      ...block(0, { type: "text", text: "" }, [{ type: "text_delta", text: "Summary done." }]),
      ...end("end_turn", {
        input_tokens: 612,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 2819,
        iterations: [iteration("compaction", 60385, 522), iteration("message", 612, 2819)],
      }),
    ],
  }]);
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.deepEqual(eventsOf(run.events, "turn_end")[0].usage, {
    inputTokens: 60997,
    outputTokens: 3341,
  });
  assert.deepEqual(run.result.usage, { inputTokens: 60997, outputTokens: 3341 });
});
