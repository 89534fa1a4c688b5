/**
 * The caller's say over a run: a permission callback asked before each tool call, and hooks
 * around model calls and tool calls, plus an observer of every event.
 *
 * @module
 */

import type { AgentEvent } from "./events.ts";
import type { AssistantMessage, Message, ToolCallPart } from "./messages.ts";
import type { FinishReason, Model, ModelEvent, ModelRequest } from "./model.ts";
import type { Tool, ToolChecks } from "./tool.ts";
import type { ToolRunResult } from "./tool_runner.ts";
import type { Usage } from "./usage.ts";

/** What the permission callback is asked about. */
export interface PermissionRequest {
  /** The call, as the model made it. */
  call: ToolCallPart;
  /** The tool it names. */
  tool: Tool;
  /** The working directory. */
  cwd: string;
  /** Aborted when the run is cancelled. */
  signal: AbortSignal;
}

/** The answer of the permission callback: go on, or refuse and say why. */
export type PermissionDecision =
  | { behavior: "allow" }
  | { behavior: "deny"; reason: string };

/** Decides whether a tool call may run. */
export interface PermissionCallback {
  (request: PermissionRequest): PermissionDecision | Promise<PermissionDecision>;
  /**
   * The checks, by the same rules, of what an allowed call's tool actually touches (the real
   * paths it opens or walks, the hops of a redirect), given to the tool in its context.
   */
  checks?: (request: PermissionRequest) => ToolChecks | Promise<ToolChecks>;
}

/**
 * What `beforeToolCall` may do: refuse the call (the reason goes to the model), or change its
 * input (which the permission callback is then asked about again).
 */
export type BeforeToolCallResult = { refuse: string } | { input: unknown } | void;

/** What `afterToolCall` may do: change what the model sees. */
export type AfterToolCallResult = { output?: string; isError?: boolean } | void;

/** Hooks around the steps of a run. Each may be async; a hook that throws fails its step. */
export interface Hooks {
  /** Before each model call: may give other messages to send (the history is not changed). */
  beforeModelCall?(context: {
    turn: number;
    system?: string;
    messages: readonly Message[];
  }): Message[] | void | Promise<Message[] | void>;
  /** After each model call. */
  afterModelCall?(context: {
    turn: number;
    message: AssistantMessage;
    usage: Usage;
    finishReason?: FinishReason;
  }): void | Promise<void>;
  /**
   * Before each tool call (after the permission check): may refuse it or change its input. A
   * changed input goes to the permission callback again before the tool runs; refused, the call
   * is refused with the callback's reason.
   */
  beforeToolCall?(context: { call: ToolCallPart; turn: number }):
    | BeforeToolCallResult
    | Promise<BeforeToolCallResult>;
  /** After each tool call: may change its result. */
  afterToolCall?(context: { call: ToolCallPart; turn: number; result: ToolRunResult }):
    | AfterToolCallResult
    | Promise<AfterToolCallResult>;
  /** Sees every event of the run as it happens. */
  onEvent?(event: AgentEvent): void;
}

/**
 * A model whose requests first go through `beforeModelCall` (for the turn `turn()` gives).
 *
 * @example
 * ```ts
 * import { hookedModel } from "./hooks.ts";
 * import { scriptedModel } from "./testing/scripted_model.ts";
 * const inner = scriptedModel([{ text: "ok" }]);
 * const model = hookedModel(inner, {
 *   beforeModelCall: ({ messages }) => [...messages, { role: "user", content: "Be brief." }],
 * }, () => 1);
 * for await (const _ of model.stream({ messages: [], tools: [] })) {
 *   // read to the end
 * }
 * if (inner.requests[0].messages.length !== 1) throw new Error("unexpected");
 * ```
 */
export function hookedModel(model: Model, hooks: Hooks, turn: () => number): Model {
  const before = hooks.beforeModelCall;
  if (!before) return model;
  return {
    provider: model.provider,
    id: model.id,
    info: model.info,
    async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
      const messages = await before({
        turn: turn(),
        system: request.system,
        messages: request.messages,
      });
      yield* model.stream(messages ? { ...request, messages } : request);
    },
  };
}
