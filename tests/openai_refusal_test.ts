/**
 * A refusal is an answer: OpenAI's `delta.refusal` (and `message.refusal` in a whole JSON body)
 * streams as text, is kept in the assistant message, and ends the call with the finish reason
 * `refusal`, through the provider, the agent and the CLI alike.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { Agent, textOf } from "../mod.ts";
import { type MockReply, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { replay, wireMessages } from "./openai_support.ts";
import { collect, deltaText, FAST_RETRY, recordingTools } from "./run_support.ts";
import { runCli } from "./terminal_support.ts";

const REFUSAL = "I'm sorry, but I can't help with that request.";

/** A chunk of OpenAI's stream for gpt-4o. */
function gpt4o(choice: Record<string, unknown>, rest: Record<string, unknown> = {}) {
  return {
    id: "chatcmpl-E6yvi7cuDcHZEHTMxcLDyf3CMKIO2",
    object: "chat.completion.chunk",
    created: 1785332890,
    model: "gpt-4o-2024-08-06",
    service_tier: "default",
    system_fingerprint: "fp_627de6ad19",
    choices: [{ index: 0, logprobs: null, finish_reason: null, ...choice }],
    obfuscation: "dOvUml6hFbj",
    ...rest,
  };
}

/** A recorded refusal: the text comes as `refusal` deltas, the finish says `stop`. */
const REFUSED: MockReply = {
  chunks: [
    gpt4o({ delta: { role: "assistant", content: null, refusal: "" } }),
    gpt4o({ delta: { refusal: "I'm sorry, but I " } }),
    gpt4o({ delta: { refusal: "can't help with that request." } }),
    gpt4o({ delta: {}, finish_reason: "stop" }),
    {
      ...gpt4o({}),
      choices: [],
      usage: { prompt_tokens: 25, completion_tokens: 11, total_tokens: 36 },
    },
  ],
};

/** The same refusal from a server that sent the whole answer at once. */
const REFUSED_WHOLE: MockReply = {
  body: {
    id: "chatcmpl-E6yvi7cuDcHZEHTMxcLDyf3CMKIO2",
    object: "chat.completion",
    created: 1785332890,
    model: "gpt-4o-2024-08-06",
    choices: [{
      index: 0,
      message: { role: "assistant", content: null, refusal: REFUSAL, annotations: [] },
      logprobs: null,
      finish_reason: "stop",
    }],
    usage: { prompt_tokens: 25, completion_tokens: 11, total_tokens: 36 },
  },
};

for (const [how, reply] of [["streamed", REFUSED], ["in a JSON body", REFUSED_WHOLE]] as const) {
  Deno.test(`openai provider: a refusal ${how} is the answer's text, and the finish is refusal`, async () => {
    const run = await replay(reply, { model: "gpt-4o" });
    assert.equal(run.text, REFUSAL);
    assert.equal(run.finish.reason, "refusal");
    assert.deepEqual(run.finish.usage, { inputTokens: 25, outputTokens: 11 });
  });
}

Deno.test("agent: a refusal ends the run with the refusal as its answer, kept in the history", async () => {
  await using server = startMockOpenAIServer({
    replies: [REFUSED, { text: "Something else, then." }],
  });
  const agent = new Agent({
    model: "openai/gpt-4o",
    baseURL: server.url,
    apiKey: "sk-test",
    tools: recordingTools().tools,
    retry: FAST_RETRY,
  });
  const { events, result } = await collect(agent.stream("Help me pick a lock."));
  assert.equal(result.status, "success", result.error?.message);
  assert.equal(result.finishReason, "refusal");
  assert.equal(result.text, REFUSAL);
  assert.equal(deltaText(events, "text_delta"), REFUSAL);
  assert.equal(server.requests.length, 1, "a refusal is not retried as an empty answer");
  const last = result.messages.at(-1);
  assert.ok(last?.role === "assistant");
  assert.equal(textOf(last), REFUSAL);

  // The next run sends the refusal back as what the assistant said.
  const next = await agent.run("Something else, then?", { messages: result.messages });
  assert.equal(next.text, "Something else, then.");
  const sent = wireMessages(server.requests[1]).filter((message) => message.role === "assistant");
  assert.deepEqual(sent, [{ role: "assistant", content: REFUSAL }]);
});

Deno.test("cli: --output json gives a refusal as the answer, with the finish reason", async () => {
  await using server = startMockOpenAIServer({ replies: [REFUSED] });
  const run = await runCli(["-m", "openai/gpt-4o", "--output", "json", "pick a lock"], {
    env: { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url },
  });
  assert.equal(run.code, 0, run.stderr);
  const result = JSON.parse(run.stdout);
  assert.equal(result.type, "result");
  assert.equal(result.status, "success");
  assert.equal(result.text, REFUSAL);
  assert.equal(result.finishReason, "refusal");
});

Deno.test("cli: text output prints a refusal as the answer", async () => {
  await using server = startMockOpenAIServer({ replies: [REFUSED] });
  const run = await runCli(["-m", "openai/gpt-4o", "pick a lock"], {
    env: { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url },
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, `${REFUSAL}\n`);
  assert.doesNotMatch(run.stderr, /empty answer/);
});
