import "./isolated_env.ts";
import assert from "node:assert/strict";
import { z } from "zod";
import {
  type AgentEvent,
  defineTool,
  type Hooks,
  type PermissionRequest,
  runAgent,
  type RunAgentOptions,
} from "../mod.ts";
import { scriptedModel } from "../lib/testing/mod.ts";

const ran: string[] = [];
const echo = defineTool({
  name: "echo",
  description: "Echoes",
  parameters: z.object({ text: z.string() }),
  execute: ({ text }) => {
    ran.push(text);
    return `echo: ${text}`;
  },
});

async function collect(options: RunAgentOptions) {
  const events: AgentEvent[] = [];
  const run = runAgent(options);
  let step = await run.next();
  while (!step.done) {
    events.push(step.value);
    step = await run.next();
  }
  return { events, result: step.value };
}

function toolOutputs(events: AgentEvent[]): Array<[string, boolean]> {
  return events.flatMap((e) =>
    e.type === "tool_result" ? [[e.output, e.isError] as [string, boolean]] : []
  );
}

Deno.test("permission callback: a refused call is not run and the model is told why", async () => {
  ran.length = 0;
  const asked: PermissionRequest[] = [];
  const model = scriptedModel([
    {
      toolCalls: [{ name: "echo", input: { text: "safe" } }, {
        name: "echo",
        input: { text: "danger" },
      }],
    },
    { text: "done" },
  ]);
  const { events, result } = await collect({
    model,
    input: "go",
    tools: [echo],
    cwd: "/work",
    permission: (request) => {
      asked.push(request);
      const { text } = request.call.input as { text: string };
      return text === "danger"
        ? { behavior: "deny", reason: 'echo of "danger" is not allowed' }
        : { behavior: "allow" };
    },
  });
  assert.deepEqual(ran, ["safe"]);
  assert.deepEqual(asked.map((r) => [r.tool.name, r.cwd]), [["echo", "/work"], ["echo", "/work"]]);
  const byId = Object.fromEntries(
    events.flatMap((e) => e.type === "tool_result" ? [[e.id, e]] : []),
  );
  assert.equal(byId["call_1_0"].output, "echo: safe");
  assert.equal(byId["call_1_1"].isError, true);
  assert.equal(
    byId["call_1_1"].output,
    'Error: permission denied: echo of "danger" is not allowed',
  );
  assert.equal(result.status, "success");
});

Deno.test("hooks: beforeToolCall blocks or rewrites a call; afterToolCall rewrites its result", async () => {
  ran.length = 0;
  const hooks: Hooks = {
    beforeToolCall: ({ call }) => {
      const { text } = call.input as { text: string };
      if (text === "block me") return { refuse: "not today" };
      if (text === "rewrite me") return { input: { text: "rewritten" } };
      return undefined;
    },
    afterToolCall: ({ result }) =>
      result.output.includes("rewritten") ? { output: `${result.output} (checked)` } : undefined,
  };
  const model = scriptedModel([
    {
      toolCalls: [
        { name: "echo", input: { text: "block me" } },
        { name: "echo", input: { text: "rewrite me" } },
        { name: "echo", input: { text: "plain" } },
      ],
    },
    { text: "ok" },
  ]);
  const { result } = await collect({ model, input: "go", tools: [echo], hooks });
  assert.deepEqual(ran.sort(), ["plain", "rewritten"]);
  const sent = model.requests[1].messages.filter((m) => m.role === "tool").map((m) =>
    m.role === "tool" && m.content
  );
  assert.deepEqual(sent, [
    "Error: refused by a hook: not today",
    "echo: rewritten (checked)",
    "echo: plain",
  ]);
  assert.equal(result.status, "success");
});

