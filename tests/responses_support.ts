/**
 * Shared pieces of the OpenAI Responses provider tests: a run against the loopback Responses
 * server through the real SDK, a fetch that keeps the bytes that went over the wire, and
 * readers of the input items the server got.
 *
 * @module
 */

import { Agent, type AgentEvent, type Message, type RetryOptions, type RunResult } from "../mod.ts";
import { openaiResponsesModel, type OpenAIResponsesModelOptions } from "../lib/providers/mod.ts";
import {
  type MockResponsesHabits,
  type MockResponsesReply,
  type MockResponsesRequest,
  startMockResponsesServer,
} from "../lib/testing/mod.ts";
import { collect, FAST_RETRY, type Received, recordingTools } from "./run_support.ts";

/** One HTTP exchange as it went over the wire. */
export interface WireExchange {
  /** The request body, as sent. */
  request: string;
  /** The response body, as received (complete once the response was read). */
  response: Promise<string>;
}

/** A fetch that keeps the bytes of each exchange, and the exchanges it kept. */
export function recordingFetch(): { fetch: typeof fetch; exchanges: WireExchange[] } {
  const exchanges: WireExchange[] = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const sent = await request.clone().text();
    const response = await fetch(request);
    if (!response.body) {
      exchanges.push({ request: sent, response: Promise.resolve("") });
      return response;
    }
    const [mine, theirs] = response.body.tee();
    exchanges.push({ request: sent, response: new Response(mine).text().catch(() => "") });
    return new Response(theirs, response);
  };
  return { fetch: recording, exchanges };
}

/** The output items a stream sent in `response.output_item.done` events, as their JSON text. */
export function doneItems(sse: string): string[] {
  const items: string[] = [];
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: ")) continue;
    const event = JSON.parse(line.slice(6));
    if (event.type === "response.output_item.done") items.push(JSON.stringify(event.item));
  }
  return items;
}

/** An input item as the server received it. */
export type InputItem = Record<string, unknown> & { type?: string; id?: string };

/** The input items of a request the server received. */
export function inputItems(request: MockResponsesRequest): InputItem[] {
  return request.body.input as InputItem[];
}

/** The options that make a Responses model a reasoning model: its reasoning goes back. */
export const REASONING = { reasoning: { summary: "auto" as const } };

/** What {@link runResponses} gives back. */
export interface ResponsesRun {
  /** Every event of the run. */
  events: AgentEvent[];
  /** The run's result. */
  result: RunResult;
  /** The tool calls the tools received, sorted by tool name. */
  received: Received[];
  /** The requests the server received. */
  requests: MockResponsesRequest[];
  /** The exchanges as they went over the wire. */
  exchanges: WireExchange[];
}

/** Options of {@link runResponses}. */
export interface RunResponsesOptions {
  /** Server habits. */
  habits?: MockResponsesHabits;
  /** The user's input (default `Go`). */
  input?: string;
  /** The history before the input. */
  messages?: readonly Message[];
  /** Retry options (default fast retries). */
  retry?: RetryOptions;
  /** The longest run. */
  maxTurns?: number;
  /** Model options besides the model, server and key. */
  model?: Partial<OpenAIResponsesModelOptions>;
}

/** Runs an agent with the recording tools against a Responses server playing `replies`. */
export async function runResponses(
  replies: readonly MockResponsesReply[] | ((body: Record<string, unknown>) => MockResponsesReply),
  options: RunResponsesOptions = {},
): Promise<ResponsesRun> {
  await using server = startMockResponsesServer({ replies, habits: options.habits });
  const { tools, received } = recordingTools();
  const { fetch, exchanges } = recordingFetch();
  const model = openaiResponsesModel({
    model: "gpt-5",
    baseURL: server.url,
    apiKey: "sk-test",
    ...REASONING,
    fetch,
    ...options.model,
  });
  const agent = new Agent({
    model,
    tools,
    systemPrompt: "You are terse.",
    retry: options.retry ?? FAST_RETRY,
    maxTurns: options.maxTurns,
  });
  const { events, result } = await collect(
    agent.stream(options.input ?? "Go", { messages: options.messages }),
  );
  received.sort((a, b) => a.name.localeCompare(b.name));
  return { events, result, received, requests: server.requests, exchanges };
}
