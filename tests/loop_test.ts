import "./isolated_env.ts";
import assert from "node:assert/strict";
import { z } from "zod";
import {
  Agent,
  type AgentEvent,
  defineTool,
  type Message,
  ProviderError,
  runAgent,
  type RunAgentOptions,
  type RunResult,
  type ToolMessage,
} from "../mod.ts";
import { scriptedModel } from "../lib/testing/mod.ts";

/** Runs the loop to the end, collecting its events. */
async function collect(
  options: RunAgentOptions,
): Promise<{ events: AgentEvent[]; result: RunResult }> {
  const events: AgentEvent[] = [];
  const run = runAgent(options);
  let step = await run.next();
  while (!step.done) {
    events.push(step.value);
    step = await run.next();
  }
  return { events, result: step.value };
}

const echo = defineTool({
  name: "echo",
  description: "Echoes its text",
  parameters: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});

function toolMessages(messages: readonly Message[]): ToolMessage[] {
  return messages.filter((m): m is ToolMessage => m.role === "tool");
}

/** Every tool call in the history has exactly one result. */
function assertEveryCallAnswered(messages: readonly Message[]): void {
  const calls = messages.flatMap((m) =>
    m.role === "assistant" ? m.content.filter((p) => p.type === "tool_call").map((p) => p.id) : []
  );
  const answered = toolMessages(messages).map((m) => m.toolCallId);
  assert.deepEqual([...answered].sort(), [...calls].sort());
}

Deno.test("runAgent() streams start, turns and result in order for a plain answer", async () => {
  const model = scriptedModel([{
    text: ["Hel", "lo"],
    usage: { inputTokens: 7, outputTokens: 2 },
  }]);
  const { events, result } = await collect({ model, input: "Hi", sessionId: "s1", cwd: "/w" });
  assert.deepEqual(events.map((e) => e.type), [
    "start",
    "message",
    "turn_start",
    "text_delta",
    "text_delta",
    "message",
    "turn_end",
    "result",
  ]);
  assert.deepEqual(events[0], {
    type: "start",
    sessionId: "s1",
    model: "scripted/scripted-model",
    tools: [],
    cwd: "/w",
  });
  assert.equal(result.status, "success");
  assert.equal(result.text, "Hello");
  assert.equal(result.turns, 1);
  assert.deepEqual(result.usage, { inputTokens: 7, outputTokens: 2 });
  const last = events.at(-1)!;
  assert.equal(last.type, "result");
  assert.ok(!("messages" in last));
  assert.equal(last.type === "result" && last.sessionId, "s1");
  assert.ok(last.type === "result" && last.durationMs >= 0);
});

Deno.test("runAgent() runs tool calls and sends the results back to the model", async () => {
  const model = scriptedModel([
    {
      toolCalls: [{ name: "echo", input: { text: "ping" } }],
      usage: { inputTokens: 10, outputTokens: 3 },
    },
    { text: "pong", usage: { inputTokens: 20, outputTokens: 1 } },
  ]);
  const { events, result } = await collect({ model, input: "go", tools: [echo] });
  const call = events.find((e) => e.type === "tool_call");
  assert.deepEqual(call, {
    type: "tool_call",
    id: "call_1_0",
    name: "echo",
    input: { text: "ping" },
  });
  const done = events.find((e) => e.type === "tool_result");
  assert.equal(done?.type === "tool_result" && done.output, "ping");
  assert.equal(done?.type === "tool_result" && done.isError, false);
  const second = model.requests[1].messages;
  assert.deepEqual(second.at(-1), {
    role: "tool",
    toolCallId: "call_1_0",
    name: "echo",
    content: "ping",
    isError: false,
  });
  assert.equal(result.toolCalls, 1);
  assert.equal(result.turns, 2);
  assert.deepEqual(result.usage, { inputTokens: 30, outputTokens: 4 });
  const turnEnds = events.filter((e) => e.type === "turn_end");
  assert.deepEqual(turnEnds.map((e) => e.type === "turn_end" && e.usage.inputTokens), [10, 20]);
});

