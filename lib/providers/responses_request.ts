/**
 * Builds an OpenAI Responses request body from a neutral {@link ModelRequest}. The request
 * keeps nothing at the server (`store: false`) and asks for the reasoning's encrypted content,
 * which goes back, unchanged, on the next turn: that is how a reasoning model keeps its
 * reasoning across turns. Provider data goes back only to the model that made it (its origin);
 * the text and calls of other providers and models go as plain items.
 *
 * @module
 */

import type {
  ResponseCreateParamsStreaming,
  ResponseInputItem,
} from "openai/resources/responses/responses";
import type { AssistantPart, Message } from "../messages.ts";
import type { ModelRequest } from "../model.ts";

/** How the model reasons, as the Responses API's `reasoning` parameter says it. */
export interface ResponsesReasoning {
  /** How hard the model thinks, e.g. `minimal`, `low`, `medium`, `high`. */
  effort?: string;
  /** Ask for a summary of the reasoning, streamed as it comes. */
  summary?: "auto" | "concise" | "detailed";
}

/** What a Responses request takes besides the neutral request. */
export interface ResponsesRequestStyle {
  /** The origin of this model's provider data (see {@link responsesOrigin}). */
  origin: string;
  /**
   * The reasoning parameter, given for reasoning models only: with it the request asks for the
   * reasoning's encrypted content, which models that do not reason refuse.
   */
  reasoning?: ResponsesReasoning;
  /** Extra fields merged into every request body. */
  extraBody?: Record<string, unknown>;
  /**
   * The encrypted content of reasoning items the server could not read: left out, as another
   * origin's are.
   */
  stale?: ReadonlySet<string>;
}

/**
 * The origin that names a Responses model's provider data on message parts.
 *
 * @example
 * ```ts
 * import { responsesOrigin } from "./responses_request.ts";
 * if (responsesOrigin("openai", "gpt-5") !== "openai-responses:openai:gpt-5") throw new Error("unexpected");
 * ```
 */
export function responsesOrigin(provider: string, model: string): string {
  return `openai-responses:${provider}:${model}`;
}

/**
 * The streaming request body for `model`.
 *
 * @example
 * ```ts
 * import { responsesRequest } from "./responses_request.ts";
 * const body = responsesRequest("gpt-5", { system: "Be brief", messages: [{ role: "user", content: "Hi" }], tools: [] }, {
 *   origin: "openai-responses:openai:gpt-5",
 * });
 * if (body.instructions !== "Be brief" || body.store !== false || body.stream !== true) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function responsesRequest(
  model: string,
  request: ModelRequest,
  style: ResponsesRequestStyle,
): ResponseCreateParamsStreaming {
  const input: ResponseInputItem[] = [];
  for (const message of request.messages) {
    // A loop, not `push(...items)`: a message of as many parts as a server made overflows the stack.
    for (const item of responsesItems(message, style.origin, style.stale)) input.push(item);
  }
  const body: ResponseCreateParamsStreaming = { model, input, stream: true, store: false };
  // Models that do not reason refuse the include; a reasoning model is one given `reasoning`.
  if (style.reasoning) body.include = ["reasoning.encrypted_content"];
  if (request.system) body.instructions = request.system;
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: "function",
      name: tool.name,
      description: tool.description,
      parameters: tool.inputSchema,
      strict: false,
    }));
    body.parallel_tool_calls = true;
  }
  if (request.maxOutputTokens !== undefined) body.max_output_tokens = request.maxOutputTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (style.reasoning) {
    body.reasoning = style.reasoning as ResponseCreateParamsStreaming["reasoning"];
  }
  return style.extraBody ? { ...body, ...style.extraBody } : body;
}

/**
 * One neutral message as Responses input items. An assistant message gives, in order, the
 * reasoning items of `origin` exactly as the server sent them (each only when the item that
 * followed it goes too, as the server requires, and none of those in `stale`), a message item per text, and a function call
 * per tool call, with their item ids when `origin` made them.
 *
 * @example
 * ```ts
 * import { responsesItems } from "./responses_request.ts";
 * const origin = "openai-responses:openai:gpt-5";
 * const item = { id: "rs_1", type: "reasoning", summary: [], encrypted_content: "gAAA" };
 * const items = responsesItems({
 *   role: "assistant",
 *   content: [
 *     { type: "reasoning", text: "", origin, extra: { item } },
 *     { type: "tool_call", id: "call_1", name: "ls", input: {}, origin, extra: { itemId: "fc_1" } },
 *   ],
 * }, origin);
 * if (items[0] !== item || (items[1] as { id?: string }).id !== "fc_1") throw new Error("unexpected");
 * ```
 */
