/**
 * The narrow interface between the agent loop and a language model. Providers implement it;
 * the loop knows nothing else about them.
 *
 * @module
 */

import type { Message, ToolCallPart } from "./messages.ts";
import type { Usage } from "./usage.ts";

/** A JSON Schema object, as sent to the model to describe a tool's input. */
export type JsonSchema = { [key: string]: unknown };

/** A tool as the model sees it. */
export interface ToolDefinition {
  /** The tool's name. */
  name: string;
  /** What the tool does and when to use it. */
  description: string;
  /** The JSON Schema of the tool's input object. */
  inputSchema: JsonSchema;
}

/**
 * Why a model call ended: a natural stop, tool calls, the output limit, a content filter, a
 * refusal (the answer's text is the model's refusal), a pause the model resumes when called
 * again with its partial answer, or anything else a provider reports.
 */
export type FinishReason =
  | "stop"
  | "tool_calls"
  | "length"
  | "content_filter"
  | "refusal"
  | "pause"
  | "other";

/** Prices in US dollars per million tokens. */
export interface Pricing {
  /** Input tokens not read from a cache. */
  input: number;
  /** Output tokens. */
  output: number;
  /** Input tokens read from a prompt cache (default the input price). */
  cacheRead?: number;
  /** Input tokens written to a prompt cache (default the input price). */
  cacheWrite?: number;
  /**
   * Prices for long requests: a model call whose request holds more than `above` input tokens
   * (cached ones included) is charged at the tier with the highest such `above`, on every token
   * of that call. The base prices apply up to the lowest threshold.
   */
  tiers?: {
    /** The input tokens of one request past which this tier applies. */
    above: number;
    /** Input tokens not read from a cache. */
    input: number;
    /** Output tokens. */
    output: number;
    /** Input tokens read from a prompt cache (default this tier's input price). */
    cacheRead?: number;
    /** Input tokens written to a prompt cache (default this tier's input price). */
    cacheWrite?: number;
  }[];
}

/** What is known about a model: its limits, and its prices when known. */
export interface ModelInfo {
  /** The most tokens a request and its answer may hold together. */
  contextWindow: number;
  /** The most output tokens one answer may have. */
  maxOutputTokens: number;
  /** Prices; absent when unknown. Local models cost nothing. */
  pricing?: Pricing;
}

/** One call to a model. */
export interface ModelRequest {
  /** The system prompt. */
  system?: string;
  /** The conversation so far. The model must not change it. */
  messages: readonly Message[];
  /** The tools the model may call. */
  tools: readonly ToolDefinition[];
  /** The most output tokens the model may produce. */
  maxOutputTokens?: number;
  /** Sampling temperature. */
  temperature?: number;
  /** Aborts the call. */
  signal?: AbortSignal;
}

/** What a model yields while it answers. */
export type ModelEvent =
  | {
    /** A piece of the answer's text. */
    type: "text_delta";
    /** The text. */
    text: string;
  }
  | {
    /** A piece of the model's reasoning. */
    type: "reasoning_delta";
    /** The text. */
    text: string;
  }
  | {
    /** The end of a reasoning block, with what the provider needs to receive it back. */
    type: "reasoning_end";
    /** An opaque signature of the block. */
    signature?: string;
    /** Opaque encrypted reasoning, when the provider redacted it. */
    redacted?: string;
    /** Who made `extra` (see `ReasoningPart.origin`). */
    origin?: string;
    /** Opaque provider data to send back with the reasoning. */
    extra?: Record<string, unknown>;
  }
  | {
    /** The end of a block of text, with what the provider needs to receive it back. */
    type: "text_end";
    /** Who made `extra` (see `ReasoningPart.origin`). */
    origin?: string;
    /** Opaque provider data to send back with the text. */
    extra?: Record<string, unknown>;
  }
  | {
    /** A complete tool call. */
    type: "tool_call";
    /** The call. */
    call: ToolCallPart;
  }
  | {
    /** The end of the answer. Always the last event of a successful call. */
    type: "finish";
    /** Why the answer ended. */
    reason: FinishReason;
    /** Tokens the call consumed. */
    usage: Usage;
  };

/**
 * A language model. `stream()` yields the answer's events and ends with one `finish` event;
 * it throws an {@link import("./errors.ts").ProviderError} when the provider fails.
 *
 * @example
 * ```ts
 * import type { Model, ModelEvent } from "./model.ts";
 * const echo: Model = {
 *   provider: "echo",
 *   id: "echo-1",
 *   async *stream(request): AsyncGenerator<ModelEvent> {
 *     const last = request.messages.at(-1);
 *     yield { type: "text_delta", text: last?.role === "user" ? last.content : "" };
 *     yield { type: "finish", reason: "stop", usage: { inputTokens: 1, outputTokens: 1 } };
 *   },
 * };
 * ```
 */
export interface Model {
  /** The provider's name, e.g. `openai`. */
  readonly provider: string;
  /** The model's id at the provider, e.g. `gpt-4.1-mini`. */
  readonly id: string;
  /** Limits and prices, when known. */
  readonly info?: ModelInfo;
  /** Streams one answer. */
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
}
