/**
 * The driver every front end runs through (`startConversation`): a message runs in a run loop,
 * under the permission policy, recorded to a real session file as its events stream.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { z } from "zod";
import { startConversation } from "../lib/conversation/mod.ts";
import { createAgentService } from "../lib/service/mod.ts";
import { openMemory } from "../lib/memory/mod.ts";
import { parseRule } from "../lib/permissions/rules.ts";
import type { RunLoopEvent } from "../lib/runloop/events.ts";
import { runLoops } from "../lib/runloop/manager.ts";
import { fileSessionStore, resumeSession } from "../lib/session/mod.ts";
import { scriptedModel } from "../lib/testing/scripted_model.ts";
import { defineTool } from "../lib/tool.ts";
import type { Driver, SendOptions } from "../lib/conversation/mod.ts";

/** Runs a message through the driver; gives its events and its result. */
async function send(driver: Driver, message: string, options?: SendOptions) {
  const events: RunLoopEvent[] = [];
  const run = driver.send(message, options);
  let step = await run.next();
  for (; !step.done; step = await run.next()) events.push(step.value);
  return { events, result: step.value };
}

/** A session store in a directory of its own, removed at the end. */
async function withStore(body: (store: ReturnType<typeof fileSessionStore>) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "driver_test_" });
  try {
    await body(fileSessionStore({ dir }));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("startConversation() saves the message and the answer to a session file", async () => {
  await withStore(async (store) => {
    const driver = startConversation({
      model: scriptedModel([{ text: "Hi!" }]),
      store,
      cwd: "/w",
    });
    const { result } = await send(driver, "Hello");
    await driver.close();
    assert.equal(result.status, "success");
    assert.equal(driver.conversation.saved, true);
    const saved = await store.load(driver.conversation.id);
    assert.equal(saved.header.cwd, "/w");
    assert.equal(saved.header.model, "scripted/scripted-model");
    assert.deepEqual(saved.messages.map((message) => message.role), ["user", "assistant"]);
    assert.deepEqual(driver.conversation.messages, result.messages);
  });
});

Deno.test("startConversation() streams a run's events in order, the result last", async () => {
  const driver = startConversation({ model: scriptedModel([{ text: ["Hel", "lo"] }]) });
  const { events, result } = await send(driver, "Hi");
  const types = events.map((event) => event.type);
  assert.equal(types[0], "start");
  assert.equal(types[1], "run_loop_start");
  assert.equal(types.at(-1), "result");
  assert(types.indexOf("turn_start") < types.indexOf("text_delta"));
  assert(types.indexOf("text_delta") < types.indexOf("turn_end"));
  assert.equal(result.text, "Hello");
  assert(events[1].type === "run_loop_start");
  assert.equal(result.runLoopId, events[1].runLoopId);
});

Deno.test("startConversation() refuses a call the rules deny: the tool never runs", async () => {
  let ran = 0;
  const bash = defineTool({
    name: "bash",
    description: "Runs a command",
    parameters: z.object({ command: z.string() }),
    capabilities: ["run"],
    execute: () => {
      ran++;
      return "done";
    },
  });
  await withStore(async (store) => {
    const driver = startConversation({
      model: scriptedModel([
        { toolCalls: [{ name: "bash", input: { command: "rm -rf /" } }] },
        { text: "I may not." },
      ]),
      tools: [bash],
      store,
      permission: {
        rules: [parseRule("bash(rm *)", "deny", "--deny")],
        mode: () => "default",
        roots: ["/w"],
      },
    });
    const { events } = await send(driver, "Clean up");
    await driver.close();
    assert.equal(ran, 0);
    const refused = events.find((event) => event.type === "tool_result");
    assert(refused?.type === "tool_result" && refused.isError);
    assert.match(refused.output, /permission denied/);
    // The refusal is part of the saved conversation, as the model saw it.
    const saved = await store.load(driver.conversation.id);
    assert.equal(saved.messages.filter((message) => message.role === "tool").length, 1);
  });
});

Deno.test("startConversation() asks about a rule that asks, and refuses with no one to ask", async () => {
  const calls: string[] = [];
  const echo = defineTool({
    name: "echo",
    description: "Says it",
    parameters: z.object({ text: z.string() }),
    execute: ({ text }) => {
      calls.push(text);
      return text;
    },
  });
  const script = () =>
    scriptedModel([{ toolCalls: [{ name: "echo", input: { text: "hi" } }] }, { text: "ok" }]);
  const policy = { rules: [parseRule("echo", "ask", "--ask")], mode: () => "default" as const };
  const headless = startConversation({
    model: script(),
    tools: [echo],
    permission: { ...policy, roots: ["."] },
  });
  await send(headless, "go");
  assert.deepEqual(calls, []);
  const asked: string[] = [];
  const terminal = startConversation({
    model: script(),
    tools: [echo],
    permission: {
      ...policy,
      roots: ["."],
      ask: (request) => {
        asked.push(request.call.name);
        return Promise.resolve("yes");
      },
    },
  });
  await send(terminal, "go");
  assert.deepEqual(asked, ["echo"]);
  assert.deepEqual(calls, ["hi"]);
});

Deno.test("startConversation() resumed from a saved session goes on from its history", async () => {
  await withStore(async (store) => {
    const first = startConversation({ model: scriptedModel([{ text: "Paris." }]), store });
    await send(first, "Capital of France?");
    await first.close();
    const model = scriptedModel([{ text: "About 2 million." }]);
    const held = await resumeSession(store, first.conversation.id);
    const again = startConversation({ model, store, resumed: held });
    assert.equal(again.conversation.id, first.conversation.id);
    const { result } = await send(again, "Its population?");
    await again.close();
    const sent = model.requests[0].messages.map((message) => message.role);
    assert.deepEqual(sent.slice(0, 3), ["user", "assistant", "user"]);
    assert.equal(result.text, "About 2 million.");
    const saved = await store.load(first.conversation.id);
    assert.equal(saved.messages.length, 4);
  });
});

Deno.test("startConversation() cancelled mid-run ends aborted and keeps the session", async () => {
  await withStore(async (store) => {
    const driver = startConversation({
      model: scriptedModel([{ text: "never", delayMs: 5_000 }]),
      store,
    });
    const controller = new AbortController();
    const sending = send(driver, "Take your time", { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    const { result } = await sending;
    await driver.close();
    assert.equal(result.status, "aborted");
    assert(Date.now() - started < 2_000, "the cancel took effect at once");
    const saved = await store.load(driver.conversation.id);
    assert.deepEqual(saved.messages.map((message) => message.role), ["user"]);
    // The conversation goes on after the cancel.
    assert.deepEqual(driver.conversation.messages.map((message) => message.role), ["user"]);
  });
});

Deno.test("startConversation() with placing continue keeps one run loop, archived at its end", async () => {
  const memory = await openMemory({ path: ":memory:" });
  try {
    const loops = runLoops({ memory });
    const driver = startConversation({
      model: scriptedModel([{ text: "Started." }, { text: "Went on." }]),
      memory,
      runLoops: loops,
      placing: "continue",
    });
    const one = await send(driver, "Write the notes");
    const two = await send(driver, "Add a date");
    assert.equal(one.result.runLoopId, two.result.runLoopId);
    assert.equal(loops.active().length, 1);
    await driver.endRunLoop();
    assert.equal(loops.active().length, 0);
    const archived = await memory.runLoop(one.result.runLoopId);
    assert.equal(archived?.status, "completed");
    assert.equal(archived?.iterations.length, 2);
  } finally {
    await memory.close();
  }
});

Deno.test("startConversation() placing route starts a run loop per goal, completed when asked", async () => {
  const loops = runLoops();
  const driver = startConversation({
    model: scriptedModel([{ text: "One." }, { text: "Two." }]),
    runLoops: loops,
  });
  const one = await send(driver, "First task", { complete: true });
  const two = await send(driver, "Second task", { complete: true });
  assert.notEqual(one.result.runLoopId, two.result.runLoopId);
  assert(one.events.some((event) => event.type === "run_loop_end"));
  assert.equal(loops.active().length, 0);
});

Deno.test("startConversation() switches model for the next run and records it", async () => {
  await withStore(async (store) => {
    const before = scriptedModel([{ text: "a" }]);
    const after = scriptedModel([{ text: "b" }], { provider: "other" });
    const driver = startConversation({ model: before, store });
    await send(driver, "one");
    await driver.switchModel(after, "other/scripted");
    const { result } = await send(driver, "two");
    await driver.close();
    assert.equal(result.text, "b");
    assert.equal(after.calls, 1);
    assert.equal(driver.modelSpec, "other/scripted");
    const saved = await store.load(driver.conversation.id);
    assert.equal(saved.model, "other/scripted");
  });
});

Deno.test("startConversation() compacts on demand: the summary is saved and its call counted", async () => {
  await withStore(async (store) => {
    const model = scriptedModel([
      { text: "Done.", usage: { inputTokens: 10, outputTokens: 2 } },
      { text: "## Goal\nRename the parser", usage: { inputTokens: 30, outputTokens: 5 } },
    ]);
    const driver = startConversation({ model, store });
    assert.equal(await driver.compact(), undefined, "nothing to compact yet");
    await send(driver, "Rename the parser");
    const compacted = await driver.compact({ focus: "naming" });
    await driver.close();
    assert.deepEqual(compacted?.usage, { inputTokens: 30, outputTokens: 5 });
    assert.equal(driver.conversation.usage.inputTokens, 40);
    assert.match(driver.conversation.compaction?.summary ?? "", /Rename the parser/);
    const saved = await store.load(driver.conversation.id);
    assert.match(saved.compaction?.summary ?? "", /Rename the parser/);
  });
});

Deno.test("startConversation() restarts afresh, or resumes a saved session, keeping its model", async () => {
  await withStore(async (store) => {
    const model = scriptedModel([{ text: "One." }, { text: "Two." }, { text: "Three." }]);
    const driver = startConversation({ model, store, cwd: "/w" });
    await send(driver, "first");
    const firstId = driver.conversation.id;
    await driver.restart();
    assert.notEqual(driver.conversation.id, firstId);
    assert.equal(driver.conversation.messages.length, 0);
    await send(driver, "second");
    const resumed = await driver.resume(firstId.slice(0, 8));
    assert.equal(resumed.header.id, firstId);
    assert.equal(driver.conversation.id, firstId);
    const { result } = await send(driver, "third");
    await driver.close();
    assert.equal(result.text, "Three.");
    assert.equal(result.messages.length, 4);
    assert.equal((await store.load(firstId)).messages.length, 4);
    await assert.rejects(driver.resume("ffffffff"), /No session/);
  });
});

Deno.test("a permission callback passed in runOptions is refused, never dropped", () => {
  const deny = () => ({ behavior: "deny" as const, reason: "no" });
  const model = scriptedModel([{ text: "x" }]);
  assert.throws(
    () => startConversation({ model, runOptions: { permission: deny } as never }),
    (error: Error) => error instanceof TypeError && /`permission` option/.test(error.message),
  );
  assert.throws(
    () => createAgentService({ model, runOptions: { permission: deny } as never }),
    (error: Error) => error instanceof TypeError && /runOptions\.permission/.test(error.message),
  );
  assert.throws(
    () => createAgentService({ model, runOptions: { maxTurns: 3 } as never }),
    /runOptions\.maxTurns/,
  );
});
