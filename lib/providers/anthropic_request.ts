/**
 * Builds an Anthropic Messages API request body from a neutral {@link ModelRequest}: the
 * system prompt as a text block, tools with their input schemas, and the conversation as
 * alternating user and assistant turns of content blocks, with prompt-cache breakpoints.
 *
 * @module
 */

import type {
  CacheControlEphemeral,
  ContentBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  Tool,
} from "@anthropic-ai/sdk/resources/messages";
import type { AssistantMessage, Message } from "../messages.ts";
import type { ModelInfo, ModelRequest } from "../model.ts";
import { anthropicOrigin, serverBlockOf } from "./anthropic_server_blocks.ts";

/** The output limit when neither the request, the options nor the model info give one. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 8192;

/** How {@link messagesRequest} shapes a request. */
export interface MessagesRequestStyle {
  /**
   * The provider's name (default `anthropic`): the provider data it made (server tool blocks,
   * the caller of a tool call) goes back to it alone.
   */
  provider?: string;
  /** The output limit when the request gives none (default `info.maxOutputTokens`, else 8192). */
  maxOutputTokens?: number;
  /** What is known about the model. */
  info?: ModelInfo;
  /** Extended thinking with this budget of tokens (at least 1,024). */
  thinking?: { budgetTokens: number };
  /** Mark prompt-cache breakpoints (default true). */
  cache?: boolean;
}

const _EPHEMERAL: CacheControlEphemeral = { type: "ephemeral" };

/** The block types that may carry a cache breakpoint. */
const _CACHEABLE: ReadonlySet<string> = new Set([
  "text",
  "tool_use",
  "tool_result",
  "server_tool_use",
  "web_search_tool_result",
  "web_fetch_tool_result",
  "code_execution_tool_result",
  "bash_code_execution_tool_result",
  "text_editor_code_execution_tool_result",
  "tool_search_tool_result",
  "container_upload",
]);

/**
 * The streaming request body for `model`. `max_tokens`, which the API requires, is the
 * request's limit, else the style's, else the model's, else 8192; with thinking it is raised
 * above the thinking budget. The neutral `temperature` is not sent: the SDK's request type has
 * no field for it, and the API version the SDK sends (2026-10-21) refuses every sampling
 * parameter, even at its default.
 *
 * @example
 * ```ts
 * import { messagesRequest } from "./anthropic_request.ts";
 * const body = messagesRequest("claude-sonnet-4-5", {
 *   system: "Be brief",
 *   messages: [{ role: "user", content: "Hi" }],
 *   tools: [],
 * });
 * if (body.max_tokens !== 8192 || body.messages[0].role !== "user") throw new Error("unexpected");
 * if (!Array.isArray(body.system) || !body.system[0].cache_control) throw new Error("unexpected");
 * ```
 */
export function messagesRequest(
  model: string,
  request: ModelRequest,
  style: MessagesRequestStyle = {},
): MessageCreateParamsStreaming {
  const cache = style.cache !== false;
  let maxTokens = request.maxOutputTokens ?? style.maxOutputTokens ??
    style.info?.maxOutputTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS;
  const body: MessageCreateParamsStreaming = {
    model,
    max_tokens: maxTokens,
    messages: anthropicMessages(request.messages, style.provider),
    stream: true,
  };
  if (request.system) {
    body.system = [{
      type: "text",
      text: request.system,
      ...(cache ? { cache_control: _EPHEMERAL } : {}),
    }];
  }
  if (request.tools.length > 0) {
    const tools: Tool[] = request.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: { type: "object", ...tool.inputSchema },
    }));
    if (cache) tools[tools.length - 1].cache_control = _EPHEMERAL;
    body.tools = tools;
  }
  if (style.thinking) {
    const budget = style.thinking.budgetTokens;
    // Thinking counts toward max_tokens, which must exceed the budget: keep the answer's room.
    if (maxTokens <= budget) maxTokens = budget + maxTokens;
    body.max_tokens = maxTokens;
    body.thinking = { type: "enabled", budget_tokens: budget };
  }
  const container = _container(request.messages, anthropicOrigin(style.provider ?? "anthropic"));
  if (container) body.container = container;
  if (cache) _markLastBlock(body.messages);
  return body;
}

/**
 * The container that code running at the provider called a tool from in the last answer: the
 * request that answers the call names it, for the code to go on there.
 */
function _container(messages: readonly Message[], origin: string): string | undefined {
  const last = messages.findLast((message) => message.role === "assistant");
  if (last?.role !== "assistant") return undefined;
  for (const part of last.content) {
    const container = part.type === "tool_call" && part.origin === origin
      ? part.extra?.container
      : undefined;
    if (typeof container === "string" && container !== "") return container;
  }
  return undefined;
}

