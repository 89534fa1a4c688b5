/**
 * Shared pieces of the OpenAI provider tests: a run against the loopback mock server, and
 * readers of the wire messages the server got.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  Agent,
  type AgentEvent,
  type Message,
  type ModelEvent,
  type RetryOptions,
  type RunResult,
  type ToolCallPart,
  userMessage,
} from "../mod.ts";
import { openaiModel } from "../lib/providers/mod.ts";
import {
  type MockHabits,
  type MockReply,
  type MockRequest,
  startMockOpenAIServer,
} from "../lib/testing/mod.ts";
import { collect, FAST_RETRY, type Received, recordingTools } from "./run_support.ts";

/** What {@link runMock} gives back. */
export interface MockRun {
  /** Every event of the run. */
  events: AgentEvent[];
  /** The run's result. */
  result: RunResult;
  /** The tool calls the tools received, sorted by tool name. */
  received: Received[];
  /** The requests the server received. */
  requests: MockRequest[];
}

/** Runs an agent with the recording tools against a mock server playing `replies`. */
export async function runMock(
  replies: readonly MockReply[],
  options: { habits?: MockHabits; input?: string; retry?: RetryOptions } = {},
): Promise<MockRun> {
  await using server = startMockOpenAIServer({ replies, habits: options.habits });
  const { tools, received } = recordingTools();
  const agent = new Agent({
    model: "openai/test-model",
    baseURL: server.url,
    apiKey: "sk-test",
    tools,
    retry: options.retry ?? FAST_RETRY,
  });
  const { events, result } = await collect(agent.stream(options.input ?? "Go"));
  received.sort((a, b) => a.name.localeCompare(b.name));
  return { events, result, received, requests: server.requests };
}

/** A Chat Completions message as the server received it. */
export interface WireMessage {
  role: string;
  content?: string | null;
  tool_call_id?: string;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
}

/** The messages of a request the server received. */
export function wireMessages(request: MockRequest): WireMessage[] {
  return request.body.messages as WireMessage[];
}

/**
 * Asserts that the tool calls the model made went back to it in the next request: the
 * assistant message carries the calls the tools received, and one tool message answers each.
 */
export function assertSentBack(next: MockRequest, received: readonly Received[]): void {
  const messages = wireMessages(next);
  const assistant = messages.findLast((message) => message.role === "assistant");
  assert.ok(assistant?.tool_calls, "the next request carries the assistant's tool calls");
  const sent = assistant.tool_calls.map((call) => ({
    id: call.id,
    name: call.function.name,
    input: JSON.parse(call.function.arguments),
  }));
  const byName = (a: Received, b: Received) => a.name.localeCompare(b.name);
  assert.deepEqual(sent.sort(byName), [...received].sort(byName));
  const answered = messages.filter((message) => message.role === "tool")
    .map((message) => message.tool_call_id);
  assert.deepEqual(answered.sort(), sent.map((call) => call.id).sort());
}

/** What one model call against a recorded stream gave: its events, read into their pieces. */
export interface Replay {
  /** Every event the model yielded. */
  events: ModelEvent[];
  /** The joined text deltas. */
  text: string;
  /** The joined reasoning deltas. */
  reasoning: string;
  /** The complete tool calls. */
  calls: ToolCallPart[];
  /** The finish event. */
  finish: Extract<ModelEvent, { type: "finish" }>;
  /** The requests the server received. */
  requests: MockRequest[];
}

/**
 * Streams one answer of `openaiModel` from a server that plays `reply` (a recorded stream as
 * `chunks`, or a whole JSON `body`), as `provider` and `model` name it.
 */
export async function replay(
  reply: MockReply,
  options: { provider?: string; model?: string; messages?: Message[] } = {},
): Promise<Replay> {
  await using server = startMockOpenAIServer({ replies: [reply] });
  const model = openaiModel({
    model: options.model ?? "test-model",
    provider: options.provider,
    baseURL: server.url,
    apiKey: "sk-test",
  });
  const events = await Array.fromAsync(
    model.stream({ messages: options.messages ?? [userMessage("Go")], tools: [] }),
  );
  const finish = events.at(-1);
  assert.equal(finish?.type, "finish", "the last event is the finish");
  const joined = (type: "text_delta" | "reasoning_delta") =>
    events.flatMap((event) => event.type === type ? [event.text] : []).join("");
  return {
    events,
    text: joined("text_delta"),
    reasoning: joined("reasoning_delta"),
    calls: events.flatMap((event) => event.type === "tool_call" ? [event.call] : []),
    finish: finish as Extract<ModelEvent, { type: "finish" }>,
    requests: server.requests,
  };
}