Deno.test("hooks: a hook that throws fails only its call", async () => {
  const model = scriptedModel([{ toolCalls: [{ name: "echo", input: { text: "x" } }] }, {
    text: "ok",
  }]);
  const { events } = await collect({
    model,
    input: "go",
    tools: [echo],
    hooks: { beforeToolCall: () => Promise.reject(new Error("hook crashed")) },
  });
  assert.deepEqual(toolOutputs(events), [["Error: the call was not run: hook crashed", true]]);
});

Deno.test("hooks: beforeModelCall changes what is sent, not the history; afterModelCall sees each answer", async () => {
  const seen: Array<[number, string]> = [];
  const model = scriptedModel([
    {
      toolCalls: [{ name: "echo", input: { text: "a" } }],
      usage: { inputTokens: 5, outputTokens: 1 },
    },
    { text: "final" },
  ]);
  const { result } = await collect({
    model,
    input: "question",
    tools: [echo],
    hooks: {
      beforeModelCall: ({ turn, messages }) => [
        { role: "user", content: `[turn ${turn}] reminder: be brief` },
        ...messages,
      ],
      afterModelCall: ({ turn, message, usage }) => {
        seen.push([turn, `${message.content.map((p) => p.type).join("+")}/${usage.inputTokens}`]);
      },
    },
  });
  assert.equal(
    model.requests[0].messages[0].role === "user" && model.requests[0].messages[0].content,
    "[turn 1] reminder: be brief",
  );
  assert.equal(
    model.requests[1].messages[0].role === "user" && model.requests[1].messages[0].content,
    "[turn 2] reminder: be brief",
  );
  assert.deepEqual(result.messages[0], { role: "user", content: "question" });
  assert.equal(result.messages.length, 4);
  assert.deepEqual(seen, [[1, "tool_call/5"], [2, "text/0"]]);
});

Deno.test("hooks: onEvent sees every event, in order", async () => {
  const observed: string[] = [];
  const model = scriptedModel([{ text: ["a", "b"] }]);
  const { events } = await collect({
    model,
    input: "x",
    hooks: { onEvent: (e) => observed.push(e.type) },
  });
  assert.deepEqual(observed, events.map((e) => e.type));
  assert.equal(observed.at(-1), "result");
});

Deno.test("hooks: an input changed by beforeToolCall is checked again by the permission callback", async () => {
  ran.length = 0;
  const asked: string[] = [];
  const model = scriptedModel([
    {
      toolCalls: [
        { name: "echo", input: { text: "smuggle" } },
        { name: "echo", input: { text: "polish" } },
      ],
    },
    { text: "ok" },
  ]);
  const { events, result } = await collect({
    model,
    input: "go",
    tools: [echo],
    permission: ({ call }) => {
      const { text } = call.input as { text: string };
      asked.push(text);
      return text === "danger"
        ? { behavior: "deny", reason: 'echo of "danger" is not allowed' }
        : { behavior: "allow" };
    },
    hooks: {
      beforeToolCall: ({ call }) => {
        const { text } = call.input as { text: string };
        return { input: { text: text === "smuggle" ? "danger" : "polished" } };
      },
    },
  });
  assert.deepEqual(ran, ["polished"]);
  assert.deepEqual(asked.sort(), ["danger", "polish", "polished", "smuggle"]);
  assert.deepEqual(toolOutputs(events), [
    ['Error: permission denied: echo of "danger" is not allowed', true],
    ["echo: polished", false],
  ]);
  assert.equal(result.status, "success");
});

Deno.test("hooks: an input given back unchanged by beforeToolCall is not checked twice", async () => {
  ran.length = 0;
  let asked = 0;
  const model = scriptedModel([
    { toolCalls: [{ name: "echo", input: { text: "same" } }] },
    { text: "ok" },
  ]);
  await collect({
    model,
    input: "go",
    tools: [echo],
    permission: () => {
      asked++;
      return { behavior: "allow" };
    },
    hooks: { beforeToolCall: ({ call }) => ({ input: structuredClone(call.input) }) },
  });
  assert.deepEqual(ran, ["same"]);
  assert.equal(asked, 1);
});
