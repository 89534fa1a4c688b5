/**
 * What an editor is told of a run, in the Agent Client Protocol's words: each event of the run
 * as the `session/update` it is (message and thought chunks, tool calls with their kind, status,
 * locations, diffs and output, the task list as a plan), and a saved conversation replayed as
 * the updates it was.
 *
 * @module
 */

import { isAbsolute, resolve } from "node:path";
import type { RunLoopEvent } from "../../runloop/events.ts";
import type { Message } from "../../messages.ts";
import type {
  SessionUpdate,
  ToolCallContent,
  ToolCallLocation,
  ToolKind,
} from "@agentclientprotocol/sdk";

/** The kind of each built-in tool, so that an editor shows it as what it does. */
const _KINDS: Readonly<Record<string, ToolKind>> = {
  read: "read",
  write: "edit",
  edit: "edit",
  ls: "search",
  glob: "search",
  grep: "search",
  recall: "search",
  bash: "execute",
  fetch: "fetch",
  web_search: "fetch",
  todo: "think",
};

/** A tool call as an editor shows it: its title, kind and the places it touches. */
export interface ToolCallView {
  /** A short title, e.g. "Read src/a.ts" or "`ls -la`". */
  title: string;
  /** What kind of thing it does. */
  kind: ToolKind;
  /** The files it reads or changes, absolute, with the line where known. */
  locations: ToolCallLocation[];
}

/**
 * How a tool call is shown before it runs.
 *
 * @example
 * ```ts
 * import { toolCallView } from "./updates.ts";
 * const view = toolCallView("read", { path: "src/a.ts", offset: 10 }, "/w");
 * if (view.kind !== "read" || view.locations[0].path !== "/w/src/a.ts" || view.locations[0].line !== 10) {
 *   throw new Error(JSON.stringify(view));
 * }
 * ```
 */
export function toolCallView(name: string, input: unknown, cwd: string): ToolCallView {
  const args = (input && typeof input === "object" ? input : {}) as Record<string, unknown>;
  const kind = _KINDS[name] ?? "other";
  const path = typeof args.path === "string" && args.path ? _absolute(args.path, cwd) : undefined;
  const line = typeof args.offset === "number" ? args.offset : undefined;
  const locations = path && name !== "ls" && name !== "glob" && name !== "grep"
    ? [line === undefined ? { path } : { path, line }]
    : [];
  const shown = typeof args.path === "string" ? args.path : "";
  let title: string;
  switch (name) {
    case "read":
      title = `Read ${shown}${line ? ` (from line ${line})` : ""}`;
      break;
    case "write":
      title = `Write ${shown}`;
      break;
    case "edit":
      title = `Edit ${shown}`;
      break;
    case "ls":
      title = `List ${shown || "."}`;
      break;
    case "glob":
      title = `Find ${String(args.pattern ?? "")}${shown ? ` in ${shown}` : ""}`;
      break;
    case "grep":
      title = `Search for ${JSON.stringify(String(args.pattern ?? ""))}${
        shown ? ` in ${shown}` : ""
      }`;
      break;
    case "bash":
      title = `\`${_oneLine(String(args.command ?? ""), 120)}\``;
      break;
    case "fetch":
      title = `Fetch ${String(args.url ?? "")}`;
      break;
    case "web_search":
      title = `Search the web for ${JSON.stringify(String(args.query ?? ""))}`;
      break;
    case "todo":
      title = "Update the task list";
      break;
    case "recall":
      title = `Recall ${JSON.stringify(String(args.query ?? ""))}`;
      break;
    default:
      title = name;
  }
  return { title, kind, locations };
}

/**
 * The updates an event makes, given the working directory (for paths) and the tool calls seen
 * so far in the run (by id: their name and input, for what their results show). Events an
 * editor has no word for make none.
 *
 * @example
 * ```ts
 * import { eventUpdates } from "./updates.ts";
 * const calls = new Map();
 * eventUpdates({ type: "tool_call", id: "c1", name: "edit", input: { path: "a.txt", old_string: "x", new_string: "y" } }, "/w", calls);
 * const [done] = eventUpdates({ type: "tool_result", id: "c1", name: "edit", output: "ok", isError: false, durationMs: 1 }, "/w", calls);
 * const diff = done.sessionUpdate === "tool_call_update" ? done.content?.[0] : undefined;
 * if (diff?.type !== "diff" || diff.oldText !== "x" || diff.newText !== "y" || diff.path !== "/w/a.txt") {
 *   throw new Error(JSON.stringify(done));
 * }
 * ```
 */
