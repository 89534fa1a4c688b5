import "./isolated_env.ts";
import assert from "node:assert/strict";
import { z } from "zod";
import {
  type AgentEvent,
  ContextLengthError,
  defineTool,
  type Message,
  type ModelInfo,
  type ModelRequest,
  ProviderError,
  runAgent,
  type RunAgentOptions,
  type RunResult,
} from "../mod.ts";
import {
  compactConversation,
  compactionLimits,
  loadTokenCounter,
  messageTokens,
  requestTokens,
  type TokenCounter,
} from "../lib/compaction/mod.ts";
import {
  SUMMARY_MARKER,
  SUMMARY_SECTIONS,
  SUMMARY_SYSTEM_PROMPT,
} from "../lib/compaction/summary.ts";
import { type ScriptedModel, scriptedModel, type ScriptedStep } from "../lib/testing/mod.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { summarize } from "../lib/compaction/summary.ts";
import { ESTIMATE_COUNTER } from "../lib/compaction/tokens.ts";
import { collect as collectStream, eventsOf, FAST_RETRY, recordingTools } from "./run_support.ts";

const WINDOW: ModelInfo = { contextWindow: 4_000, maxOutputTokens: 500 };
const BUDGET = 3_500; // the window less the reserve: the model's 500 output tokens
const counter: TokenCounter = await loadTokenCounter();

/** What the `read` tool returns for a path: about 1,300 characters of code-like lines. */
function fileText(path: string): string {
  return Array.from(
    { length: 30 },
    (_, i) => `export const v${i} = compute(${i}, "${path}"); // step ${i}`,
  ).join("\n");
}

const read = defineTool({
  name: "read",
  description: "Reads a file",
  parameters: z.object({ path: z.string() }),
  execute: ({ path }) => fileText(path),
});

function isSummaryRequest(request: ModelRequest): boolean {
  return request.system === SUMMARY_SYSTEM_PROMPT;
}

function promptOf(request: ModelRequest): string {
  const message = request.messages[0];
  assert.equal(message.role, "user");
  return message.content;
}

/** A scripted summarizer answer: every section, numbered so that folding can be seen. */
function summaryStep(n: number): ScriptedStep {
  return {
    text: `## Goal\nRead every file.\n## Instructions\nNone.\n## Discoveries\nsummary #${n}\n` +
      `## Work done\nRead files.\n## Files touched\nNone.\n## Next steps\nRead on.`,
    usage: { inputTokens: 1_000, outputTokens: 100 },
  };
}

/**
 * A model with a 4,000-token window that reads `turns` files, one per turn, then answers; it
 * answers summary requests with {@link summaryStep}. `onTurn` may replace a turn's step.
 */
function readingModel(
  turns: number,
  onTurn?: (turn: number, request: ModelRequest) => ScriptedStep | undefined,
): ScriptedModel {
  let turn = 0;
  let summaries = 0;
  const model = scriptedModel((request) => {
    if (isSummaryRequest(request)) return summaryStep(++summaries);
    turn++;
    const step = onTurn?.(turn, request);
    if (step) return step;
    return turn <= turns
      ? { toolCalls: [{ name: "read", input: { path: `src/file${turn}.ts` } }] }
      : { text: "All files read." };
  });
  return Object.assign(model, { info: WINDOW });
}

async function collect(
  options: RunAgentOptions,
): Promise<{ events: AgentEvent[]; result: RunResult }> {
  return await collectStream(runAgent(options));
}

function mainRequests(model: ScriptedModel): ModelRequest[] {
  return model.requests.filter((request) => !isSummaryRequest(request));
}

function isDropped(message: Message): boolean {
  return message.role === "tool" && message.content.includes("dropped to save context");
}

function isSummary(message: Message): boolean {
  return message.role === "user" && message.content.startsWith(SUMMARY_MARKER);
}

/** No tool result without its call before it, and no call without its results. */
function assertPairsWhole(messages: readonly Message[], where: string): void {
  const open = new Set<string>();
  for (const [index, message] of messages.entries()) {
    if (message.role === "assistant") {
      assert.equal(open.size, 0, `${where}: calls before message ${index} have no result`);
      for (const part of message.content) if (part.type === "tool_call") open.add(part.id);
    } else if (message.role === "tool") {
      assert.ok(open.delete(message.toolCallId), `${where}: result ${index} has no call before it`);
    } else {
      assert.equal(open.size, 0, `${where}: calls before message ${index} have no result`);
    }
  }
}

