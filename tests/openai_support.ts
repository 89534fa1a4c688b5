/**
 * Shared pieces of the OpenAI provider tests: tools that record what they receive, a run
 * against the loopback mock server, and readers of the wire messages the server got.
 *
 * @module
 */

import assert from "node:assert/strict";
import { z } from "zod";
import {
  Agent,
  type AgentEvent,
  defineTool,
  type Message,
  type RetryOptions,
  type RunResult,
  type Tool,
} from "../mod.ts";
import {
  type MockHabits,
  type MockReply,
  type MockRequest,
  startMockOpenAIServer,
} from "../lib/testing/mod.ts";

/** Retries with tiny delays, so fault tests stay fast. */
export const FAST_RETRY: RetryOptions = { initialDelayMs: 1, maxDelayMs: 5 };

/** A tool call as the tool itself received it. */
export interface Received {
  /** The call id the tool saw. */
  id: string;
  /** The tool's name. */
  name: string;
  /** The checked input. */
  input: unknown;
}

/** `get_weather`, `add` and the zero-parameter `now`, each recording the calls it receives. */
export function recordingTools(): { tools: Tool[]; received: Received[] } {
  const received: Received[] = [];
  const weather = defineTool({
    name: "get_weather",
    description: "Current weather for a city",
    parameters: z.object({ city: z.string() }),
    execute: (input, ctx) => {
      received.push({ id: ctx.toolCallId, name: "get_weather", input });
      return `22°C in ${input.city}`;
    },
  });
  const add = defineTool({
    name: "add",
    description: "Adds two numbers",
    parameters: z.object({ a: z.number(), b: z.number() }),
    execute: (input, ctx) => {
      received.push({ id: ctx.toolCallId, name: "add", input });
      return String(input.a + input.b);
    },
  });
  const now = defineTool({
    name: "now",
    description: "The current time",
    parameters: z.object({}),
    execute: (input, ctx) => {
      received.push({ id: ctx.toolCallId, name: "now", input });
      return "12:00";
    },
  });
  return { tools: [weather, add, now], received };
}

/** Drains a run, keeping its events. */
export async function collect(
  run: AsyncGenerator<AgentEvent, RunResult>,
): Promise<{ events: AgentEvent[]; result: RunResult }> {
  const events: AgentEvent[] = [];
  let step = await run.next();
  while (!step.done) {
    events.push(step.value);
    step = await run.next();
  }
  return { events, result: step.value };
}

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

/** The events of one type. */
export function eventsOf<T extends AgentEvent["type"]>(
  events: readonly AgentEvent[],
  type: T,
): Extract<AgentEvent, { type: T }>[] {
  return events.filter((event): event is Extract<AgentEvent, { type: T }> => event.type === type);
}

/** The joined text of the events of one delta type. */
export function deltaText(
  events: readonly AgentEvent[],
  type: "text_delta" | "reasoning_delta",
): string {
  return eventsOf(events, type).map((event) => event.text).join("");
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

/** Asserts that every tool call in a history has exactly one result. */
export function assertEveryCallAnswered(messages: readonly Message[]): void {
  const calls = messages.flatMap((message) =>
    message.role === "assistant"
      ? message.content.flatMap((part) => part.type === "tool_call" ? [part.id] : [])
      : []
  );
  const answered = messages.flatMap((message) =>
    message.role === "tool" ? [message.toolCallId] : []
  );
  assert.deepEqual(answered.sort(), calls.sort());
}