Deno.test("runAgent() sends the system prompt and tool definitions to the model", async () => {
  const model = scriptedModel([{ text: "ok" }]);
  await collect({
    model,
    input: "x",
    systemPrompt: "Be brief",
    tools: [echo],
    maxOutputTokens: 99,
  });
  const request = model.requests[0];
  assert.equal(request.system, "Be brief");
  assert.equal(request.maxOutputTokens, 99);
  assert.deepEqual(request.tools, [{
    name: "echo",
    description: "Echoes its text",
    inputSchema: {
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"],
    },
  }]);
});

Deno.test("runAgent() is stateless: history goes in unchanged and comes out extended", async () => {
  const history: Message[] = [
    { role: "user", content: "My name is Ada." },
    { role: "assistant", content: [{ type: "text", text: "Hello Ada." }] },
  ];
  const frozen = structuredClone(history);
  const model = scriptedModel([{ text: "Ada" }]);
  const { result } = await collect({ model, messages: history, input: "What is my name?" });
  assert.deepEqual(history, frozen);
  assert.equal(result.messages.length, 4);
  assert.deepEqual(result.messages.slice(0, 2), frozen);
  assert.deepEqual(model.requests[0].messages.map((m) => m.role), ["user", "assistant", "user"]);
});

Deno.test("Agent keeps a conversation going when messages are passed back in", async () => {
  const model = scriptedModel([{ text: "4" }, { text: "8" }]);
  const agent = new Agent({ model });
  const first = await agent.run("2+2?");
  const second = await agent.run("double it", { messages: first.messages });
  assert.equal(second.text, "8");
  assert.deepEqual(second.messages.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
  assert.equal(model.requests[1].messages.length, 3);
});

Deno.test("runAgent() keeps tool results in call order while tools run in parallel", async () => {
  const order: string[] = [];
  const slow = defineTool({
    name: "wait",
    description: "Waits",
    parameters: z.object({ ms: z.number(), label: z.string() }),
    execute: async ({ ms, label }) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      order.push(label);
      return label;
    },
  });
  const model = scriptedModel([
    {
      toolCalls: [
        { name: "wait", input: { ms: 60, label: "a" } },
        { name: "wait", input: { ms: 1, label: "b" } },
        { name: "wait", input: { ms: 30, label: "c" } },
      ],
    },
    { text: "done" },
  ]);
  const { events, result } = await collect({ model, input: "go", tools: [slow] });
  assert.deepEqual(order, ["b", "c", "a"]); // they overlapped: in turn, "a" would finish first
  // Events arrive as calls finish; history keeps the model's order.
  const finished = events.filter((e) => e.type === "tool_result").map((e) =>
    e.type === "tool_result" && e.output
  );
  assert.deepEqual(finished, ["b", "c", "a"]);
  assert.deepEqual(toolMessages(result.messages).map((m) => m.content), ["a", "b", "c"]);
});

Deno.test("runAgent() honours toolConcurrency and runs exclusive tools alone", async () => {
  let running = 0;
  let peak = 0;
  const log: string[] = [];
  const track = (name: string, exclusive = false) =>
    defineTool({
      name,
      description: name,
      parameters: z.object({ id: z.number() }),
      exclusive,
      execute: async ({ id }) => {
        running++;
        peak = Math.max(peak, running);
        log.push(`${name}${id}+`);
        await new Promise((resolve) => setTimeout(resolve, 10));
        log.push(`${name}${id}-`);
        running--;
        return "ok";
      },
    });
  const calls = [1, 2, 3, 4].map((id) => ({ name: "par", input: { id } }));
  const model = scriptedModel([{ toolCalls: calls }, { text: "ok" }]);
  await collect({ model, input: "x", tools: [track("par")], toolConcurrency: 2 });
  assert.equal(peak, 2);

  peak = 0;
  log.length = 0;
  const mixed = scriptedModel([{
    toolCalls: [
      { name: "par", input: { id: 1 } },
      { name: "par", input: { id: 2 } },
      { name: "solo", input: { id: 3 } },
      { name: "par", input: { id: 4 } },
    ],
  }, { text: "ok" }]);
  await collect({ model: mixed, input: "x", tools: [track("par"), track("solo", true)] });
  const soloStart = log.indexOf("solo3+");
  const soloEnd = log.indexOf("solo3-");
  assert.equal(soloEnd, soloStart + 1, `solo overlapped: ${log.join(" ")}`);
  assert.ok(log.indexOf("par1-") < soloStart && log.indexOf("par2-") < soloStart);
  assert.ok(log.indexOf("par4+") > soloEnd);
});

