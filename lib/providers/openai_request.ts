/**
 * Builds a Chat Completions request body from a neutral {@link ModelRequest}.
 *
 * @module
 */

import type {
  ChatCompletionAssistantMessageParam,
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

/** Options of {@link chatRequest}: the server's habits, and who this model is. */
export interface ChatRequestOptions extends ChatRequestStyle {
  /**
   * This model's origin (see {@link chatOrigin}): provider data of the conversation's parts
   * goes back only when it came from here.
   */
  origin?: string;
}

/**
 * The origin of what a Chat Completions model sends (see `ReasoningPart.origin`):
 * `openai-chat:<provider>:<model>`.
 *
 * @example
 * ```ts
 * import { chatOrigin } from "./openai_request.ts";
 * if (chatOrigin("openrouter", "google/gemini-2.5-pro") !== "openai-chat:openrouter:google/gemini-2.5-pro") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function chatOrigin(provider: string, model: string): string {
  return `openai-chat:${provider}:${model}`;
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
  style: ChatRequestOptions = {},
): ChatCompletionCreateParamsStreaming {
  const messages: ChatCompletionMessageParam[] = [];
  if (request.system) {
    messages.push({ role: style.systemRole ?? "system", content: request.system });
  }
  const id = style.toolCallIds === "alnum9" ? alnum9 : undefined;
  for (const message of request.messages) {
    messages.push(chatMessage(message, { id, origin: style.origin }));
  }
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

/** Options of {@link chatMessage}. */
export interface ChatMessageOptions {
  /** Rewrites tool call ids (default: kept as they are). */
  id?: (id: string) => string;
  /** This model's origin: provider data made elsewhere is not sent (see {@link chatOrigin}). */
  origin?: string;
}

/**
 * One neutral message in the Chat Completions shape. Reasoning text is not sent back (most
 * servers reject it or ignore it) except to the model it came from: OpenRouter's
 * `reasoning_details` and LiteLLM's `thinking_blocks` (kept on reasoning parts) as those fields
 * of the assistant message, and reasoning that came as `reasoning_content` as that field on a turn
 * that called tools (DeepSeek's thinking mode wants it). A tool call's own fields (such as
 * Gemini's `extra_content`) go back on the call only to the model that made them (or, when
 * the call names no origin, as in sessions written before calls carried one, to any model).
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
  options: ChatMessageOptions = {},
): ChatCompletionMessageParam {
  const id = options.id ?? ((same: string) => same);
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
      const details: unknown[] = [];
      const blocks: unknown[] = [];
      const reasoning: string[] = [];
      for (const part of message.content) {
        if (part.type === "text") text += part.text;
        else if (part.type === "reasoning") {
          if (options.origin === undefined || part.origin !== options.origin) continue;
          // A loop, not `push(...list)`: a list as long as a server made it overflows the stack.
          for (const piece of _list(part.extra?.reasoning_details)) details.push(piece);
          for (const block of _list(part.extra?.thinking_blocks)) blocks.push(block);
          if (part.extra?.field === "reasoning_content") reasoning.push(part.text);
        } else {
          // A call's own fields go back only to the model that made them. Calls of sessions
          // written before Chat Completions calls carried an origin have none: their fields
          // still go, as they did then.
          const own = part.origin === undefined || part.origin === options.origin;
          calls.push({
            id: id(part.id),
            type: "function" as const,
            function: { name: part.name, arguments: JSON.stringify(part.input ?? {}) },
            ...(own ? part.extra : undefined),
          });
        }
      }
      if (calls.length === 0) {
        return _withPieces({ role: "assistant", content: text }, details, blocks);
      }
      // DeepSeek's thinking mode wants the reasoning of a turn that called tools back.
      const wire = reasoning.length > 0
        ? {
          role: "assistant" as const,
          content: text || null,
          reasoning_content: reasoning.join(""),
        }
        : { role: "assistant" as const, content: text || null };
      return _withPieces({ ...wire, tool_calls: calls }, details, blocks);
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

function _list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/**
 * An assistant message with OpenRouter's `reasoning_details` and LiteLLM's `thinking_blocks`,
 * fields beside the SDK's types.
 */
function _withPieces(
  wire: ChatCompletionAssistantMessageParam,
  details: unknown[],
  blocks: unknown[],
): ChatCompletionAssistantMessageParam {
  const pieces: Record<string, unknown[]> = {};
  if (details.length > 0) pieces.reasoning_details = details;
  if (blocks.length > 0) pieces.thinking_blocks = blocks;
  return { ...wire, ...pieces };
}
