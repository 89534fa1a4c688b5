/**
 * Shared pieces of the Anthropic provider tests: a run of an agent on the real SDK against the
 * loopback mock server, and readers of the Messages API turns the server received.
 *
 * @module
 */

import { z } from "zod";
import {
  Agent,
  type AgentEvent,
  defineTool,
  type Message,
  type RetryOptions,
  type RunResult,
} from "../mod.ts";
import { anthropicModel, type AnthropicModelOptions } from "../lib/providers/mod.ts";
import {
  type MockAnthropicReply,
  type MockRequest,
  startMockAnthropicServer,
} from "../lib/testing/mod.ts";
import { collect, FAST_RETRY, type Received, recordingTools } from "./run_support.ts";

/** What {@link runAnthropic} gives back. */
export interface AnthropicRun {
  /** Every event of the run. */
  events: AgentEvent[];
  /** The run's result. */
  result: RunResult;
  /** The tool calls the tools received, sorted by tool name. */
  received: Received[];
  /** The requests the server received. */
  requests: MockRequest[];
}

/** Options of {@link runAnthropic}. */
export interface AnthropicRunOptions {
  /** What the user says (default "Go"). */
  input?: string;
  /** The conversation so far. */
  messages?: readonly Message[];
  /** The system prompt. */
  systemPrompt?: string;
  /** Retries (default fast ones). */
  retry?: RetryOptions;
  /** Sampling temperature asked of the loop. */
  temperature?: number;
  /** The output limit asked of the loop. */
  maxOutputTokens?: number;
  /** Provider options besides the model, key and base URL. */
  model?: Partial<AnthropicModelOptions>;
}

/**
 * Runs an agent with the recording tools and `explode` (a tool that throws) on
 * `anthropicModel` against a mock server playing `replies`.
 */
export async function runAnthropic(
  replies: readonly MockAnthropicReply[],
  options: AnthropicRunOptions = {},
): Promise<AnthropicRun> {
  await using server = startMockAnthropicServer({ replies });
  const { tools, received } = recordingTools();
  const explode = defineTool({
    name: "explode",
    description: "Always fails",
    parameters: z.object({}),
    execute: () => {
      throw new Error("boom");
    },
  });
  const model = anthropicModel({
    model: "claude-test",
    apiKey: "sk-ant-test",
    baseURL: server.url,
    ...options.model,
  });
  const agent = new Agent({
    model,
    tools: [...tools, explode],
    systemPrompt: options.systemPrompt,
    temperature: options.temperature,
    maxOutputTokens: options.maxOutputTokens,
    retry: options.retry ?? FAST_RETRY,
  });
  const { events, result } = await collect(
    agent.stream(options.input ?? "Go", { messages: options.messages }),
  );
  received.sort((a, b) => a.name.localeCompare(b.name));
  return { events, result, received, requests: server.requests };
}

/** A content block of a Messages API turn, as the server received it. */
export interface WireBlock {
  type: string;
  text?: string;
  thinking?: string;
  signature?: string;
  data?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  is_error?: boolean;
  cache_control?: { type: string };
}

/** A Messages API turn as the server received it. */
export interface WireTurn {
  role: string;
  content: WireBlock[];
}

/** The turns of a request the server received. */
export function wireTurns(request: MockRequest): WireTurn[] {
  return request.body.messages as WireTurn[];
}

/** The cache breakpoints of a request: where `cache_control` was set. */
export function cacheBreakpoints(request: MockRequest): string[] {
  const marks: string[] = [];
  const system = request.body.system as WireBlock[] | undefined;
  system?.forEach((block, i) => block.cache_control && marks.push(`system[${i}]`));
  const tools = request.body.tools as { name: string; cache_control?: unknown }[] | undefined;
  tools?.forEach((tool) => tool.cache_control && marks.push(`tool ${tool.name}`));
  wireTurns(request).forEach((turn, i) =>
    turn.content.forEach((block, j) =>
      block.cache_control && marks.push(`messages[${i}].content[${j}] ${block.type}`)
    )
  );
  return marks;
}