/**
 * The conversation as Messages API turns. Tool results become `tool_result` blocks of one
 * user turn, joined by a user message that follows; consecutive turns of one role merge;
 * empty messages are left out. Reasoning goes back only as the provider gave it: with its
 * signature (`thinking`) or its encrypted data (`redacted_thinking`); reasoning from another
 * provider, which has neither, is dropped. The blocks of server tools, and the caller of a tool
 * call made by code running at the provider, go back as they came to the `provider` that made
 * them (default `anthropic`), and are left out for any other.
 *
 * @example
 * ```ts
 * import { anthropicMessages } from "./anthropic_request.ts";
 * const turns = anthropicMessages([
 *   { role: "user", content: "List" },
 *   { role: "assistant", content: [{ type: "tool_call", id: "call.1", name: "ls", input: {} }] },
 *   { role: "tool", toolCallId: "call.1", name: "ls", content: "a.txt", isError: false },
 *   { role: "user", content: "Thanks" },
 * ]);
 * const last = turns[2];
 * if (turns.length !== 3 || last.role !== "user" || !Array.isArray(last.content)) {
 *   throw new Error("unexpected");
 * }
 * const [result, text] = last.content;
 * if (result.type !== "tool_result" || result.tool_use_id !== "call_1" || text.type !== "text") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function anthropicMessages(
  messages: readonly Message[],
  provider = "anthropic",
): MessageParam[] {
  const origin = anthropicOrigin(provider);
  const turns: { role: "user" | "assistant"; content: ContentBlockParam[] }[] = [];
  const push = (role: "user" | "assistant", blocks: ContentBlockParam[]) => {
    if (blocks.length === 0) return;
    const last = turns.at(-1);
    if (last?.role !== role) turns.push({ role, content: blocks });
    else for (const block of blocks) last.content.push(block);
  };
  for (const message of messages) {
    switch (message.role) {
      case "user":
        if (message.content.trim() !== "") push("user", [{ type: "text", text: message.content }]);
        break;
      case "tool":
        push("user", [{
          type: "tool_result",
          tool_use_id: anthropicToolId(message.toolCallId),
          ...(message.content !== "" ? { content: message.content } : {}),
          is_error: message.isError,
        }]);
        break;
      case "assistant":
        push("assistant", _assistantBlocks(message, origin));
        break;
    }
  }
  _trimFinalAssistant(turns);
  return turns;
}

/**
 * A tool call id the Messages API accepts (`^[a-zA-Z0-9_-]+$`): other characters become `_`.
 * The same id always maps to the same result, so a call and its result stay paired.
 *
 * @example
 * ```ts
 * import { anthropicToolId } from "./anthropic_request.ts";
 * if (anthropicToolId("functions.ls:0") !== "functions_ls_0") throw new Error("unexpected");
 * ```
 */
export function anthropicToolId(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, "_") || "call";
}

function _assistantBlocks(message: AssistantMessage, origin: string): ContentBlockParam[] {
  const blocks: ContentBlockParam[] = [];
  for (const part of message.content) {
    const server = serverBlockOf(part, origin);
    if (server) {
      blocks.push(server);
    } else if (part.type === "reasoning") {
      if (part.redacted !== undefined) {
        blocks.push({ type: "redacted_thinking", data: part.redacted });
      } else if (part.signature !== undefined) {
        blocks.push({ type: "thinking", thinking: part.text, signature: part.signature });
      }
    } else if (part.type === "text") {
      if (part.text !== "") blocks.push({ type: "text", text: part.text });
    } else {
      const caller = part.origin === origin ? part.extra?.caller : undefined;
      blocks.push({
        type: "tool_use",
        id: anthropicToolId(part.id),
        name: part.name,
        input: _isObject(part.input) ? part.input : {},
        ...(caller !== undefined ? { caller } : {}),
      } as ContentBlockParam);
    }
  }
  return blocks;
}

/**
 * The API refuses a final assistant turn (a paused answer sent back to go on) that ends with
 * whitespace, and a text block left empty by trimming.
 */
function _trimFinalAssistant(turns: { role: string; content: ContentBlockParam[] }[]): void {
  const last = turns.at(-1);
  if (last?.role !== "assistant") return;
  const block = last.content.at(-1);
  if (block?.type !== "text") return;
  block.text = block.text.trimEnd();
  if (block.text === "") last.content.pop();
  if (last.content.length === 0) turns.pop();
}

/** Puts a cache breakpoint on the last block of the last turn that can carry one. */
function _markLastBlock(messages: MessageParam[]): void {
  const content = messages.at(-1)?.content;
  if (!Array.isArray(content)) return;
  for (let i = content.length - 1; i >= 0; i--) {
    const block = content[i];
    // Thinking blocks cannot carry a breakpoint (they are cached with the turn around them),
    // nor may blocks of types this library does not know.
    if (block.type === "thinking" || block.type === "redacted_thinking") continue;
    if (!_CACHEABLE.has(block.type)) continue;
    block.cache_control = _EPHEMERAL;
    return;
  }
}

function _isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
