import "./isolated_env.ts";
import assert from "node:assert/strict";
import { z } from "zod";
import { type AgentEvent, defineTool, runAgent, type Tool, type ToolCallPart } from "../mod.ts";
import { runToolCall, type ToolRunOptions } from "../lib/tool_runner.ts";
import { toolRegistry } from "../lib/tool.ts";
import { scriptedModel } from "../lib/testing/mod.ts";

const options = (extra: Partial<ToolRunOptions> = {}): ToolRunOptions => ({
  cwd: "/work",
  signal: new AbortController().signal,
  ...extra,
});

const call = (
  name: string,
  input: unknown = {},
  extra: Partial<ToolCallPart> = {},
): ToolCallPart => ({
  type: "tool_call",
  id: "c1",
  name,
  input,
  ...extra,
});

const add = defineTool({
  name: "add",
  description: "Adds two numbers",
  parameters: z.object({
    a: z.number().describe("first"),
    b: z.number().int().min(0).describe("second, a whole number"),
    note: z.string().optional(),
  }),
  capabilities: [],
  execute: ({ a, b }) => String(a + b),
});

Deno.test("defineTool() turns the zod schema into the JSON Schema the model sees", () => {
  assert.deepEqual(add.inputSchema, {
    type: "object",
    properties: {
      a: { type: "number", description: "first" },
      b: {
        type: "integer",
        minimum: 0,
        maximum: 9007199254740991,
        description: "second, a whole number",
      },
      note: { type: "string" },
    },
    required: ["a", "b"],
  });
  assert.deepEqual(add.capabilities, []);
  const reader = defineTool({
    name: "read_it",
    description: "d",
    parameters: z.object({ path: z.string().default(".") }),
    capabilities: ["read"],
    execute: ({ path }) => path,
  });
  assert.deepEqual(reader.capabilities, ["read"]);
  assert.equal(
    (reader.inputSchema.properties as Record<string, { default?: unknown }>).path.default,
    ".",
  );
  // Defaults apply before execute sees the input.
  const parsed = reader.parse?.({});
  assert.deepEqual(parsed, { success: true, data: { path: "." } });
});

Deno.test("defineTool() refuses bad names and non-object schemas", () => {
  const spec = { description: "d", execute: () => "" };
  assert.throws(
    () => defineTool({ ...spec, name: "has space", parameters: z.object({}) }),
    /Invalid tool name/,
  );
  assert.throws(
    () => defineTool({ ...spec, name: "x".repeat(65), parameters: z.object({}) }),
    /Invalid tool name/,
  );
  assert.throws(
    () => defineTool({ ...spec, name: "s", parameters: z.string() }),
    /must be a z\.object/,
  );
});

Deno.test("toolRegistry() rejects two tools with the same name", () => {
  assert.throws(() => toolRegistry([add, add]), /Two tools are named "add"/);
  assert.equal(toolRegistry([add]).get("add"), add);
});

Deno.test("runToolCall() lists what to fix when arguments do not fit the schema", async () => {
  const result = await runToolCall(call("add", { a: "1", b: -2 }), toolRegistry([add]), options());
  assert.equal(result.isError, true);
  assert.match(result.output, /^Error: invalid arguments for "add":/);
  assert.match(result.output, /expected number, received string\n\s+→ at a/);
  assert.match(result.output, /→ at b/);
  assert.match(result.output, /Fix these and call the tool again\.$/);
});

Deno.test("runToolCall() names the available tools when the model calls an unknown one", async () => {
  const result = await runToolCall(call("substract"), toolRegistry([add]), options());
  assert.deepEqual([result.isError, result.output], [
    true,
    'Error: unknown tool "substract". Available tools: add.',
  ]);
});