export function eventUpdates(
  event: RunLoopEvent,
  cwd: string,
  calls: Map<string, { name: string; input: unknown }>,
): SessionUpdate[] {
  switch (event.type) {
    case "text_delta":
      return event.text ? [_chunk("agent_message_chunk", event.text)] : [];
    case "reasoning_delta":
      return event.text ? [_chunk("agent_thought_chunk", event.text)] : [];
    case "tool_call": {
      calls.set(event.id, { name: event.name, input: event.input });
      return [{
        sessionUpdate: "tool_call",
        toolCallId: event.id,
        ...toolCallView(event.name, event.input, cwd),
        status: "in_progress",
        rawInput: event.input,
      }];
    }
    case "tool_result": {
      const call = calls.get(event.id) ?? { name: event.name, input: {} };
      calls.delete(event.id);
      return _resultUpdates(event, call.input, cwd);
    }
    case "retry":
      return [_chunk("agent_thought_chunk", `\n(The model's answer failed; trying again.)\n`)];
    default:
      return [];
  }
}

/**
 * A saved conversation as the updates an editor shows it with (for `session/load`): the user's
 * messages, the answers and their reasoning, each tool call with its result.
 *
 * @example
 * ```ts
 * import { historyUpdates } from "./updates.ts";
 * const updates = historyUpdates([
 *   { role: "user", content: "Hi" },
 *   { role: "assistant", content: [{ type: "text", text: "Hello" }] },
 * ], "/w");
 * if (updates.map((update) => update.sessionUpdate).join() !== "user_message_chunk,agent_message_chunk") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function historyUpdates(messages: readonly Message[], cwd: string): SessionUpdate[] {
  const updates: SessionUpdate[] = [];
  const calls = new Map<string, { name: string; input: unknown }>();
  for (const message of messages) {
    if (message.role === "user") {
      updates.push(_chunk("user_message_chunk", message.content));
    } else if (message.role === "assistant") {
      for (const part of message.content) {
        if (part.type === "text" && part.text) {
          updates.push(_chunk("agent_message_chunk", part.text));
        } else if (part.type === "reasoning" && part.text) {
          updates.push(_chunk("agent_thought_chunk", part.text));
        } else if (part.type === "tool_call") {
          updates.push(
            ...eventUpdates(
              { type: "tool_call", id: part.id, name: part.name, input: part.input },
              cwd,
              calls,
            ),
          );
        }
      }
    } else {
      updates.push(
        ...eventUpdates(
          {
            type: "tool_result",
            id: message.toolCallId,
            name: message.name,
            output: message.content,
            isError: message.isError,
            durationMs: 0,
          },
          cwd,
          calls,
        ),
      );
    }
  }
  return updates;
}

/** What a finished tool call shows: its status, output or diff, where it was, the plan. */
function _resultUpdates(
  event: Extract<RunLoopEvent, { type: "tool_result" }>,
  input: unknown,
  cwd: string,
): SessionUpdate[] {
  const args = (input && typeof input === "object" ? input : {}) as Record<string, unknown>;
  const metadata = event.metadata ?? {};
  const path = typeof args.path === "string" ? _absolute(args.path, cwd) : undefined;
  let content: ToolCallContent[];
  if (!event.isError && path && event.name === "edit" && typeof args.new_string === "string") {
    content = [{
      type: "diff",
      path,
      oldText: typeof args.old_string === "string" ? args.old_string : null,
      newText: args.new_string,
    }];
  } else if (!event.isError && path && event.name === "write" && typeof args.content === "string") {
    content = [{ type: "diff", path, oldText: null, newText: args.content }];
  } else if (typeof metadata.terminalId === "string") {
    // The editor shows the command's terminal, and the model's view of its output beneath.
    content = [{ type: "terminal", terminalId: metadata.terminalId }, _text(event.output)];
  } else {
    content = [_text(event.output)];
  }
  const line = typeof metadata.line === "number" ? metadata.line : undefined;
  const updates: SessionUpdate[] = [{
    sessionUpdate: "tool_call_update",
    toolCallId: event.id,
    status: event.isError ? "failed" : "completed",
    content,
    ...(path && line !== undefined ? { locations: [{ path, line }] } : {}),
  }];
  const todos = metadata.todos;
  if (event.name === "todo" && !event.isError && Array.isArray(todos)) {
    updates.push({
      sessionUpdate: "plan",
      entries: todos.map((todo: { content: string; status: string }) => ({
        content: todo.content,
        priority: "medium" as const,
        status: todo.status === "done"
          ? "completed" as const
          : todo.status === "in_progress"
          ? "in_progress" as const
          : "pending" as const,
      })),
    });
  }
  return updates;
}

function _chunk(
  kind: "agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk",
  text: string,
): SessionUpdate {
  return { sessionUpdate: kind, content: { type: "text", text } };
}

function _text(text: string): ToolCallContent {
  return { type: "content", content: { type: "text", text } };
}

function _absolute(path: string, cwd: string): string {
  return isAbsolute(path) ? path : resolve(cwd, path);
}

function _oneLine(text: string, max: number): string {
  const line = text.trim().split("\n")[0];
  return line.length > max || text.trim().includes("\n") ? `${line.slice(0, max - 1)}…` : line;
}
