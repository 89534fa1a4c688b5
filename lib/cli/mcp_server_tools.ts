/**
 * The tools `agent mcp` offers: `run_task` starts a task in a new session, `continue_task`
 * goes on with a saved one. Both return the answer as text and the run's result as structured
 * content, send progress when the caller asks for it (a `progressToken`), log what the task does
 * at the level the caller's MCP session set (`./mcp_server_log.ts`), and end a task the caller
 * cancels. The server offers no prompts nor resource templates, so a completion
 * (`completion/complete`) has no values to suggest.
 *
 * @module
 */

import { z } from "zod";
import denoJson from "../../deno.json" with { type: "json" };
import type { LazyModules } from "../lazy/load.ts";
import type { McpTasks, TaskOutcome, TaskRequest } from "./mcp_server_tasks.ts";
import { DEFAULT_LOG_LEVEL, LOG_LEVELS, type LogLevel, logPasses } from "./mcp_server_log.ts";

/** The MCP SDK's server side, as `loadLazy("mcp_server_sdk")` gives it. */
export type McpServerSdk = LazyModules["mcp_server_sdk"];

/** An MCP server of the SDK. */
export type SdkMcpServer = InstanceType<McpServerSdk["McpServer"]>;

const _MODES = ["plan", "default", "accept-edits"] as const;

const _OUTPUT = {
  sessionId: z.string().describe("The session the task is saved in (empty when not saved)"),
  status: z.enum(["success", "max_turns", "aborted", "error"]).describe("How the run ended"),
  text: z.string().describe("The final answer"),
  turns: z.number().int().describe("Model calls made"),
  toolCalls: z.number().int().describe("Tool calls made"),
  usage: z.object({ inputTokens: z.number(), outputTokens: z.number() }).describe("Tokens used"),
  error: z.string().optional().describe("What went wrong, when the run failed"),
};

/** `logging/setLevel`: the level of the MCP session's log from now on. */
const _SET_LEVEL = z.object({
  method: z.literal("logging/setLevel"),
  params: z.object({ level: z.enum(LOG_LEVELS) }),
});

/** `completion/complete`: values for an argument of a prompt or a resource template. */
const _COMPLETE = z.object({
  method: z.literal("completion/complete"),
  params: z.object({
    ref: z.union([
      z.object({ type: z.literal("ref/prompt"), name: z.string() }),
      z.object({ type: z.literal("ref/resource"), uri: z.string() }),
    ]),
    argument: z.object({ name: z.string(), value: z.string() }),
  }),
});

const _MAX_TURNS = z.number().int().min(1).max(10_000).optional().describe(
  "Model calls allowed (never more than the server's own limit)",
);

/**
 * A new MCP server with the agent's tools, each running its task through `tasks`.
 *
 * @example
 * ```ts
 * import { loadLazy } from "../lazy/load.ts";
 * import { mcpToolServer } from "./mcp_server_tools.ts";
 * const server = mcpToolServer(await loadLazy("mcp_server_sdk"), {
 *   run: () => Promise.resolve({ text: "done", isError: false }),
 *   running: 0,
 *   stop: () => Promise.resolve(),
 * });
 * if (server.isConnected()) throw new Error("unexpected");
 * await server.close();
 * ```
 */
export function mcpToolServer(sdk: McpServerSdk, tasks: McpTasks): SdkMcpServer {
  const server = new sdk.McpServer(
    { name: "agent", title: "@x/agent", version: denoJson.version },
    {
      capabilities: { logging: {}, completions: {} },
      instructions: "Hand a task to a coding agent that works in a directory of this machine " +
        "with its own tools (read, edit, run commands, as its user allows). run_task starts a " +
        "task; continue_task goes on with one, by the sessionId run_task returned.",
    },
  );
  // The session's own log level: each MCP session has a server of its own.
  let level: LogLevel = DEFAULT_LOG_LEVEL;
  server.server.setRequestHandler(_SET_LEVEL, (request) => {
    level = request.params.level;
    return {};
  });
  // Nothing offered takes arguments to complete: an argument of a prompt or template the server
  // does not have gets no values (an error would stop a client that asks before it lists).
  server.server.setRequestHandler(
    _COMPLETE,
    () => ({ completion: { values: [], total: 0, hasMore: false } }),
  );
  const call = (request: TaskRequest, extra: _Extra) => _call(tasks, request, extra, () => level);
  server.registerTool("run_task", {
    title: "Run a task with the agent",
    description: "Runs a task with the agent, headless, in a new session, and returns its " +
      "answer. The agent works in `cwd` (default the server's) with the tools its user allows " +
      "there. The result's sessionId goes to continue_task to follow up.",
    inputSchema: {
      prompt: z.string().min(1).describe("What the agent should do"),
      cwd: z.string().min(1).optional().describe(
        "The working directory: an existing directory (relative: to the server's)",
      ),
      model: z.string().min(1).optional().describe("The model, as provider/model"),
      max_turns: _MAX_TURNS,
      permission_mode: z.enum(_MODES).optional().describe(
        "plan: only look, change nothing. A mode wider than the server's does not apply",
      ),
    },
    outputSchema: _OUTPUT,
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
  }, (args, extra) =>
    call({
      prompt: args.prompt,
      cwd: args.cwd,
      model: args.model,
      maxTurns: args.max_turns,
      permissionMode: args.permission_mode,
    }, extra));
  server.registerTool("continue_task", {
    title: "Continue a task of the agent",
    description: "Goes on with a saved session of the agent (in its working directory, with " +
      "its model): the agent sees the whole conversation so far, then `prompt`.",
    inputSchema: {
      session_id: z.string().min(1).describe(
        "The session: the sessionId a task returned, or its first characters",
      ),
      prompt: z.string().min(1).describe("What the agent should do next"),
      max_turns: _MAX_TURNS,
    },
    outputSchema: _OUTPUT,
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
  }, (args, extra) =>
    call({
      sessionId: args.session_id,
      prompt: args.prompt,
      maxTurns: args.max_turns,
    }, extra));
  return server;
}

/** What a tool handler is given besides its arguments (the part of it used here). */
interface _Extra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
  sendNotification(
    notification: {
      method: "notifications/progress";
      params: { progressToken: string | number; progress: number; message?: string };
    } | {
      method: "notifications/message";
      params: { level: LogLevel; logger?: string; data: unknown };
    },
  ): Promise<void>;
}

/**
 * Runs a task for a tool call, with progress when the caller asked for it, and its log at the
 * session's level, on the call's own stream.
 */
async function _call(
  tasks: McpTasks,
  request: TaskRequest,
  extra: _Extra,
  logLevel: () => LogLevel,
) {
  const token = extra._meta?.progressToken;
  let progress = 0;
  const onProgress = token === undefined ? undefined : (message: string) => {
    extra.sendNotification({
      method: "notifications/progress",
      params: { progressToken: token, progress: ++progress, message },
    }).catch(() => {});
  };
  const log = (level: LogLevel, data: string) => {
    if (!logPasses(level, logLevel())) return;
    extra.sendNotification({
      method: "notifications/message",
      params: { level, logger: "agent", data },
    }).catch(() => {});
  };
  return _toolResult(
    await tasks.run(request, { signal: extra.signal, progress: onProgress, log }),
  );
}

function _toolResult(outcome: TaskOutcome) {
  const text = outcome.text || "The task ended without a final answer.";
  return {
    content: [{ type: "text" as const, text }],
    ...(outcome.result ? { structuredContent: { ...outcome.result } } : {}),
    ...(outcome.isError ? { isError: true } : {}),
  };
}
