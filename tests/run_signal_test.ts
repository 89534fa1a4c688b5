/**
 * A signal that outlives the calls and runs it cancels (an application's shutdown signal, a
 * session's) keeps nothing of them once they end: no listener left behind, and no signal derived
 * from it with `AbortSignal.any`, which stays referenced from its source for good. Cancelling
 * still reaches every call that runs, and a timeout still ends a call.
 */

import assert from "node:assert/strict";
import { z } from "zod";
import { defineTool, runAgent } from "../mod.ts";
import { runToolCall } from "../lib/tool_runner.ts";
import { scriptedModel } from "../lib/testing/mod.ts";

/** A long-lived signal that counts the listeners it holds and the signals derived from it. */
function countedSignal(): {
  controller: AbortController;
  listeners: () => number;
  derived: () => number;
  [Symbol.dispose](): void;
} {
  const controller = new AbortController();
  const signal = controller.signal;
  const held = new Set<unknown>();
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = (type: string, listener: unknown, options?: unknown) => {
    if (type === "abort" && listener) held.add(listener);
    add(type, listener as EventListener, options as AddEventListenerOptions);
  };
  signal.removeEventListener = (type: string, listener: unknown, options?: unknown) => {
    if (type === "abort") held.delete(listener);
    remove(type, listener as EventListener, options as EventListenerOptions);
  };
  let derived = 0;
  const any = AbortSignal.any;
  AbortSignal.any = (signals: Iterable<AbortSignal>) => {
    const list = [...signals];
    if (list.includes(signal)) derived++;
    return any.call(AbortSignal, list);
  };
  return {
    controller,
    listeners: () => held.size,
    derived: () => derived,
    [Symbol.dispose]: () => {
      AbortSignal.any = any;
    },
  };
}

const echo = defineTool({
  name: "echo",
  description: "Echoes its input",
  parameters: z.object({ n: z.number() }),
  execute: ({ n }, context) => {
    if (context.signal.aborted) throw new Error("aborted before it ran");
    return `echo ${n}`;
  },
});

Deno.test("runToolCall() leaves nothing with a long-lived run signal: after 200 calls, no listener and no derived signal", async () => {
  using run = countedSignal();
  const registry = new Map([["echo", echo]]);
  for (let i = 0; i < 200; i++) {
    const result = await runToolCall(
      { type: "tool_call", id: `c${i}`, name: "echo", input: { n: i } },
      registry,
      { cwd: ".", signal: run.controller.signal },
    );
    assert.equal(result.output, `echo ${i}`);
  }
  assert.equal(run.derived(), 0, "signals derived with AbortSignal.any");
  assert.equal(run.listeners(), 0, "listeners left");
});

Deno.test("runAgent() leaves nothing with the caller's long-lived signal: after a run of 100 tool steps, no listener and no derived signal", async () => {
  using run = countedSignal();
  const model = scriptedModel((_request, call) =>
    call < 99 ? { toolCalls: [{ name: "echo", input: { n: call } }] } : { text: "done" }
  );
  for (let i = 0; i < 3; i++) {
    const events = runAgent({
      model: model,
      input: "go",
      tools: [echo],
      maxTurns: 0,
      signal: run.controller.signal,
    });
    let step = await events.next();
    while (!step.done) step = await events.next();
    assert.equal(step.value.status, "success");
    if (i === 0) assert.equal(step.value.turns, 100);
  }
  assert.equal(run.derived(), 0, "signals derived with AbortSignal.any");
  assert.equal(run.listeners(), 0, "listeners left");
});

Deno.test("runToolCall() passes the run's abort and its reason to a call that is running, and times a call out", async () => {
  const run = new AbortController();
  const reasons: unknown[] = [];
  const slow = defineTool({
    name: "slow",
    description: "Waits until aborted",
    parameters: z.object({}),
    timeoutMs: 50,
    execute: (_input, context) =>
      new Promise<string>((_resolve, reject) => {
        context.signal.addEventListener("abort", () => {
          reasons.push(context.signal.reason);
          reject(context.signal.reason);
        });
      }),
  });
  const registry = new Map([["slow", slow]]);
  const call = { type: "tool_call" as const, id: "1", name: "slow", input: {} };
  setTimeout(() => run.abort(new Error("the user left")), 5);
  const cancelled = await runToolCall(call, registry, { cwd: ".", signal: run.signal });
  assert.equal(cancelled.output, "Error: cancelled, the run was aborted.");
  assert.equal((reasons[0] as Error).message, "the user left");
  const timedOut = await runToolCall(call, registry, {
    cwd: ".",
    signal: new AbortController().signal,
  });
  assert.equal(timedOut.output, 'Error: "slow" timed out after 50 ms.');
  assert.equal((reasons[1] as DOMException).name, "AbortError");
  // A run aborted before the call starts: the call is not run.
  const never = await runToolCall(call, registry, { cwd: ".", signal: run.signal });
  assert.equal(never.output, "Error: not run, the run was cancelled.");
});
