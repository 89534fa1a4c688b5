import "./isolated_env.ts";
import assert from "node:assert/strict";
import { type AgentEvent, runAgent, type ToolOutput } from "../mod.ts";
import { runToolCall } from "../lib/tool_runner.ts";
import { toolRegistry } from "../lib/tool.ts";
import { scriptedModel } from "../lib/testing/mod.ts";
import { createTodoTool, type Todo, type TodoTool } from "../tools/todo.ts";

async function update(tool: TodoTool, todos: unknown): Promise<ToolOutput> {
  const checked = tool.parse!({ todos });
  assert.ok(checked.success, "the input fits the schema");
  const result = await tool.execute(checked.data, {
    cwd: ".",
    signal: new AbortController().signal,
    toolCallId: "t1",
  });
  assert.ok(typeof result !== "string");
  return result;
}

Deno.test("createTodoTool() replaces the whole list on each call and renders it", async () => {
  const tool = createTodoTool();
  assert.deepEqual(tool.todos, []);
  await update(tool, [
    { content: "Read the code", status: "in_progress" },
    { content: "Fix the bug", status: "pending" },
    { content: "Run the tests", status: "pending" },
  ]);
  const result = await update(tool, [
    { content: "Read the code", status: "done" },
    { content: "Fix the bug", status: "in_progress" },
  ]);
  const checklist = "Tasks: 1/2 done, 1 in progress, 0 pending\n" +
    "[x] Read the code\n" +
    "[>] Fix the bug";
  assert.equal(result.output, checklist);
  assert.equal(result.display, checklist);
  assert.equal(result.isError, undefined);
  assert.deepEqual(result.metadata, {
    todos: [
      { content: "Read the code", status: "done" },
      { content: "Fix the bug", status: "in_progress" },
    ],
  });
  assert.deepEqual(tool.todos, [
    { content: "Read the code", status: "done" },
    { content: "Fix the bug", status: "in_progress" },
  ]);
  const cleared = await update(tool, []);
  assert.equal(cleared.output, "The task list is empty.");
  assert.deepEqual(tool.todos, []);
});

Deno.test("createTodoTool() refuses two tasks in progress and keeps the old list", async () => {
  const tool = createTodoTool();
  await update(tool, [{ content: "One", status: "pending" }]);
  const result = await runToolCall(
    {
      type: "tool_call",
      id: "c1",
      name: "todo",
      input: {
        todos: [
          { content: "One", status: "in_progress" },
          { content: "Two", status: "in_progress" },
        ],
      },
    },
    toolRegistry([tool]),
    { cwd: ".", signal: new AbortController().signal },
  );
  assert.equal(result.isError, true);
  assert.equal(
    result.output,
    'Error: 2 tasks are in_progress ("One", "Two"): only one may be. Mark the others pending ' +
      "or done and send the list again.",
  );
  assert.deepEqual(tool.todos, [{ content: "One", status: "pending" }]);
});

Deno.test("createTodoTool() refuses empty contents and unknown statuses", () => {
  const tool = createTodoTool();
  assert.equal(tool.parse!({ todos: [{ content: "   ", status: "pending" }] }).success, false);
  assert.equal(tool.parse!({ todos: [{ content: "x", status: "started" }] }).success, false);
  assert.equal(tool.parse!({}).success, false);
  const trimmed = tool.parse!({ todos: [{ content: "  Ship it ", status: "done" }] });
  assert.deepEqual(trimmed, {
    success: true,
    data: { todos: [{ content: "Ship it", status: "done" }] },
  });
  assert.deepEqual(tool.capabilities, []);
});

Deno.test("createTodoTool() calls onChange with each accepted list", async () => {
  const seen: Todo[][] = [];
  const tool = createTodoTool({ onChange: (todos) => seen.push(todos) });
  await update(tool, [{ content: "A", status: "in_progress" }]);
  await assert.rejects(() =>
    update(tool, [{ content: "A", status: "in_progress" }, { content: "B", status: "in_progress" }])
  );
  await update(tool, [{ content: "A", status: "done" }]);
  assert.deepEqual(seen, [
    [{ content: "A", status: "in_progress" }],
    [{ content: "A", status: "done" }],
  ]);
  // The listener's copy cannot change the tool's list.
  seen[1][0].status = "pending";
  assert.deepEqual(tool.todos, [{ content: "A", status: "done" }]);
});

Deno.test("createTodoTool() gives each tool its own list", async () => {
  const first = createTodoTool();
  const second = createTodoTool();
  await update(first, [{ content: "Only in the first", status: "pending" }]);
  assert.deepEqual(first.todos, [{ content: "Only in the first", status: "pending" }]);
  assert.deepEqual(second.todos, []);
});

Deno.test("runAgent() passes the todo checklist to the tool_result event", async () => {
  const tool = createTodoTool();
  const model = scriptedModel([
    {
      toolCalls: [{
        name: "todo",
        input: {
          todos: [
            { content: "Plan", status: "done" },
            { content: "Build", status: "in_progress" },
            { content: "Test", status: "pending" },
          ],
        },
      }],
    },
    { text: "Working on it." },
  ]);
  const events: AgentEvent[] = [];
  for await (const event of runAgent({ model, input: "go", tools: [tool] })) events.push(event);
  const result = events.find((event) => event.type === "tool_result");
  assert.ok(result?.type === "tool_result");
  const checklist = "Tasks: 1/3 done, 1 in progress, 1 pending\n[x] Plan\n[>] Build\n[ ] Test";
  assert.equal(result.name, "todo");
  assert.equal(result.isError, false);
  assert.equal(result.output, checklist);
  assert.equal(result.display, checklist);
  // The model saw the checklist too.
  const sent = model.requests[1].messages.find((message) => message.role === "tool");
  assert.equal(sent?.role === "tool" && sent.content, checklist);
  assert.equal(tool.todos.length, 3);
});