Deno.test("runAgent() runs tool calls whatever the finish reason says", async () => {
  for (const finishReason of ["stop", "length"] as const) {
    const model = scriptedModel([
      { toolCalls: [{ name: "echo", input: { text: "x" } }], finishReason },
      { text: "done" },
    ]);
    const { result } = await collect({ model, input: "go", tools: [echo] });
    assert.equal(result.toolCalls, 1, finishReason);
    assert.equal(toolMessages(result.messages)[0].content, "x");
    assert.equal(result.text, "done");
  }
});

Deno.test("runAgent() stops at maxTurns with status max_turns and a valid history", async () => {
  const model = scriptedModel(() => ({
    toolCalls: [{ name: "echo", input: { text: String(Math.random()) } }],
  }));
  const { result, events } = await collect({ model, input: "loop", tools: [echo], maxTurns: 3 });
  assert.equal(result.status, "max_turns");
  assert.equal(result.turns, 3);
  assert.equal(model.calls, 3);
  assertEveryCallAnswered(result.messages);
  assert.equal(events.at(-1)?.type === "result" && events.at(-1)?.type, "result");
});

Deno.test("runAgent() lets the caller allow more turns when the limit is reached", async () => {
  const model = scriptedModel([
    { toolCalls: [{ name: "echo", input: { text: "1" } }] },
    { toolCalls: [{ name: "echo", input: { text: "2" } }] },
    { text: "finished" },
  ]);
  const asked: number[] = [];
  const { result } = await collect({
    model,
    input: "go",
    tools: [echo],
    maxTurns: 1,
    onMaxTurns: ({ turns, messages }) => {
      asked.push(turns);
      assert.ok(messages.length > 0);
      return 1;
    },
  });
  assert.deepEqual(asked, [1, 2]);
  assert.equal(result.status, "success");
  assert.equal(result.text, "finished");
  assert.equal(result.turns, 3);
});

Deno.test("runAgent() with maxTurns 0 has no turn limit; the default limit is 50", async () => {
  let n = 0;
  const model = scriptedModel(() =>
    n++ < 60 ? { toolCalls: [{ name: "echo", input: { text: `${n}` } }] } : { text: "end" }
  );
  const { result } = await collect({ model, input: "go", tools: [echo], maxTurns: 0 });
  assert.equal(result.status, "success");
  assert.equal(result.turns, 61);

  n = 0;
  const capped = await collect({ model, input: "go", tools: [echo] });
  assert.equal(capped.result.status, "max_turns");
  assert.equal(capped.result.turns, 50);
  await assert.rejects(() => collect({ model, input: "go", maxTurns: -1 }), RangeError);
});

Deno.test("runAgent() aborted during a tool ends fast with every call answered", async () => {
  const controller = new AbortController();
  const hang = defineTool({
    name: "hang",
    description: "Never finishes on its own",
    parameters: z.object({}),
    execute: () => new Promise<string>(() => {}),
  });
  const model = scriptedModel([{
    toolCalls: [{ name: "hang" }, { name: "echo", input: { text: "x" } }],
  }]);
  setTimeout(() => controller.abort(), 30);
  const started = performance.now();
  const { result } = await collect({
    model,
    input: "go",
    tools: [hang, echo],
    signal: controller.signal,
  });
  assert.ok(performance.now() - started < 2_000);
  assert.equal(result.status, "aborted");
  assertEveryCallAnswered(result.messages);
  const hung = toolMessages(result.messages).find((m) => m.name === "hang")!;
  assert.equal(hung.isError, true);
  assert.match(hung.content, /cancel|abort/i);
});

