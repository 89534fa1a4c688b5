/**
 * The `todo` tool: the model's task list for the run. The model sends the whole list each time;
 * the tool checks it, keeps it, and shows it back as a checklist.
 *
 * @module
 */

import { z } from "zod";
import { defineTool, type Tool } from "../lib/tool.ts";

/** A task of the list. */
export interface Todo {
  /** What to do, in a few words. */
  content: string;
  /** Where the task stands. */
  status: "pending" | "in_progress" | "done";
}

/** The input of the `todo` tool. */
export interface TodoInput {
  /** The whole list, replacing the previous one. */
  todos: Todo[];
}

/** Options of {@link createTodoTool}. */
export interface TodoToolOptions {
  /** Called with a copy of the new list after each accepted update. */
  onChange?: (todos: Todo[]) => void;
}

/** The `todo` tool, with the list it holds. */
export interface TodoTool extends Tool<TodoInput> {
  /** The current list (empty until the model sends one). */
  readonly todos: readonly Todo[];
}

const _TODO_INPUT = z.object({
  todos: z.array(
    z.object({
      content: z.string().trim().min(1).describe("The task, in a few words."),
      status: z.enum(["pending", "in_progress", "done"]).describe(
        "pending (not started), in_progress (being worked on now) or done.",
      ),
    }),
  ).describe("The complete task list, in order; it replaces the previous list."),
});

const _MARKS: Record<Todo["status"], string> = { done: "[x]", in_progress: "[>]", pending: "[ ]" };

/**
 * Creates the `todo` tool. Each call replaces the whole list; at most one task may be
 * `in_progress`. Each factory call starts a fresh, empty list.
 *
 * @example
 * ```ts
 * import { createTodoTool } from "./todo.ts";
 * const todo = createTodoTool();
 * const input = todo.parse!({
 *   todos: [{ content: "Read the code", status: "done" }, { content: "Fix it", status: "in_progress" }],
 * });
 * if (!input.success) throw new Error("unexpected");
 * const result = await todo.execute(input.data, {
 *   cwd: ".",
 *   signal: new AbortController().signal,
 *   toolCallId: "1",
 * });
 * if (typeof result === "string" || !result.output.includes("[>] Fix it")) {
 *   throw new Error("unexpected");
 * }
 * if (todo.todos.length !== 2) throw new Error("unexpected");
 * ```
 */
export function createTodoTool(options: TodoToolOptions = {}): TodoTool {
  let todos: Todo[] = [];
  const tool = defineTool({
    name: "todo",
    description: "Keeps your task list for this run and shows it back as a checklist. Use it " +
      "for work of three or more steps: write the steps down first, then keep the list " +
      "current as you go, marking one task in_progress before you start it and done as soon " +
      "as it is finished. Send the whole list every time (it replaces the previous one), with " +
      "at most one task in_progress. Skip it for simple one-step requests.",
    parameters: _TODO_INPUT,
    capabilities: [],
    execute: ({ todos: next }) => {
      const current = next.filter((todo) => todo.status === "in_progress");
      if (current.length > 1) {
        throw new Error(
          `${current.length} tasks are in_progress (${
            current.map((todo) => `"${todo.content}"`).join(", ")
          }): only one may be. Mark the others pending or done and send the list again.`,
        );
      }
      todos = next.map(({ content, status }) => ({ content, status }));
      options.onChange?.(todos.map((todo) => ({ ...todo })));
      const checklist = _render(todos);
      return {
        output: checklist,
        display: checklist,
        metadata: { todos: todos.map((todo) => ({ ...todo })) },
      };
    },
  });
  return Object.defineProperty(tool, "todos", {
    get: (): readonly Todo[] => todos.map((todo) => ({ ...todo })),
    enumerable: true,
  }) as TodoTool;
}

function _render(todos: readonly Todo[]): string {
  if (todos.length === 0) return "The task list is empty.";
  const count = (status: Todo["status"]) => todos.filter((todo) => todo.status === status).length;
  const summary = `Tasks: ${count("done")}/${todos.length} done, ${count("in_progress")} in ` +
    `progress, ${count("pending")} pending`;
  return [summary, ...todos.map((todo) => `${_MARKS[todo.status]} ${todo.content}`)].join("\n");
}
