/**
 * @x/agent: a Deno-native LLM agent. The loop streams every step as an event; tools are typed
 * with zod and declare the capabilities they need; providers are OpenAI-compatible servers.
 *
 * This entry holds the loop's vocabulary: {@link Agent} and {@link runAgent}, {@link defineTool}
 * and the tool types, messages, the model interface, events and results, hooks, and the
 * errors. Each capability built around the loop has an entry of its own: `@x/agent/tools`,
 * `/providers`, `/compaction`, `/session`, `/memory`, `/runloop`, `/graph`, `/mcp`,
 * `/permissions`, `/sandbox`, `/service`, `/testing` and `/cli`.
 *
 * Run as a program (`deno run -A jsr:@x/agent "task"`), this module starts the CLI.
 *
 * @example
 * ```ts
 * import { Agent, defineTool } from "@x/agent";
 * import { scriptedModel } from "@x/agent/testing";
 * import { z } from "zod";
 *
 * const weather = defineTool({
 *   name: "get_weather",
 *   description: "Current weather for a city",
 *   parameters: z.object({ city: z.string() }),
 *   execute: ({ city }) => `22°C in ${city}`,
 * });
 * // A scripted model stands in for "openai/gpt-4.1-mini" here.
 * const model = scriptedModel([
 *   { toolCalls: [{ name: "get_weather", input: { city: "Paris" } }] },
 *   { text: "It is 22°C in Paris." },
 * ]);
 * const agent = new Agent({ model, tools: [weather] });
 * const result = await agent.run("Weather in Paris?");
 * if (result.status !== "success" || result.toolCalls !== 1) throw new Error("unexpected");
 * ```
 *
 * @module
 */

export { Agent, type AgentOptions, type RunOptions } from "./lib/loop/agent.ts";
export { runAgent } from "./lib/loop/loop.ts";
export type {
  MaxTurnsInfo,
  NudgeOptions,
  RepeatGuardOptions,
  RunAgentOptions,
} from "./lib/loop/options.ts";
export type {
  AgentEvent,
  AgentEventType,
  ProjectReport,
  RunResult,
  RunStatus,
  SandboxReport,
} from "./lib/events.ts";
export {
  type AssistantMessage,
  type AssistantPart,
  type Message,
  type ReasoningPart,
  textOf,
  type TextPart,
  type ToolCallPart,
  toolCallsOf,
  type ToolMessage,
  type UserMessage,
  userMessage,
} from "./lib/messages.ts";
export type {
  FinishReason,
  JsonSchema,
  Model,
  ModelEvent,
  ModelInfo,
  ModelRequest,
  Pricing,
  ToolDefinition,
} from "./lib/model.ts";
export {
  type Capability,
  defineTool,
  type Tool,
  type ToolChecks,
  type ToolContext,
  type ToolInputCheck,
  type ToolOutput,
  type ToolReturn,
  type ToolSpec,
} from "./lib/tool.ts";
export type { ToolRunResult } from "./lib/tool_runner.ts";
export type {
  AfterToolCallResult,
  BeforeToolCallResult,
  Hooks,
  PermissionCallback,
  PermissionDecision,
  PermissionRequest,
} from "./lib/hooks.ts";
export {
  AgentError,
  ConfigError,
  ContextLengthError,
  ModelBehaviorError,
  ProviderError,
  type ProviderErrorOptions,
} from "./lib/errors.ts";
export type { RetryOptions } from "./lib/retry.ts";
export type { Usage } from "./lib/usage.ts";
export type { CompactionOptions } from "./lib/compaction/ledger.ts";
export type { CompactionState } from "./lib/compaction_state.ts";

if (import.meta.main) {
  const { main } = await import("./cli.ts");
  Deno.exit(await main(Deno.args));
}