Deno.test("runAgent() aborted while the model streams keeps the partial text and ends fast", async () => {
  const controller = new AbortController();
  // The model ignores the signal and would take 10 s: the run must not wait for it.
  const model = scriptedModel([{
    text: ["partial ", "answer ", "never"],
    deltaDelayMs: 40,
    toolCalls: [{ name: "echo", input: { text: "x" } }],
    ignoreSignal: true,
  }, { text: "unused", delayMs: 10_000, ignoreSignal: true }]);
  const events: AgentEvent[] = [];
  const started = performance.now();
  const run = runAgent({ model, input: "go", tools: [echo], signal: controller.signal });
  let step = await run.next();
  while (!step.done) {
    events.push(step.value);
    if (step.value.type === "text_delta" && step.value.text === "answer ") controller.abort();
    step = await run.next();
  }
  const result = step.value;
  assert.ok(performance.now() - started < 2_000);
  assert.equal(result.status, "aborted");
  assert.equal(result.text, "partial answer ");
  assert.equal(result.toolCalls, 0);
  assertEveryCallAnswered(result.messages);
  assert.equal(events.filter((e) => e.type === "tool_call").length, 0);
});

Deno.test("runAgent() aborted before it starts makes no model call", async () => {
  const model = scriptedModel([{ text: "x" }]);
  const { result } = await collect({ model, input: "go", signal: AbortSignal.abort() });
  assert.equal(result.status, "aborted");
  assert.equal(model.calls, 0);
});

Deno.test("runAgent() aborts running tools when the caller stops reading the stream", async () => {
  let toolSignal: AbortSignal | undefined;
  const watch = defineTool({
    name: "watch",
    description: "Waits for its signal",
    parameters: z.object({}),
    execute: (_input, ctx) => {
      toolSignal = ctx.signal;
      return new Promise<string>(() => {});
    },
  });
  const model = scriptedModel([{
    toolCalls: [{ name: "watch" }, { name: "echo", input: { text: "x" } }],
  }]);
  for await (const event of runAgent({ model, input: "go", tools: [watch, echo] })) {
    if (event.type === "tool_result") break; // echo is done; watch still runs
  }
  assert.ok(toolSignal);
  assert.equal(toolSignal?.aborted, true);
});

