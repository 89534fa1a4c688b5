/**
 * Provider-neutral conversation messages. Providers translate these to and from their wire
 * formats; nothing else in the library knows a wire format.
 *
 * @module
 */

/** Text written by the model or the user. */
export interface TextPart {
  /** Discriminant. */
  type: "text";
  /** The text. */
  text: string;
  /** Who made `extra` (see {@link ReasoningPart.origin}). */
  origin?: string;
  /** Opaque provider data that must go back with the text (e.g. the output item's id). */
  extra?: Record<string, unknown>;
}

/** The model's visible reasoning ("thinking"). */
export interface ReasoningPart {
  /** Discriminant. */
  type: "reasoning";
  /** The reasoning text; empty when the provider redacted it. */
  text: string;
  /** An opaque signature some providers require to receive the reasoning back. */
  signature?: string;
  /** Opaque encrypted reasoning some providers send instead of text. */
  redacted?: string;
  /**
   * Who made the part's provider data (`extra`), as its provider names it, e.g.
   * `openai-responses:openai:gpt-5`. A provider sends that data back only to the origin named
   * here, and drops it when the conversation has moved to another provider or model.
   */
  origin?: string;
  /** Opaque provider data that must go back with the reasoning (e.g. a reasoning item). */
  extra?: Record<string, unknown>;
}

/** A tool call the model made. */
export interface ToolCallPart {
  /** Discriminant. */
  type: "tool_call";
  /** The call id; tool results refer to it. */
  id: string;
  /** The tool's name. */
  name: string;
  /** The parsed arguments (`{}` when the model sent arguments that were not JSON). */
  input: unknown;
  /** The raw arguments, kept only when they could not be parsed as JSON. */
  invalidInput?: string;
  /** Opaque provider data that must go back with the call (e.g. a thought signature). */
  extra?: Record<string, unknown>;
  /**
   * Who made `extra` (see {@link ReasoningPart.origin}); absent in calls saved before Chat
   * Completions calls carried one.
   */
  origin?: string;
}

/** A message from the user. */
export interface UserMessage {
  /** Discriminant. */
  role: "user";
  /** The user's text. */
  content: string;
}

/** A message from the model: text, reasoning and tool calls, in the order they came. */
export interface AssistantMessage {
  /** Discriminant. */
  role: "assistant";
  /** The parts of the answer. */
  content: AssistantPart[];
}

/** The result of one tool call, sent back to the model. */
export interface ToolMessage {
  /** Discriminant. */
  role: "tool";
  /** The id of the call this answers. */
  toolCallId: string;
  /** The tool's name. */
  name: string;
  /** What the tool returned, as the model will see it. */
  content: string;
  /** Whether the call failed. */
  isError: boolean;
}

/** A part of an assistant message. */
export type AssistantPart = TextPart | ReasoningPart | ToolCallPart;

/** One message of a conversation. */
export type Message = UserMessage | AssistantMessage | ToolMessage;

/**
 * Creates a user message.
 *
 * @example
 * ```ts
 * import { userMessage } from "./messages.ts";
 * const message = userMessage("Hello");
 * if (message.content !== "Hello") throw new Error("unexpected");
 * ```
 */
export function userMessage(content: string): UserMessage {
  return { role: "user", content };
}

/**
 * The text of an assistant message: its text parts joined.
 *
 * @example
 * ```ts
 * import { textOf } from "./messages.ts";
 * const text = textOf({ role: "assistant", content: [{ type: "text", text: "Hi" }] });
 * if (text !== "Hi") throw new Error("unexpected");
 * ```
 */
export function textOf(message: AssistantMessage): string {
  let text = "";
  for (const part of message.content) if (part.type === "text") text += part.text;
  return text;
}

/**
 * The tool calls of an assistant message.
 *
 * @example
 * ```ts
 * import { toolCallsOf } from "./messages.ts";
 * const calls = toolCallsOf({
 *   role: "assistant",
 *   content: [{ type: "tool_call", id: "1", name: "ls", input: {} }],
 * });
 * if (calls[0].name !== "ls") throw new Error("unexpected");
 * ```
 */
export function toolCallsOf(message: AssistantMessage): ToolCallPart[] {
  return message.content.filter((part): part is ToolCallPart => part.type === "tool_call");
}

/** The default words of the incomplete-intent nudge. */
export const NUDGE_MESSAGE: string =
  "You announced an action but did not call a tool, so nothing happened. If there is more to " +
  "do, call the tool now. If you are done, give your final answer.";
