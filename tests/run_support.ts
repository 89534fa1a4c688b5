/**
 * Shared pieces of the tests that run an agent, whatever its model: tools that record what
 * they receive, a run drained into its events and result, and readers of those events.
 *
 * @module
 */

import assert from "node:assert/strict";
import { z } from "zod";
import {
  type Agent,
  type AgentEvent,
  defineTool,
  type Message,
  type RetryOptions,
  type RunResult,
  type Tool,
} from "../mod.ts";

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
export async function collect<Event, Result>(
  run: AsyncGenerator<Event, Result>,
): Promise<{ events: Event[]; result: Result }> {
  const events: Event[] = [];
  let step = await run.next();
  while (!step.done) {
    events.push(step.value);
    step = await run.next();
  }
  return { events, result: step.value };
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

/** What the fault assertions read of a run against a mock server. */
export interface ServedRun {
  /** Every event of the run. */
  events: AgentEvent[];
  /** The run's result. */
  result: RunResult;
  /** The requests the server received. */
  requests: readonly unknown[];
}

/** Asserts that the run succeeded after one retry whose error matches, in two requests. */
export function assertRetriedOnce(run: ServedRun, error: RegExp): void {
  assert.equal(run.result.status, "success", run.result.error?.message);
  const retries = eventsOf(run.events, "retry");
  assert.equal(retries.length, 1);
  assert.equal(retries[0].attempt, 1);
  assert.match(retries[0].error, error);
  assert.equal(run.requests.length, 2);
}

/** Asserts that the run failed at once with `name`, after one request and no retry. */
export function assertFailedAtOnce(run: ServedRun, name: string, message: RegExp): void {
  assert.equal(run.result.status, "error");
  assert.equal(run.result.error?.name, name);
  assert.match(run.result.error?.message ?? "", message);
  assert.equal(run.requests.length, 1);
  assert.deepEqual(eventsOf(run.events, "retry"), []);
}

/**
 * Runs `agent` on `input`, aborts at the first text delta, and asserts that the run ended
 * `aborted` within 150 ms of it, before the slow stream's next event.
 */
export async function abortAtFirstText(agent: Agent, input: string): Promise<RunResult> {
  const controller = new AbortController();
  const run = agent.stream(input, { signal: controller.signal });
  let abortedAt = 0;
  let step = await run.next();
  while (!step.done) {
    if (step.value.type === "text_delta" && abortedAt === 0) {
      abortedAt = performance.now();
      controller.abort();
    }
    step = await run.next();
  }
  const result = step.value;
  assert.equal(result.status, "aborted");
  assert.ok(abortedAt > 0, "the abort came mid-stream");
  assert.ok(performance.now() - abortedAt < 150, "the run ends before the next event");
  assertEveryCallAnswered(result.messages);
  return result;
}
