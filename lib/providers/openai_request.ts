/**
 * Builds a Chat Completions request body from a neutral {@link ModelRequest}.
 *
 * @module
 */

import type {
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import type { Message } from "../messages.ts";
import type { ModelRequest } from "../model.ts";

/** How a server wants its requests. */
export interface ChatRequestStyle {
  /** The role of the system prompt (default `system`; OpenAI's reasoning models like `developer`). */
  systemRole?: "system" | "developer";
  /** The name of the output limit (default `max_tokens`). */
  maxTokensParam?: "max_tokens" | "max_completion_tokens";
  /** Ask for usage in the stream (`stream_options.include_usage`, default true). */
  includeUsage?: boolean;
  /** Extra fields merged into every request body. */
  extraBody?: Record<string, unknown>;
  /** Rewrite tool call ids for servers that accept only 9 letters and digits (Mistral). */
  toolCallIds?: "alnum9";
}

/**
 * The streaming request body for `model`.
 *
 * @example
 * ```ts
 * import { chatRequest } from "./openai_request.ts";
 * const body = chatRequest("gpt-4.1-mini", { system: "Be brief", messages: [], tools: [] });
 * if (body.messages[0].role !== "system" || body.stream !== true) throw new Error("unexpected");
 * ```
 */
export function chatRequest(
  model: string,
  request: ModelRequest,
  style: ChatRequestStyle = {},
): ChatCompletionCreateParamsStreaming {
  const messages: ChatCompletionMessageParam[] = [];
  if (request.system) {
    messages.push({ role: style.systemRole ?? "system", content: request.system });
  }
  const id = style.toolCallIds === "alnum9" ? alnum9 : undefined;
  for (const message of request.messages) messages.push(chatMessage(message, id));
  const body: ChatCompletionCreateParamsStreaming = { model, messages, stream: true };
  if (style.includeUsage !== false) body.stream_options = { include_usage: true };
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
    }));
  }
  if (request.maxOutputTokens !== undefined) {
    body[style.maxTokensParam ?? "max_tokens"] = request.maxOutputTokens;
  }
  if (request.temperature !== undefined) body.temperature = request.temperature;
  return style.extraBody ? { ...body, ...style.extraBody } : body;
}

/**
 * One neutral message in the Chat Completions shape. Reasoning is not sent back: most servers
 * reject it or ignore it.
 *
 * @example
 * ```ts
 * import { chatMessage } from "./openai_request.ts";
 * const wire = chatMessage({ role: "tool", toolCallId: "c1", name: "ls", content: "", isError: false });
 * if (wire.role !== "tool" || wire.content !== "(no output)") throw new Error("unexpected");
 * ```
 */
export function chatMessage(
  message: Message,
  id: (id: string) => string = (same) => same,
): ChatCompletionMessageParam {
  switch (message.role) {
    case "user":
      return { role: "user", content: message.content };
    case "tool":
      // Several servers refuse an empty tool message.
      return {
        role: "tool",
        tool_call_id: id(message.toolCallId),
        content: message.content || "(no output)",
      };
    case "assistant": {
      let text = "";
      const calls = [];
      for (const part of message.content) {
        if (part.type === "text") text += part.text;
        else if (part.type === "tool_call") {
          calls.push({
            id: id(part.id),
            type: "function" as const,
            function: { name: part.name, arguments: JSON.stringify(part.input ?? {}) },
            ...part.extra,
          });
        }
      }
      if (calls.length === 0) return { role: "assistant", content: text };
      return { role: "assistant", content: text || null, tool_calls: calls };
    }
  }
}

/**
 * A tool call id as 9 letters and digits: kept when it already is, else derived from it
 * (the same id always gives the same result, so calls and results still match).
 *
 * @example
 * ```ts
 * import { alnum9 } from "./openai_request.ts";
 * const id = alnum9("call_0fypS1hVX");
 * if (!/^[a-zA-Z0-9]{9}$/.test(id) || alnum9("call_0fypS1hVX") !== id) throw new Error("unexpected");
 * ```
 */
export function alnum9(id: string): string {
  if (/^[a-zA-Z0-9]{9}$/.test(id)) return id;
  // FNV-1a, twice with different seeds, for 9 base-36 digits.
  let a = 0x811c9dc5, b = 0x01000193;
  for (let i = 0; i < id.length; i++) {
    a = Math.imul(a ^ id.charCodeAt(i), 0x01000193);
    b = Math.imul(b ^ id.charCodeAt(i), 0x811c9dc5);
  }
  return ((a >>> 0).toString(36) + (b >>> 0).toString(36)).padEnd(9, "0").slice(0, 9);
}