Deno.test("compaction: a long run stays inside a small window, dropping tool outputs first, then summarizing", async () => {
  const model = readingModel(100);
  const { events, result } = await collect({
    model,
    input: "Read every file under src/.",
    systemPrompt: "You read files.",
    tools: [read],
    maxTurns: 0,
  });
  assert.equal(result.status, "success", result.error?.message);
  assert.equal(result.text, "All files read.");

  // Every request fits: the main ones the budget, the summary ones the window.
  for (const [index, request] of model.requests.entries()) {
    const tokens = requestTokens(request, counter);
    const limit = isSummaryRequest(request) ? WINDOW.contextWindow : BUDGET;
    assert.ok(tokens <= limit, `request ${index} holds ${tokens} tokens, over ${limit}`);
  }
  const main = mainRequests(model);
  assert.equal(main.length, 101);
  for (const [index, request] of main.entries()) {
    assertPairsWhole(request.messages, `request ${index}`);
    // The summary, when there is one, comes first; the messages after it never start with a result.
    const at = request.messages.findIndex(isSummary);
    assert.ok(at === -1 || at === 0, `request ${index}: the summary is not first`);
    if (at === 0) assert.notEqual(request.messages[1]?.role, "tool");
  }

  // Dropping came first: some request left outputs out with no summary yet.
  const firstDrop = main.findIndex((request) => request.messages.some(isDropped));
  const firstSummary = main.findIndex((request) => isSummary(request.messages[0]));
  assert.ok(
    firstDrop > 0 && firstSummary > firstDrop,
    `drop ${firstDrop}, summary ${firstSummary}`,
  );
  const dropOnly = main[firstDrop].messages;
  assert.equal(dropOnly[0].role === "user" && dropOnly[0].content, "Read every file under src/.");
  assert.deepEqual(dropOnly.at(-1), {
    role: "tool",
    toolCallId: `call_${model.requests.indexOf(main[firstDrop])}_0`,
    name: "read",
    content: fileText(`src/file${firstDrop}.ts`),
    isError: false,
  });
  const note = dropOnly.find(isDropped);
  assert.match(
    note?.role === "tool" ? note.content : "",
    /^\[output of read dropped to save context: 1,\d{3} characters/,
  );

  // The summary requests: no tools, every section asked for; a later one folds in the earlier.
  const summaries = model.requests.filter(isSummaryRequest);
  assert.ok(summaries.length >= 2, `${summaries.length} summary requests`);
  for (const request of summaries) {
    assert.deepEqual(request.tools, []);
    for (const section of SUMMARY_SECTIONS) {
      assert.ok(promptOf(request).includes(`## ${section}\n`));
    }
    assert.match(
      request.system ?? "",
      /project's\s+instructions[\s\S]*is sent again with every request/,
    );
  }
  assert.ok(!promptOf(summaries[0]).includes("<previous-summary>"));
  assert.ok(promptOf(summaries[1]).includes("<previous-summary>\n## Goal\nRead every file."));
  assert.ok(promptOf(summaries[1]).includes("summary #1"));
  // The next main request after the first summary starts with it.
  const next = model.requests.find((request, i) =>
    i > model.requests.indexOf(summaries[0]) && !isSummaryRequest(request)
  )!;
  assert.ok(isSummary(next.messages[0]));
  assert.match(promptOf(next), /<summary>\n## Goal\nRead every file\./);

  // The history is whole: every output as the tool gave it, no summary in it.
  assert.equal(result.messages.length, 1 + 2 * 100 + 1);
  assert.ok(!result.messages.some((message) => isDropped(message) || isSummary(message)));
  const outputs = result.messages.filter((message) => message.role === "tool");
  assert.deepEqual(
    outputs.map((message) => message.content),
    Array.from({ length: 100 }, (_, i) => fileText(`src/file${i + 1}.ts`)),
  );
  assertPairsWhole(result.messages, "history");

  // The events: each compaction made the request smaller; drops alone, then summaries.
  const compactions = eventsOf(events, "compaction");
  assert.ok(compactions.length >= 3);
  for (const event of compactions) {
    assert.equal(event.reason, "auto");
    assert.ok(event.tokensAfter < event.tokensBefore, JSON.stringify(event));
    assert.ok(event.tokensBefore > BUDGET && event.tokensAfter <= BUDGET, JSON.stringify(event));
  }
  assert.equal(compactions[0].summarizedMessages, 0);
  assert.ok(compactions[0].droppedToolOutputs > 0);
  assert.deepEqual(compactions[0].state, { summary: "", replaces: 0 });
  const summarized = compactions.filter((event) => event.summarizedMessages > 0);
  assert.ok(summarized.length >= 2);
  assert.ok(summarized[1].state.replaces > summarized[0].state.replaces);
  assert.deepEqual(result.compaction, compactions.at(-1)!.state);
  assert.equal(result.compaction?.summary, summaryStep(summaries.length).text);

  // Summaries count in the usage, in the run's and in their turn's.
  assert.deepEqual(result.usage, {
    inputTokens: 1_000 * summaries.length,
    outputTokens: 100 * summaries.length,
  });
  const turnUsage = eventsOf(events, "turn_end").reduce((sum, e) => sum + e.usage.outputTokens, 0);
  assert.equal(turnUsage, 100 * summaries.length);
});

Deno.test("compaction: with parallel calls and user messages along the way, no request splits a call from its results", async () => {
  // Two calls per turn, and the user adds instructions along the way.
  let turn = 0;
  const pending: Message[] = [];
  const model = Object.assign(
    scriptedModel((request) => {
      if (isSummaryRequest(request)) return summaryStep(1);
      turn++;
      if (turn % 7 === 0) pending.push({ role: "user", content: `Also note step ${turn}.` });
      return turn <= 60
        ? {
          toolCalls: [
            { name: "read", input: { path: `a${turn}.ts` } },
            { name: "read", input: { path: `b${turn}.ts` } },
          ],
        }
        : { text: "Done." };
    }),
    { info: WINDOW },
  );
  const { result } = await collect({
    model,
    input: "Read them all.",
    tools: [read],
    maxTurns: 0,
    pendingInput: () => pending.splice(0),
  });
  assert.equal(result.status, "success", result.error?.message);
  const main = mainRequests(model);
  assert.ok(main.some((request) => isSummary(request.messages[0])));
  for (const [index, request] of main.entries()) {
    assertPairsWhole(request.messages, `request ${index}`);
    assert.ok(requestTokens(request, counter) <= BUDGET);
  }
  const starts = main.filter((request) => isSummary(request.messages[0]))
    .map((request) => request.messages[1].role);
  assert.ok(!starts.includes("tool"));
  // The user's messages are all in the history, and reached the model.
  const notes = result.messages.filter((m) =>
    m.role === "user" && m.content.startsWith("Also note")
  );
  assert.equal(notes.length, 8);
});

Deno.test("compaction: the verbatim part starts at a user message when one keeps half the recent budget, never at a tool result", async () => {
  const call = (id: string, path: string): Message => ({
    role: "assistant",
    content: [{ type: "tool_call", id, name: "read", input: { path } }],
  });
  const output = (id: string, content: string): Message => ({
    role: "tool",
    toolCallId: id,
    name: "read",
    content,
    isError: false,
  });
  const history: Message[] = [
    { role: "user", content: "Read a.ts and b.ts." },
    call("c1", "a.ts"),
    output("c1", fileText("a.ts")),
    call("c2", "b.ts"),
    output("c2", "short"),
    { role: "user", content: "Now read c.ts." },
    call("c3", "c.ts"),
    output("c3", fileText("c.ts")),
    { role: "assistant", content: [{ type: "text", text: "Read them." }] },
  ];
  const tokensFrom = (from: number) =>
    history.slice(from).reduce((sum, message) => sum + messageTokens(message, counter), 0);
  const replaces = async (keepRecentTokens: number) => {
    const model = scriptedModel(() => ({ text: "Summary." }));
    const { state } = await compactConversation({ model, messages: history, keepRecentTokens });
    return state.replaces;
  };
  // From message 3 on fits; the user message at 5 keeps more than half of that.
  assert.equal(await replaces(tokensFrom(3)), 5);
  // From message 6 on fits, and no user message follows: the assistant message starts it.
  assert.equal(await replaces(tokensFrom(6)), 6);
  // Only from the tool result at 7 on fits: the verbatim part starts after it, not before.
  assert.equal(await replaces(tokensFrom(7) + 1), 8);
});

Deno.test("compaction: the provider's reported usage calibrates the estimate", async () => {
  // A provider whose tokenizer counts 30% more than o200k_base.
  let turn = 0;
  const model = Object.assign(
    scriptedModel((request) => {
      const inputTokens = Math.ceil(requestTokens(request, counter) * 1.3);
      if (isSummaryRequest(request)) {
        return { ...summaryStep(1), usage: { inputTokens, outputTokens: 1 } };
      }
      turn++;
      const usage = { inputTokens, outputTokens: 1 };
      return turn <= 40
        ? { toolCalls: [{ name: "read", input: { path: `f${turn}.ts` } }], usage }
        : { text: "Done.", usage };
    }),
    { info: WINDOW },
  );
  const { result } = await collect({ model, input: "Read.", tools: [read], maxTurns: 0 });
  assert.equal(result.status, "success", result.error?.message);
  for (const [index, request] of mainRequests(model).entries()) {
    const reported = Math.ceil(requestTokens(request, counter) * 1.3);
    assert.ok(reported <= BUDGET, `request ${index}: the provider counts ${reported} tokens`);
  }
});

Deno.test("compaction: a ContextLengthError compacts by force and retries the turn once", async () => {
  // A large window: no compaction until the provider refuses the fourth request.
  const model = readingModel(
    5,
    (turn) =>
      turn === 4
        ? { error: new ContextLengthError("prompt is too long", { status: 400 }) }
        : undefined,
  );
  Object.assign(model, { info: { contextWindow: 200_000, maxOutputTokens: 8_000 } });
  const { events, result } = await collect({ model, input: "Read.", tools: [read], maxTurns: 0 });
  assert.equal(result.status, "success", result.error?.message);
  const types = events.map((event) => event.type);
  const compaction = eventsOf(events, "compaction");
  assert.equal(compaction.length, 1);
  assert.equal(compaction[0].reason, "overflow");
  assert.ok(compaction[0].summarizedMessages > 0);
  assert.ok(compaction[0].tokensAfter < compaction[0].tokensBefore);
  const retry = eventsOf(events, "retry");
  assert.equal(retry.length, 1);
  assert.match(retry[0].error, /prompt is too long/);
  assert.ok(types.indexOf("compaction") < types.indexOf("retry"));
  // Refused, summarized, retried smaller.
  const [refused, summary, retried] = model.requests.slice(3, 6);
  assert.ok(!isSummaryRequest(refused) && isSummaryRequest(summary));
  assert.ok(isSummary(retried.messages[0]));
  assert.ok(requestTokens(retried, counter) < requestTokens(refused, counter));
  assertPairsWhole(retried.messages, "the retried request");
  assert.equal(result.turns, 5);
  assert.deepEqual(result.compaction, compaction[0].state);
});

Deno.test("compaction: a second ContextLengthError on the retry ends the run with it", async () => {
  const model = readingModel(
    5,
    (turn) =>
      turn >= 4
        ? { error: new ContextLengthError("prompt is too long", { status: 400 }) }
        : undefined,
  );
  const { events, result } = await collect({ model, input: "Read.", tools: [read], maxTurns: 0 });
  assert.equal(result.status, "error");
  assert.equal(result.error?.name, "ContextLengthError");
  assert.match(result.error?.message ?? "", /prompt is too long/);
  assert.equal(eventsOf(events, "retry").length, 1);
  assert.equal(eventsOf(events, "compaction").length, 1);
  assert.equal(mainRequests(model).length, 5); // 3 fine, the refused one, its retry
});

Deno.test("compaction: the state passed back into the next run is used, not made again", async () => {
  const first = await collect({
    model: readingModel(60),
    input: "Read every file.",
    tools: [read],
    maxTurns: 0,
  });
  const state = first.result.compaction;
  assert.ok(state && state.replaces > 0);

  const model = Object.assign(scriptedModel([{ text: "Files read: 60." }]), { info: WINDOW });
  const { events, result } = await collect({
    model,
    messages: first.result.messages,
    compactionState: state,
    input: "How many files?",
    tools: [read],
  });
  assert.equal(result.status, "success", result.error?.message);
  assert.equal(model.requests.length, 1, "no summary request");
  const sent = model.requests[0].messages;
  assert.ok(
    isSummary(sent[0]) && sent[0].role === "user" && sent[0].content.includes(state.summary),
  );
  assert.equal(sent.length, 1 + first.result.messages.length - state.replaces + 1);
  assert.deepEqual(sent.at(-1), { role: "user", content: "How many files?" });
  assert.ok(requestTokens(model.requests[0], counter) <= BUDGET);
  assert.equal(eventsOf(events, "compaction").filter((e) => e.summarizedMessages > 0).length, 0);
  assert.equal(result.compaction, state);
  assert.equal(result.messages.length, first.result.messages.length + 2);
});

Deno.test("compaction: a state that does not fit the history is ignored", async () => {
  const model = scriptedModel([{ text: "Hi." }]);
  const { result } = await collect({
    model,
    messages: [{ role: "user", content: "Hello" }],
    compactionState: { summary: "From another conversation", replaces: 5 },
    input: "Again",
  });
  assert.equal(result.status, "success");
  assert.deepEqual(model.requests[0].messages, [
    { role: "user", content: "Hello" },
    { role: "user", content: "Again" },
  ]);
  assert.equal(result.compaction, undefined);
});

Deno.test("compactConversation() summarizes the whole conversation, steered by the focus", async () => {
  const history: Message[] = [
    { role: "user", content: "Earlier request" },
    { role: "user", content: "Rename parse() to parseConfig() everywhere. Keep the tests green." },
    {
      role: "assistant",
      content: [{ type: "tool_call", id: "c1", name: "read", input: { path: "src/parse.ts" } }],
    },
    {
      role: "tool",
      toolCallId: "c1",
      name: "read",
      content: fileText("src/parse.ts"),
      isError: false,
    },
    { role: "assistant", content: [{ type: "text", text: "Renamed in src/parse.ts." }] },
  ];
  const model = scriptedModel([(request) => {
    assert.deepEqual(request.tools, []);
    const prompt = promptOf(request);
    assert.match(prompt, /focus on: the test suite\./);
    assert.ok(prompt.includes("<previous-summary>\n## Goal\nEarlier work\n</previous-summary>"));
    assert.ok(prompt.includes("Keep the tests green.") && !prompt.includes("Earlier request"));
    assert.ok(prompt.includes('[tool call: read {"path":"src/parse.ts"}]'));
    return { text: "## Goal\nRename parse()", usage: { inputTokens: 900, outputTokens: 40 } };
  }]);
  const compacted = await compactConversation({
    model,
    messages: history,
    systemPrompt: "You edit code.",
    state: { summary: "## Goal\nEarlier work", replaces: 1 },
    focus: "the test suite",
  });
  assert.equal(compacted.summarizedMessages, 4);
  assert.deepEqual(compacted.state, { summary: "## Goal\nRename parse()", replaces: 5 });
  assert.deepEqual(compacted.usage, { inputTokens: 900, outputTokens: 40 });
  assert.ok(compacted.tokensAfter < compacted.tokensBefore);

  // The next run sends the summary, then the new input.
  const next = scriptedModel([{ text: "Yes." }]);
  await collect({
    model: next,
    messages: history,
    compactionState: compacted.state,
    input: "Done?",
  });
  assert.equal(next.requests[0].messages.length, 2);
  assert.ok(isSummary(next.requests[0].messages[0]));
  assert.deepEqual(next.requests[0].messages[1], { role: "user", content: "Done?" });
});

Deno.test("compactConversation() folds the summary in force into the new one", async () => {
  const history: Message[] = [
    { role: "user", content: "Step one" },
    { role: "assistant", content: [{ type: "text", text: "Did one." }] },
    { role: "user", content: "Step two" },
    { role: "assistant", content: [{ type: "text", text: "Did two." }] },
  ];
  const model = scriptedModel([(request) => {
    const prompt = promptOf(request);
    assert.ok(prompt.includes("<previous-summary>\nOne is done.\n</previous-summary>"));
    assert.ok(prompt.includes("[user]\nStep two") && !prompt.includes("Step one"));
    return { text: "One and two are done." };
  }]);
  const compacted = await compactConversation({
    model,
    messages: history,
    state: { summary: "One is done.", replaces: 2 },
  });
  assert.deepEqual(compacted.state, { summary: "One and two are done.", replaces: 4 });
  assert.equal(compacted.summarizedMessages, 2);
  assert.equal(model.calls, 1);
});

Deno.test("compactConversation() with nothing new to summarize changes nothing and throws on failure", async () => {
  const idle = scriptedModel([]);
  const same = await compactConversation({ model: idle, messages: [] });
  assert.deepEqual(same.state, { summary: "", replaces: 0 });
  assert.equal(same.summarizedMessages, 0);
  assert.equal(idle.calls, 0);

  const failing = scriptedModel([{ error: new ProviderError("bad request", { status: 400 }) }]);
  await assert.rejects(
    compactConversation({ model: failing, messages: [{ role: "user", content: "Hi" }] }),
    ProviderError,
  );
});

Deno.test("compaction: false sends the whole history and does not retry an overflow", async () => {
  const model = readingModel(30);
  const { events, result } = await collect({
    model,
    input: "Read.",
    tools: [read],
    maxTurns: 0,
    compaction: false,
  });
  assert.equal(result.status, "success");
  assert.equal(eventsOf(events, "compaction").length, 0);
  assert.equal(model.requests.filter(isSummaryRequest).length, 0);
  for (const [index, request] of model.requests.entries()) {
    assert.deepEqual(request.messages, result.messages.slice(0, 1 + 2 * index));
  }
  assert.ok(requestTokens(model.requests.at(-1)!, counter) > WINDOW.contextWindow);

  const refusing = readingModel(
    3,
    (turn) =>
      turn === 2 ? { error: new ContextLengthError("too long", { status: 400 }) } : undefined,
  );
  const refused = await collect({
    model: refusing,
    input: "Read.",
    tools: [read],
    compaction: false,
  });
  assert.equal(refused.result.error?.name, "ContextLengthError");
  assert.equal(refusing.requests.length, 2);
  assert.equal(eventsOf(refused.events, "retry").length, 0);
});

Deno.test("compaction: a failed summary leaves the run going on dropped outputs, then ends it when nothing fits", async () => {
  let turn = 0;
  const model = Object.assign(
    scriptedModel((request) => {
      if (isSummaryRequest(request)) {
        return { error: new ProviderError("summary refused", { status: 400 }) };
      }
      turn++;
      return turn <= 200
        ? { toolCalls: [{ name: "read", input: { path: `f${turn}.ts` } }] }
        : { text: "Done." };
    }),
    { info: WINDOW },
  );
  const { events, result } = await collect({ model, input: "Read.", tools: [read], maxTurns: 0 });
  const notices = eventsOf(events, "notice").filter((event) => event.kind === "compaction_failed");
  assert.equal(notices.length, 1, "the summary is not tried again in the same run");
  assert.match(notices[0].message, /summary refused/);
  // Requests went on after the failure, with outputs dropped and no summary.
  const failedAt = model.requests.findIndex(isSummaryRequest);
  const later = model.requests.slice(failedAt + 1);
  assert.ok(later.length > 1 && later.every((request) => !isSummaryRequest(request)));
  assert.ok(later.every((request) => !isSummary(request.messages[0])));
  assert.ok(later.some((request) => request.messages.some(isDropped)));
  // Until even that no longer fit the window.
  assert.equal(result.status, "error");
  assert.equal(result.error?.name, "ContextLengthError");
  assert.match(
    result.error?.message ?? "",
    /does not fit the context window of 4000 tokens, and summarizing it failed: summary refused/,
  );
  for (const request of later) assert.ok(requestTokens(request, counter) <= WINDOW.contextWindow);
});

Deno.test("compaction: cancelling the run while it summarizes ends it promptly as aborted", async () => {
  const controller = new AbortController();
  let turn = 0;
  const model = Object.assign(
    scriptedModel((request) => {
      if (isSummaryRequest(request)) {
        controller.abort();
        return { ...summaryStep(1), delayMs: 10_000 };
      }
      turn++;
      return { toolCalls: [{ name: "read", input: { path: `f${turn}.ts` } }] };
    }),
    { info: WINDOW },
  );
  const started = performance.now();
  const { events, result } = await collect({
    model,
    input: "Read.",
    tools: [read],
    maxTurns: 0,
    signal: controller.signal,
  });
  assert.ok(performance.now() - started < 5_000);
  assert.equal(result.status, "aborted");
  assert.equal(model.requests.filter(isSummaryRequest).length, 1);
  assert.equal(eventsOf(events, "notice").length, 0);
  assert.equal(result.compaction, undefined);
  assertPairsWhole(result.messages, "history");
});

Deno.test("compactionLimits() reserves the output limit up to 20% of the window", () => {
  const model = (info?: ModelInfo) => Object.assign(scriptedModel([]), { info });
  assert.deepEqual(compactionLimits(model()), {
    contextWindow: 128_000,
    reserveTokens: 25_600,
    budget: 102_400,
    keepRecentTokens: 38_400,
  });
  assert.equal(compactionLimits(model(WINDOW)).reserveTokens, 500);
  assert.equal(compactionLimits(model(WINDOW), {}, 300).reserveTokens, 300);
  assert.equal(compactionLimits(model(WINDOW), { reserveTokens: 3_000 }).reserveTokens, 2_000);
  assert.throws(() => compactionLimits(model(), { keepRecentTokens: -1 }), RangeError);
});

Deno.test("loadTokenCounter() gives the estimate, or a tokenizer's exact count; the estimate when it cannot load", async () => {
  assert.equal(counter.name, "o200k_estimate");
  const fallback = await loadTokenCounter(() => Promise.reject(new Error("not installed")));
  assert.equal(fallback.name, "o200k_estimate");
  const exact = await loadTokenCounter(() => import("gpt-tokenizer/encoding/o200k_base"));
  assert.equal(exact.name, "exact");
  assert.equal(exact.count("Hello world"), 2);
  // Special-token text in a conversation is counted as text, not refused.
  for (const each of [counter, exact]) {
    assert.ok(each.count("<|endoftext|> is plain text here") > 5);
  }
});

Deno.test("summarize() counts no more of a huge message than a request can hold", async () => {
  const model = scriptedModel([{ text: "## Goal\nWrite the file" }]);
  let longest = 0;
  const counter: TokenCounter = {
    name: "recording",
    count(text) {
      longest = Math.max(longest, text.length);
      return ESTIMATE_COUNTER.count(text);
    },
  };
  const inputTokens = 4_000;
  const { summary } = await summarize({
    model,
    messages: [{ role: "user", content: "x".repeat(10_000_000) }, {
      role: "assistant",
      content: [{ type: "text", text: "Done." }],
    }],
    counter,
    inputTokens,
    maxOutputTokens: 500,
    maxToolChars: 1_000,
    signal: new AbortController().signal,
  });
  assert.equal(summary, "## Goal\nWrite the file");
  // Cut to what a request holds (head and tail kept) before it was counted at all.
  assert.ok(longest <= inputTokens * 8 + 100, `counted ${longest} characters at once`);
  assert.match(promptOf(model.requests[0]), /characters left out/);
});

Deno.test("openai provider: a 400 about the context length compacts and the retry succeeds", async () => {
  const tooLong = {
    status: 400,
    errorBody: {
      error: {
        message: "This model's maximum context length is 8192 tokens. However, you requested 9000.",
        type: "invalid_request_error",
      },
    },
  };
  await using server = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }] },
      { toolCalls: [{ name: "add", arguments: { a: 1, b: 2 } }] },
      tooLong,
      { text: "## Goal\nWeather and a sum." },
      { text: "22°C, and 3." },
    ],
  });
  const { tools } = recordingTools();
  const { Agent } = await import("../mod.ts");
  const { openaiModel } = await import("../lib/providers/mod.ts");
  const agent = new Agent({
    model: openaiModel({ model: "test-model", baseURL: server.url, apiKey: "sk-test" }),
    tools,
    retry: FAST_RETRY,
  });
  const { events, result } = await collectStream(agent.stream("Weather in Paris, and 1 + 2?"));
  assert.equal(result.status, "success", result.error?.message);
  assert.equal(result.text, "22°C, and 3.");
  assert.equal(server.requests.length, 5);
  const [compaction] = eventsOf(events, "compaction");
  assert.equal(compaction.reason, "overflow");
  assert.ok(compaction.summarizedMessages > 0);
  assert.equal(eventsOf(events, "retry").length, 1);
  // The summary request offers no tools; the retry starts with the summary.
  const summaryBody = server.requests[3].body;
  assert.ok(summaryBody.tools === undefined || (summaryBody.tools as unknown[]).length === 0);
  const retried = server.requests[4].body.messages as { role: string; content?: string }[];
  assert.equal(retried[0].role, "user");
  assert.ok(retried[0].content?.startsWith(SUMMARY_MARKER));
  assert.ok(retried[0].content?.includes("## Goal\nWeather and a sum."));
  assert.equal(result.messages.length, 6);
  assert.deepEqual(result.compaction, compaction.state);
});