export function responsesItems(
  message: Message,
  origin: string,
  stale?: ReadonlySet<string>,
): ResponseInputItem[] {
  switch (message.role) {
    case "user":
      return [{ role: "user", content: [{ type: "input_text", text: message.content }] }];
    case "tool":
      return [{
        type: "function_call_output",
        call_id: message.toolCallId,
        output: message.content || "(no output)",
      }];
    case "assistant": {
      const items: ResponseInputItem[] = [];
      const identified = _identified(message.content, origin, stale);
      for (const [i, part] of message.content.entries()) {
        const own = part.origin === origin ? part.extra : undefined;
        if (part.type === "reasoning") {
          if (identified[i]) items.push(own?.item as ResponseInputItem);
        } else if (part.type === "text") {
          if (part.text === "") continue;
          const item: Record<string, unknown> = {
            type: "message",
            role: "assistant",
            content: [{ type: "output_text", text: part.text, annotations: [] }],
            status: "completed",
          };
          if (typeof own?.id === "string") item.id = own.id;
          if (typeof own?.phase === "string") item.phase = own.phase;
          items.push(item as unknown as ResponseInputItem);
        } else {
          items.push({
            type: "function_call",
            call_id: part.id,
            name: part.name,
            arguments: JSON.stringify(part.input ?? {}),
            ...(typeof own?.itemId === "string" ? { id: own.itemId } : {}),
          });
        }
      }
      return items;
    }
  }
}

/**
 * Which parts go to the server as the output items `origin` made, with their ids. A reasoning
 * item goes only when the part after it goes that way too: the server refuses a reasoning item
 * without the item that followed it in the output.
 */
function _identified(
  parts: readonly AssistantPart[],
  origin: string,
  stale: ReadonlySet<string> | undefined,
): boolean[] {
  const identified = parts.map(() => false);
  for (let i = parts.length - 1; i >= 0; i--) {
    const part = parts[i];
    if (part.origin !== origin) continue;
    if (part.type === "reasoning") {
      // Kept nowhere at the server (`store: false`), an item without its encrypted content
      // names nothing the server can find.
      const item = part.extra?.item;
      identified[i] = _isItem(item) && typeof item.encrypted_content === "string" &&
        !stale?.has(item.encrypted_content) && identified[i + 1] === true;
    } else if (part.type === "text") {
      identified[i] = part.text !== "" && typeof part.extra?.id === "string";
    } else {
      identified[i] = typeof part.extra?.itemId === "string";
    }
  }
  return identified;
}

function _isItem(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * The encrypted content of the reasoning items a request body sends back.
 *
 * @example
 * ```ts
 * import { encryptedReasoningOf } from "./responses_request.ts";
 * const body = { input: [{ type: "reasoning", id: "rs_1", encrypted_content: "gAAA" }] };
 * if (encryptedReasoningOf(body).join() !== "gAAA") throw new Error("unexpected");
 * ```
 */
export function encryptedReasoningOf(body: { input?: unknown }): string[] {
  if (!Array.isArray(body.input)) return [];
  return body.input.flatMap((item) =>
    _isItem(item) && item.type === "reasoning" && typeof item.encrypted_content === "string"
      ? [item.encrypted_content]
      : []
  );
}
