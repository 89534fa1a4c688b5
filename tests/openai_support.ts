/**
 * Shared pieces of the OpenAI provider tests: a run against the loopback mock server, and
 * readers of the wire messages the server got.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Agent, type AgentEvent, type RetryOptions, type RunResult } from "../mod.ts";
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