Deno.test("runAgent() tells the model on the third identical call with the same result and stops on the fourth", async () => {
  const same = { name: "echo", input: { text: "same" } };
  const model = scriptedModel([
    { toolCalls: [same] },
    { toolCalls: [same] },
    { toolCalls: [{ name: "echo", input: { text: "same" } }] },
    { toolCalls: [same] },
    { text: "never reached" },
  ]);
  const { events, result } = await collect({ model, input: "go", tools: [echo] });
  const outputs = toolMessages(result.messages).map((m) => m.content);
  assert.equal(outputs[0], "same");
  assert.equal(outputs[1], "same");
  assert.match(
    outputs[2],
    /^same\n\n\[You have made this exact call 3 times in a row with the same input and got the same result each time/,
  );
  assert.match(
    outputs[3],
    /^same\n\n\[The run stopped: "echo" was called 4 times in a row with the same input and gave the same result each time\.\]$/,
  );
  assert.equal(result.status, "error");
  assert.equal(result.error?.name, "ModelBehaviorError");
  assert.equal(model.calls, 4);
  assertEveryCallAnswered(result.messages);
  assert.deepEqual(
    events.filter((e) => e.type === "notice").map((e) => e.type === "notice" && e.kind),
    ["doom_loop"],
  );
});

Deno.test("runAgent() does not count calls with different inputs as a loop", async () => {
  const model = scriptedModel([
    ...[1, 2, 3, 4, 5].map((i) => ({
      toolCalls: [{ name: "echo", input: { text: i % 2 ? "a" : "b" } }],
    })),
    { text: "fine" },
  ]);
  const { result } = await collect({ model, input: "go", tools: [echo] });
  assert.equal(result.status, "success");
  assert.ok(toolMessages(result.messages).every((m) => !m.content.includes("[You have made")));
});

/** `ci_status`: the same call each time, its answer `pending` until the `ready`th call. */
function ciStatus(ready: number) {
  let polls = 0;
  return defineTool({
    name: "ci_status",
    description: "The status of the CI run",
    parameters: z.object({}),
    execute: () => ++polls >= ready ? "passed" : `pending (poll ${polls})`,
  });
}

Deno.test("runAgent() lets a model poll the same call while its result changes", async () => {
  const poll = { name: "ci_status", input: {} };
  const model = scriptedModel([...Array(8).fill({ toolCalls: [poll] }), { text: "CI passed." }]);
  const { events, result } = await collect({ model, input: "wait for CI", tools: [ciStatus(8)] });
  assert.equal(result.status, "success", result.error?.message);
  assert.equal(result.text, "CI passed.");
  assert.equal(result.toolCalls, 8);
  assert.equal(toolMessages(result.messages).at(-1)?.content, "passed");
  assert.ok(!events.some((e) => e.type === "notice"));
});

Deno.test("runAgent() counts repeats again from a result that changed", async () => {
  // pending 1, pending 2, then "passed" four times: the fourth "passed" stops the run.
  const poll = { name: "ci_status", input: {} };
  const model = scriptedModel([...Array(10).fill({ toolCalls: [poll] }), { text: "unused" }]);
  const { result } = await collect({ model, input: "wait", tools: [ciStatus(3)] });
  assert.equal(result.status, "error");
  assert.equal(result.toolCalls, 6);
  assert.match(result.error?.message ?? "", /called 4 times in a row with the same input/);
});

Deno.test("runAgent() takes the repeat thresholds as options, and false turns the guard off", async () => {
  const same = { name: "echo", input: { text: "same" } };
  const script = () => scriptedModel([...Array(6).fill({ toolCalls: [same] }), { text: "ok" }]);

  const strict = await collect({
    model: script(),
    input: "go",
    tools: [echo],
    repeatGuard: { warnAt: 2, stopAt: 3 },
  });
  assert.equal(strict.result.status, "error");
  assert.equal(strict.result.toolCalls, 3);
  assert.match(toolMessages(strict.result.messages)[1].content, /2 times in a row/);

  const lenient = await collect({
    model: script(),
    input: "go",
    tools: [echo],
    repeatGuard: { stopAt: 10 },
  });
  assert.equal(lenient.result.status, "success");
  assert.equal(lenient.result.toolCalls, 6);
  // Warned from the third call on (the default), never stopped.
  assert.equal(lenient.events.filter((e) => e.type === "notice").length, 4);

  const off = await collect({ model: script(), input: "go", tools: [echo], repeatGuard: false });
  assert.equal(off.result.status, "success");
  assert.ok(!off.events.some((e) => e.type === "notice"));

  for (const bad of [{ stopAt: 1 }, { warnAt: 2.5 }, { stopAt: Number.NaN }]) {
    await assert.rejects(
      () => collect({ model: script(), input: "go", tools: [echo], repeatGuard: bad }),
      (error: Error) =>
        error instanceof RangeError && /must be a whole number ≥ 2 .* got/.test(error.message),
    );
  }
});

Deno.test("runAgent() compares huge results by digest: one changed character is a new result", async () => {
  const big = "x".repeat(5_000_000);
  let calls = 0;
  const dump = defineTool({
    name: "dump",
    description: "A big output",
    parameters: z.object({}),
    // The fourth answer differs in its last character only.
    execute: () => ++calls === 4 ? big.slice(0, -1) + "y" : big,
  });
  const call = { name: "dump", input: {} };
  const model = scriptedModel([...Array(5).fill({ toolCalls: [call] }), { text: "unused" }]);
  const { result } = await collect({
    model,
    input: "go",
    tools: [dump],
    maxToolOutputChars: 10_000_000,
    compaction: false,
  });
  // big, big, big (warned), big…y (a new result), big: counted from 1 again, never stopped.
  assert.equal(result.status, "success");
  assert.equal(result.toolCalls, 5);
});

Deno.test("runAgent() nudges an answer that announces an action, at most twice", async () => {
  const model = scriptedModel([
    { text: "I will look at the files. Let me check the directory:" },
    { text: "Let me read the file now." },
    { text: "Let me try once more." },
    { text: "unused" },
  ]);
  const { events, result } = await collect({ model, input: "go", tools: [echo] });
  assert.equal(model.calls, 3);
  assert.equal(events.filter((e) => e.type === "notice").length, 2);
  assert.equal(result.status, "success");
  assert.equal(result.text, "Let me try once more.");
  const nudges = result.messages.filter((m) => m.role === "user").slice(1);
  assert.equal(nudges.length, 2);
  assert.match(nudges[0].role === "user" ? nudges[0].content : "", /did not call a tool/);
});

Deno.test("runAgent() nudge follow-up that calls a tool continues the run", async () => {
  const model = scriptedModel([
    { text: "Let me check:" },
    { toolCalls: [{ name: "echo", input: { text: "checked" } }] },
    { text: "All good." },
  ]);
  const { result } = await collect({
    model,
    input: "go",
    tools: [echo],
    nudge: { message: "Act now." },
  });
  assert.equal(result.text, "All good.");
  assert.deepEqual(model.requests[1].messages.at(-1), { role: "user", content: "Act now." });
});

Deno.test("runAgent() nudge can be turned off, and never fires without tools or on a cut answer", async () => {
  const off = scriptedModel([{ text: "Let me check:" }]);
  assert.equal(
    (await collect({ model: off, input: "x", tools: [echo], nudge: false })).result.turns,
    1,
  );
  const noTools = scriptedModel([{ text: "Let me check:" }]);
  assert.equal((await collect({ model: noTools, input: "x" })).result.turns, 1);
  const cut = scriptedModel([{ text: "Here is the list:", finishReason: "length" }]);
  assert.equal((await collect({ model: cut, input: "x", tools: [echo] })).result.turns, 1);
  const plain = scriptedModel([{ text: "The answer is 42." }]);
  assert.equal((await collect({ model: plain, input: "x", tools: [echo] })).result.turns, 1);
});

Deno.test("runAgent() retries a failed model call and voids the failed attempt's text", async () => {
  const model = scriptedModel([
    { text: ["Hello wor"], error: new ProviderError("stream cut", { retryable: true }) },
    { text: ["Hello world"] },
  ]);
  const { events, result } = await collect({ model, input: "hi", retry: { initialDelayMs: 1 } });
  assert.deepEqual(
    events.filter((e) => ["text_delta", "retry"].includes(e.type)).map((e) => e.type),
    [
      "text_delta",
      "retry",
      "text_delta",
    ],
  );
  const retry = events.find((e) => e.type === "retry");
  assert.equal(retry?.type === "retry" && retry.attempt, 1);
  assert.equal(retry?.type === "retry" && retry.error, "stream cut");
  assert.equal(result.text, "Hello world");
  assert.equal(result.turns, 1);
  const assistant = result.messages.filter((m) => m.role === "assistant");
  assert.equal(assistant.length, 1);
});

Deno.test("runAgent() waits as long as retry-after says, up to the cap", async () => {
  const model = scriptedModel([
    { error: new ProviderError("busy", { status: 429, retryable: true, retryAfterMs: 40 }) },
    { error: new ProviderError("busy", { status: 429, retryable: true, retryAfterMs: 90_000 }) },
    { text: "ok" },
  ]);
  const started = performance.now();
  const { events } = await collect({ model, input: "hi", retry: { maxRetryAfterMs: 60 } });
  const delays = events.filter((e) => e.type === "retry").map((e) =>
    e.type === "retry" && e.delayMs
  );
  assert.deepEqual(delays, [40, 60]);
  assert.ok(performance.now() - started >= 95);
});

Deno.test("runAgent() gives up after maxRetries and ends with status error", async () => {
  const fail = () => ({ error: new ProviderError("down", { status: 503, retryable: true }) });
  const model = scriptedModel([fail(), fail(), fail()]);
  const { events, result } = await collect({
    model,
    input: "hi",
    retry: { maxRetries: 2, initialDelayMs: 1 },
  });
  assert.equal(events.filter((e) => e.type === "retry").length, 2);
  assert.equal(result.status, "error");
  assert.deepEqual(result.error, { name: "ProviderError", message: "down" });
});

Deno.test("runAgent() does not retry errors that are not retryable", async () => {
  const model = scriptedModel([{ error: new ProviderError("bad request", { status: 400 }) }, {
    text: "x",
  }]);
  const { events, result } = await collect({ model, input: "hi" });
  assert.equal(events.filter((e) => e.type === "retry").length, 0);
  assert.equal(result.status, "error");
  assert.equal(model.calls, 1);
});

Deno.test("runAgent() treats a model stream without a finish as a retryable failure", async () => {
  let calls = 0;
  const model = {
    provider: "custom",
    id: "m",
    async *stream() {
      if (calls++ === 0) {
        yield { type: "text_delta" as const, text: "cut" };
        return;
      }
      yield { type: "text_delta" as const, text: "whole" };
      yield {
        type: "finish" as const,
        reason: "stop" as const,
        usage: { inputTokens: 1, outputTokens: 1 },
      };
    },
  };
  const { events, result } = await collect({ model, input: "hi", retry: { initialDelayMs: 1 } });
  const retry = events.find((e) => e.type === "retry");
  assert.match(retry?.type === "retry" ? retry.error : "", /ended the answer before it finished/);
  assert.equal(result.text, "whole");
});

Deno.test("runAgent() streams reasoning and keeps it in the assistant message", async () => {
  const model = scriptedModel([{ reasoning: ["think", "ing"], text: "answer" }]);
  const { events, result } = await collect({ model, input: "q" });
  assert.deepEqual(
    events.filter((e) => e.type === "reasoning_delta").map((e) =>
      e.type === "reasoning_delta" && e.text
    ),
    ["think", "ing"],
  );
  assert.deepEqual(result.messages[1], {
    role: "assistant",
    content: [{ type: "reasoning", text: "thinking" }, { type: "text", text: "answer" }],
  });
});

Deno.test("runAgent() reports a model that throws as status error, never as an exception", async () => {
  const model = scriptedModel([{ error: new TypeError("boom") }]);
  const { result, events } = await collect({ model, input: "x" });
  assert.equal(result.status, "error");
  assert.deepEqual(result.error, { name: "TypeError", message: "boom" });
  assert.equal(events.at(-1)?.type, "result");
});

Deno.test("runAgent() emits a message event for every message it adds", async () => {
  const model = scriptedModel([{ toolCalls: [{ name: "echo", input: { text: "a" } }] }, {
    text: "b",
  }]);
  const { events, result } = await collect({ model, input: "go", tools: [echo] });
  const added = events.filter((e) => e.type === "message").map((e) =>
    e.type === "message" && e.message
  );
  assert.deepEqual(added, result.messages);
});

Deno.test("runAgent() tries once more after an empty answer, then fails clearly", async () => {
  const empty = scriptedModel([{ text: "" }, { reasoning: "hmm" }, { text: "never" }]);
  const { events, result } = await collect({
    model: empty,
    input: "x",
    retry: { initialDelayMs: 1 },
  });
  assert.equal(events.filter((e) => e.type === "retry").length, 1);
  assert.equal(result.status, "error");
  assert.equal(result.error?.message, "scripted/scripted-model returned an empty answer");
  assert.equal(empty.calls, 2);

  const recovers = scriptedModel([{ text: " " }, { text: "here" }]);
  const second = await collect({ model: recovers, input: "x", retry: { initialDelayMs: 1 } });
  assert.equal(second.result.status, "success");
  assert.equal(second.result.text, "here");
});

Deno.test("runAgent() adds input typed during the run at the next turn boundary", async () => {
  const queue: Message[] = [];
  const model = scriptedModel([
    { toolCalls: [{ name: "echo", input: { text: "working" } }] },
    { text: "first answer" },
    { text: "second answer" },
  ]);
  const seen: string[] = [];
  for await (
    const event of runAgent({
      model,
      input: "start",
      tools: [echo],
      pendingInput: () => queue.splice(0),
    })
  ) {
    if (event.type === "tool_call") queue.push({ role: "user", content: "also check the tests" });
    if (event.type === "text_delta" && event.text === "first answer") {
      queue.push({ role: "user", content: "one more thing" });
    }
    if (event.type === "message" && event.message.role === "user") seen.push(event.message.content);
  }
  assert.deepEqual(seen, ["start", "also check the tests", "one more thing"]);
  // The typed line reached the model right after the tool result.
  assert.deepEqual(model.requests[1].messages.slice(-2).map((m) => m.role), ["tool", "user"]);
  assert.equal(model.calls, 3);
});