Deno.test("runToolCall() reports arguments that were not JSON", async () => {
  const result = await runToolCall(
    call("add", {}, { invalidInput: '{"a": 1,' }),
    toolRegistry([add]),
    options(),
  );
  assert.equal(result.isError, true);
  assert.match(
    result.output,
    /were not valid JSON: \{"a": 1,\nSend the arguments as one JSON object/,
  );
});

Deno.test("runToolCall() turns a thrown error into an error result", async () => {
  const broken = defineTool({
    name: "broken",
    description: "Throws",
    parameters: z.object({}),
    execute: () => {
      throw new Error("disk on fire");
    },
  });
  const result = await runToolCall(call("broken"), toolRegistry([broken]), options());
  assert.deepEqual([result.isError, result.output], [true, "Error: disk on fire"]);
});

Deno.test("runToolCall() times out a slow tool and aborts its signal", async () => {
  let seen: AbortSignal | undefined;
  const slow = defineTool({
    name: "slow",
    description: "Slow",
    parameters: z.object({}),
    timeoutMs: 20,
    execute: (_input, ctx) => {
      seen = ctx.signal;
      return new Promise<string>(() => {});
    },
  });
  const result = await runToolCall(
    call("slow"),
    toolRegistry([slow]),
    options({ timeoutMs: 10_000 }),
  );
  assert.deepEqual([result.isError, result.output], [true, 'Error: "slow" timed out after 20 ms.']);
  assert.equal(seen?.aborted, true);

  const byOption = { ...slow, timeoutMs: undefined } as Tool;
  const second = await runToolCall(
    call("slow"),
    toolRegistry([byOption]),
    options({ timeoutMs: 15 }),
  );
  assert.equal(second.output, 'Error: "slow" timed out after 15 ms.');
});

Deno.test("runToolCall() passes cwd, call id and the run's signal to the tool", async () => {
  const controller = new AbortController();
  let context: { cwd: string; toolCallId: string; aborted: boolean } | undefined;
  const probe = defineTool({
    name: "probe",
    description: "Looks at its context",
    parameters: z.object({}),
    execute: async (_input, ctx) => {
      controller.abort();
      await Promise.resolve();
      context = { cwd: ctx.cwd, toolCallId: ctx.toolCallId, aborted: ctx.signal.aborted };
      return "seen";
    },
  });
  await runToolCall(call("probe"), toolRegistry([probe]), options({ signal: controller.signal }));
  assert.deepEqual(context, { cwd: "/work", toolCallId: "c1", aborted: true });
});

Deno.test("runToolCall() cuts oversized output and says how much was cut", async () => {
  const big = defineTool({
    name: "big",
    description: "Big output",
    parameters: z.object({}),
    execute: () => `${"h".repeat(600)}${"m".repeat(1_000)}${"t".repeat(400)}`,
  });
  const result = await runToolCall(
    call("big"),
    toolRegistry([big]),
    options({ maxOutputChars: 1_000 }),
  );
  assert.equal(result.isError, false);
  assert.match(result.output, /^h{500}\n\n\[… 1000 characters cut …\]\n\nm{100}t{400}$/);
});

Deno.test("runToolCall() keeps isError, display and metadata from a ToolOutput", async () => {
  const rich = defineTool({
    name: "rich",
    description: "Rich output",
    parameters: z.object({}),
    execute: () => ({ output: "exit 1", isError: true, display: "failed", metadata: { code: 1 } }),
  });
  const result = await runToolCall(call("rich"), toolRegistry([rich]), options());
  assert.equal(result.output, "exit 1");
  assert.equal(result.isError, true);
  assert.equal(result.display, "failed");
  assert.deepEqual(result.metadata, { code: 1 });
});

Deno.test("tool errors reach the model as error results and the run goes on", async () => {
  const model = scriptedModel([
    {
      toolCalls: [
        { name: "add", input: { a: 1 } },
        { name: "nope" },
        { name: "add", invalidInput: "{oops" },
        { name: "add", input: { a: 1, b: 2 } },
      ],
    },
    { text: "recovered" },
  ]);
  const events: AgentEvent[] = [];
  for await (const event of runAgent({ model, input: "go", tools: [add] })) events.push(event);
  const results = events.filter((e) => e.type === "tool_result");
  assert.deepEqual(results.map((e) => e.type === "tool_result" && e.isError).sort(), [
    false,
    true,
    true,
    true,
  ]);
  const sentBack = model.requests[1].messages.filter((m) => m.role === "tool");
  assert.deepEqual(sentBack.map((m) => m.role === "tool" && m.isError), [true, true, true, false]);
  assert.equal(sentBack[3].role === "tool" && sentBack[3].content, "3");
  const result = events.at(-1);
  assert.equal(result?.type === "result" && result.status, "success");
  assert.equal(result?.type === "result" && result.text, "recovered");
});

Deno.test("tool_result events carry duration, display and metadata", async () => {
  const rich = defineTool({
    name: "rich",
    description: "Rich output",
    parameters: z.object({}),
    execute: () => ({ output: "full", display: "short", metadata: { lines: 3 } }),
  });
  const model = scriptedModel([{ toolCalls: [{ name: "rich" }] }, { text: "ok" }]);
  const events: AgentEvent[] = [];
  for await (const event of runAgent({ model, input: "go", tools: [rich] })) events.push(event);
  const done = events.find((e) => e.type === "tool_result");
  assert.ok(done?.type === "tool_result");
  assert.equal(done.display, "short");
  assert.deepEqual(done.metadata, { lines: 3 });
  assert.ok(done.durationMs >= 0);
});

Deno.test("runAgent() rejects duplicate tool names before calling the model", async () => {
  const model = scriptedModel([{ text: "x" }]);
  await assert.rejects(async () => {
    for await (const _ of runAgent({ model, input: "x", tools: [add, add] })) { /* drain */ }
  }, /Two tools are named "add"/);
  assert.equal(model.calls, 0);
});
