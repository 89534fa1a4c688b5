/**
 * @x/agent: a Deno-native LLM agent. The loop streams every step as an event; tools are typed
 * with zod and declare the capabilities they need; providers are OpenAI-compatible servers.
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
export {
  DEFAULT_MAX_TURNS,
  DEFAULT_REPEAT_STOP_AT,
  DEFAULT_REPEAT_WARN_AT,
  type MaxTurnsInfo,
  NUDGE_MESSAGE,
  type NudgeOptions,
  type RepeatGuardOptions,
  runAgent,
  type RunAgentOptions,
} from "./lib/loop/loop.ts";
export type {
  AgentEvent,
  AgentEventType,
  ProjectReport,
  RunResult,
  RunStatus,
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
export { costOf } from "./lib/cost.ts";
export {
  CAPABILITIES,
  type Capability,
  defineTool,
  type Tool,
  type ToolContext,
  toolDefinitions,
  type ToolInputCheck,
  type ToolOutput,
  toolRegistry,
  type ToolReturn,
  type ToolSpec,
} from "./lib/tool.ts";
export {
  runToolCall,
  runToolCalls,
  TOOL_DEFAULTS,
  type ToolRunOptions,
  type ToolRunResult,
  truncateOutput,
} from "./lib/tool_runner.ts";
export {
  AgentError,
  ConfigError,
  ContextLengthError,
  describeError,
  ModelBehaviorError,
  ProviderError,
  type ProviderErrorOptions,
} from "./lib/errors.ts";
export { RETRY_DEFAULTS, type RetryOptions } from "./lib/retry.ts";
export { addUsage, emptyUsage, type Usage } from "./lib/usage.ts";
export { OPENAI_BASE_URL, openaiModel, type OpenAIModelOptions } from "./lib/providers/openai.ts";
export type { ChatRequestStyle } from "./lib/providers/openai_request.ts";
export { anthropicModel, type AnthropicModelOptions } from "./lib/providers/anthropic.ts";
export {
  type ModelOverride,
  parseModelSpec,
  PROVIDER_NAMES,
  type ProviderConfig,
  resolveModel,
  type ResolveModelOptions,
} from "./lib/providers/resolve.ts";

export {
  type BashInput,
  type BashToolOptions,
  type BuiltinToolOptions,
  builtinTools,
  createBashTool,
  createEditTool,
  createFetchTool,
  createGlobTool,
  createGrepTool,
  createLsTool,
  createReadTool,
  createTodoTool,
  createWebSearchTool,
  createWriteTool,
  denoFs,
  type EditInput,
  type FetchInput,
  type FetchToolOptions,
  type GlobInput,
  type GlobToolOptions,
  type GrepInput,
  type GrepToolOptions,
  type LsInput,
  type LsToolOptions,
  type ReadInput,
  type ReadToolOptions,
  type Todo,
  type TodoInput,
  type TodoTool,
  type TodoToolOptions,
  type ToolDirEntry,
  type ToolFile,
  type ToolFileInfo,
  type ToolFs,
  type ToolOpenOptions,
  webSearchFromEnv,
  type WebSearchInput,
  type WebSearchProvider,
  type WebSearchToolOptions,
  type WriteInput,
  type WriteToolOptions,
} from "./tools/mod.ts";
export {
  CAPABILITY_FLAGS,
  type CapabilityStates,
  offerTools,
  type PermissionState,
  queryCapabilities,
  type SessionMode,
  type WithheldTool,
} from "./lib/cli/capabilities.ts";

export {
  defaultSessionsDir,
  fileSessionStore,
  type FileSessionStoreOptions,
  isSecretEnvName,
  type LoadedSession,
  memorySessionStore,
  type NewSession,
  projectSessionsDir,
  type Redactor,
  redactValue,
  type ResumedSession,
  resumeSession,
  type ResumeSessionOptions,
  SECRET_ENV_NAMES,
  secretRedactor,
  secretsFromEnv,
  SESSION_SCHEMA_VERSION,
  type SessionEntry,
  sessionEntrySchema,
  SessionError,
  type SessionErrorReason,
  type SessionHeader,
  type SessionHolder,
  type SessionInfo,
  type SessionStore,
  sessionsWritable,
  sessionTitle,
  type SessionWriter,
} from "./lib/session/mod.ts";

export {
  compactConversation,
  type CompactConversationOptions,
  type CompactConversationResult,
  COMPACTION_DEFAULTS,
  type CompactionLimits,
  compactionLimits,
  type CompactionOptions,
  type CompactionReason,
} from "./lib/compaction/compact.ts";
export type { CompactionState } from "./lib/compaction_state.ts";
export {
  SUMMARY_MARKER,
  SUMMARY_SECTIONS,
  SUMMARY_SYSTEM_PROMPT,
  summaryMessage,
  summaryPrompt,
  type SummaryPromptParts,
} from "./lib/compaction/summary.ts";
export {
  HEURISTIC_COUNTER,
  loadTokenCounter,
  messageTokens,
  requestTokens,
  type TokenCounter,
  type TokenizedRequest,
  type TokenizerModule,
} from "./lib/compaction/tokens.ts";

export {
  type AfterToolCallResult,
  type BeforeToolCallResult,
  hookedModel,
  type Hooks,
  type PermissionCallback,
  type PermissionDecision,
  type PermissionRequest,
} from "./lib/hooks.ts";
export type { ToolCallVerdict } from "./lib/tool_runner.ts";

export {
  type ConnectMcpOptions,
  connectMcpServers,
  grantedEnv,
  type LoadedMcpConfig,
  loadMcpConfig,
  type LoadMcpConfigOptions,
  MCP_DEFAULTS,
  MCP_INHERITED_ENV,
  type McpConfig,
  type McpConnection,
  type McpHttpServerConfig,
  type McpServerConfig,
  type McpServerState,
  type McpServerStatus,
  type McpStdioServerConfig,
  type McpTransportKind,
  parseMcpConfig,
  type ParseMcpConfigOptions,
} from "./lib/mcp/mod.ts";

export {
  commandsOf,
  describeRule,
  evaluateRules,
  parseCommandLine,
  parseRule,
  type PermissionRule,
  type RuleCall,
  type RuleContext,
  ruleCoversTool,
  type RuleDecision,
  type RuleKind,
  type ShellCommand,
} from "./lib/permissions/mod.ts";

export {
  type Anchor,
  type ArchiveResult,
  CHUNK_OVERLAP,
  CHUNK_SIZE,
  type ChunkOptions,
  chunkText,
  type Embedder,
  type EmbeddingsOptions,
  ftsQuery,
  fuseRankings,
  type Iteration,
  type IterationToolCall,
  type IterationToolResult,
  MEMORY_SCHEMA_VERSION,
  MemoryError,
  type MemoryErrorReason,
  type MemoryOptions,
  type MemoryStats,
  type MemoryStore,
  openaiEmbedder,
  openMemory,
  openMemoryInWorker,
  type RetrievedSegment,
  type RetrieveOptions,
  type RunLoop,
  type RunLoopStatus,
  type Segment,
  segmentRunLoop,
  type SegmentType,
  type VectorHit,
  type VectorIndex,
  vectorIndex,
  type VectorIndexOptions,
  type VectorSearchOptions,
} from "./lib/memory/mod.ts";

export {
  overflow,
  type Placement,
  type RoutingSpend,
  type RunLoops,
  runLoops,
  type RunLoopsOptions,
} from "./lib/runloop/manager.ts";
export {
  fallbackRoute,
  type RouteDecision,
  routeMessage,
  type RouteOptions,
} from "./lib/runloop/router.ts";
export { runInLoop, type RunInLoopOptions, type RunInLoopResult } from "./lib/runloop/run.ts";
export {
  anchorText,
  createRecallTool,
  memoryContext,
  type RecallInput,
} from "./lib/runloop/recall.ts";

export * from "./lib/graph/mod.ts";

export {
  detectSandbox,
  type DetectSandboxOptions,
  resolveSandbox,
  SANDBOX_HIDDEN_HOME,
  SANDBOX_HIDDEN_SYSTEM,
  SANDBOX_STRIPPED_ENV,
  sandboxArgs,
  type SandboxArgsOptions,
  type SandboxAvailability,
  type SandboxDecision,
  sandboxEnv,
  type SandboxPolicy,
  type SandboxReport,
} from "./lib/sandbox/mod.ts";
export { type BashSandbox } from "./tools/bash.ts";
export { type McpSandboxConfig, type McpSandboxOptions } from "./lib/mcp/mod.ts";

export {
  type AgentHandler,
  type AgentHandlerOptions,
  type AgentService,
  type AgentServiceOptions,
  checkAccess,
  createAgentHandler,
  createAgentService,
  type Delivery,
  isLoopback,
  newServiceToken,
  openApiDocument,
  type Refusal,
  type RunInfo,
  type RunListener,
  runLoopMessageSchema,
  type RunRequest,
  type RunRequestBody,
  runRequestSchema,
  type RunSummary,
  ServiceError,
  ServiceRun,
  sseResponse,
} from "./lib/service/mod.ts";

if (import.meta.main) {
  const { main } = await import("./cli.ts");
  Deno.exit(await main(Deno.args));
}
