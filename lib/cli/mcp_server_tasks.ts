/**
 * The tasks `agent mcp` runs for its callers. Each is prepared as a CLI run is (the server's
 * flags, with the task's working directory, model, turn limit and permission mode), headless:
 * nobody is asked anything, the project is trusted only as the user said (`--trust-project`,
 * their trusted directories), the tools are those Deno grants in that directory, and a caller's
 * permission mode or turn limit only narrows the server's. The run goes through the
 * conversation driver, so that it is saved as a session and kept in the project's memory, and
 * what it tells the caller goes through the run's redactor.
 *
 * @module
 */

import { isInside } from "../files/inside.ts";
import { resolve } from "node:path";
import { startPrepared } from "./conversation.ts";
import { AgentError } from "../errors.ts";
import { PERMISSION_MODES, type PermissionMode } from "../permissions/policy.ts";
import { runLoops } from "../runloop/manager.ts";
import { defaultSessionsDir, fileSessionStore, type Redactor } from "../session/mod.ts";
import type { CliArgs } from "./args.ts";
import { prepare, type Prepared } from "./prepare.ts";
import {
  briefInput,
  counted,
  taskFailure,
  type TaskOutcome,
  taskOutcome,
  type TaskResult,
} from "./mcp_server_outcome.ts";
import { eventLog, type LogLevel, type TaskLog } from "./mcp_server_log.ts";

export type { TaskOutcome, TaskResult };

/** What a caller asks for: a new task, or (with `sessionId`) more of a saved one. */
export interface TaskRequest {
  /** What to do. */
  prompt: string;
  /** The saved session to go on with (an id or a unique prefix); its cwd and model are kept. */
  sessionId?: string;
  /** The working directory of a new task (relative: to the server's). */
  cwd?: string;
  /** The model of a new task, `provider/model`. */
  model?: string;
  /** Model calls allowed; never more than the server's `--max-turns`. */
  maxTurns?: number;
  /** The permission mode; only one narrower than the server's applies. */
  permissionMode?: PermissionMode;
}

/** How a task is told about while it runs. */
export interface TaskContext {
  /** Cancels the task: it ends `aborted`, its session kept. */
  signal?: AbortSignal;
  /** Hears each step: "turn 2", "turn 2: bash ls" (redacted). */
  progress?: (message: string) => void;
  /** Hears what the task logs: its start and end, warnings, each tool call (redacted). */
  log?: TaskLog;
}

/** What the tasks need of the server. */
export interface TaskHost {
  /** Reads an environment variable. */
  env(name: string): string | undefined;
  /** Writes a line to stderr (the server's log). */
  log(text: string): void;
  /** The server's redactor, for what is said before a task has its own. */
  redact: Redactor;
  /** Adds the server's own secrets (its token) to a task's redactor. */
  redactRun?: (redact: Redactor) => Redactor;
}

/** The server's tasks. */
export interface McpTasks {
  /** Runs a task to its end; never throws: what went wrong is the outcome. */
  run(request: TaskRequest, context?: TaskContext): Promise<TaskOutcome>;
  /** Tasks going now. */
  readonly running: number;
  /** Cancels every task and refuses new ones; resolves once all have ended and closed. */
  stop(): Promise<void>;
}

/**
 * The tasks of a server started with `options`.
 *
 * @example
 * ```ts
 * import { parseCliArgs } from "./args.ts";
 * import { mcpTasks } from "./mcp_server_tasks.ts";
 * import { secretRedactor } from "../session/mod.ts";
 * const tasks = mcpTasks(parseCliArgs(["mcp"]), {
 *   env: () => undefined,
 *   log: () => {},
 *   redact: secretRedactor([]),
 * });
 * const outcome = await tasks.run({ prompt: "Hi", cwd: "/no/such/dir" });
 * if (!outcome.isError || !outcome.text.includes("/no/such/dir")) throw new Error(outcome.text);
 * await tasks.stop();
 * ```
 */
export function mcpTasks(options: CliArgs, host: TaskHost): McpTasks {
  const stopping = new AbortController();
  /** The tasks going, and the tasks that ended closing what they prepared. */
  const going = new Set<Promise<unknown>>();
  const closing = new Set<Promise<unknown>>();
  const track = (set: Set<Promise<unknown>>, promise: Promise<unknown>) => {
    set.add(promise);
    promise.finally(() => set.delete(promise)).catch(() => {});
  };
  /** Warnings said once: each task's run is prepared anew and finds the same ones. */
  const warned = new Set<string>();
  const warn = (text: string) => {
    if (warned.has(text)) return;
    warned.add(text);
    host.log(`agent: ${text}`);
  };

  const run = async (request: TaskRequest, context: TaskContext): Promise<TaskOutcome> => {
    if (stopping.signal.aborted) return taskFailure("The agent's MCP server is stopping");
    const signal = AbortSignal.any([stopping.signal, ...(context.signal ? [context.signal] : [])]);
    let taskOptions: CliArgs;
    try {
      taskOptions = await _taskOptions(options, request, host);
    } catch (error) {
      return taskFailure(host.redact(_message(error)));
    }
    // The task's warnings reach its caller too, through the run's redactor once it is known.
    const tell = _teller(context.log, host);
    let prepared: Prepared;
    try {
      prepared = await prepare(taskOptions, {
        env: host.env,
        warn: (text) => {
          warn(text);
          tell.say("warning", text);
        },
        log: (text) => host.log(text),
        interactive: false,
        onRedactor: tell.redactWith,
      });
    } catch (error) {
      tell.redactWith(host.redact);
      return taskFailure(host.redact(_message(error)));
    }
    tell.redactWith(prepared.redact);
    _narrow(prepared, request.permissionMode);
    const ran = await _runPrepared(
      prepared,
      taskOptions,
      request.prompt,
      { ...context, signal, log: tell.say },
      host,
    );
    track(closing, ran.closing);
    return ran.outcome;
  };

  return {
    run: (request, context = {}) => {
      const task = run(request, context);
      track(going, task);
      return task;
    },
    get running() {
      return going.size;
    },
    async stop() {
      stopping.abort();
      while (going.size + closing.size > 0) await Promise.allSettled([...going, ...closing]);
    },
  };
}

/**
 * What a task tells its caller's log, through the run's redactor (with the server's secrets
 * too): what is said before the redactor is known waits for it.
 */
function _teller(log: TaskLog | undefined, host: TaskHost) {
  let redact: Redactor | undefined;
  const waiting: [LogLevel, string][] = [];
  const send = (level: LogLevel, text: string) => {
    try {
      log?.(level, redact!(text));
    } catch {
      // A caller that cannot hear the log still gets the result.
    }
  };
  return {
    say(level: LogLevel, text: string): void {
      if (!log) return;
      if (redact) send(level, text);
      else waiting.push([level, text]);
    },
    redactWith(run: Redactor): void {
      if (redact) return;
      redact = host.redactRun ? host.redactRun(run) : run;
      for (const [level, text] of waiting.splice(0)) send(level, text);
    },
  };
}

/** The CLI options of a task: the server's, with what the task asks for where it may. */
async function _taskOptions(
  options: CliArgs,
  request: TaskRequest,
  host: TaskHost,
): Promise<CliArgs> {
  const base = resolve(options.cwd ?? Deno.cwd());
  let cwd = request.cwd === undefined ? base : resolve(base, request.cwd);
  let resume: string | undefined;
  let model = request.model ?? options.model;
  if (request.sessionId !== undefined) {
    const dir = defaultSessionsDir(host.env);
    if (!dir) throw new AgentError("No saved sessions here: set HOME or AGENT_DATA_DIR");
    const loaded = await fileSessionStore({
      dir,
      redact: host.redact,
      listHint: "Give the sessionId a task returned, or its first characters",
    }).load(request.sessionId);
    cwd = loaded.header.cwd;
    resume = loaded.header.id;
    // The session's own model, as it was last switched to.
    model = undefined;
  }
  await _checkDirectory(cwd, request.sessionId !== undefined);
  // The server's workspace bounds where a caller's task works: the sandbox's writable roots and
  // the file tools' reach follow a task's directory, which is the server's to grant.
  const roots = [base, ...options.addDirs.map((dir) => resolve(base, dir))];
  const real = _real(cwd);
  if (!roots.some((root) => isInside(real, _real(root)))) {
    throw new AgentError(
      `${request.sessionId === undefined ? "The working directory" : "The session's directory"} ` +
        `${cwd} is outside the server's workspace (${roots.join(", ")}): a task works only ` +
        `there; start the server with --cwd or --add-dir to reach it`,
    );
  }
  const limit = options.maxTurns || undefined;
  const maxTurns = request.maxTurns === undefined
    ? options.maxTurns
    : limit === undefined
    ? request.maxTurns
    : Math.min(limit, request.maxTurns);
  return {
    ...options,
    cwd,
    // The server's other roots, where they are, whatever the task's directory.
    addDirs: roots.slice(1),
    model,
    maxTurns,
    continue: false,
    resume,
    prompt: "",
    print: false,
  };
}

/** The real path of a directory that exists (checked before), or the path as given. */
function _real(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}

/** Throws a clear error unless `cwd` is a directory. */
async function _checkDirectory(cwd: string, ofSession: boolean): Promise<void> {
  const whose = ofSession ? "The session's working directory" : "The working directory";
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(cwd);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new AgentError(`${whose} ${cwd} does not exist: give an existing directory as cwd`);
    }
    if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) {
      throw new AgentError(
        `${whose} ${cwd} cannot be read: the agent's MCP server may work only where Deno lets ` +
          `it read (--allow-read)`,
      );
    }
    throw error;
  }
  if (!info.isDirectory) throw new AgentError(`${whose} ${cwd} is not a directory`);
}

/** A caller's permission mode applies only when it is narrower than the run's. */
function _narrow(prepared: Prepared, mode: PermissionMode | undefined): void {
  if (mode && PERMISSION_MODES.indexOf(mode) < PERMISSION_MODES.indexOf(prepared.mode.current)) {
    prepared.mode.current = mode;
  }
}

/**
 * Runs the prepared task; gives its outcome once the session is closed, and what is still to
 * do (archive the run loop in memory, close what was prepared) as `closing`.
 */
async function _runPrepared(
  prepared: Prepared,
  options: CliArgs,
  prompt: string,
  context: TaskContext & { signal: AbortSignal },
  host: TaskHost,
): Promise<{ outcome: TaskOutcome; closing: Promise<void> }> {
  const { setup } = prepared;
  const redact = host.redactRun ? host.redactRun(prepared.redact) : prepared.redact;
  const loops = runLoops({ memory: prepared.memory, deferArchive: true });
  const closing = async () => {
    await loops.archivePending().catch((error) =>
      host.log(redact(`agent: the task was not archived in memory: ${_message(error)}`))
    );
    await prepared.close().catch((error) => host.log(redact(`agent: ${_message(error)}`)));
  };
  let driver;
  try {
    // Nobody can answer: a rule that asks refuses.
    driver = startPrepared(prepared, options, { runLoops: loops });
  } catch (error) {
    return { outcome: taskFailure(redact(_message(error))), closing: closing() };
  }
  const short = driver.conversation.id.slice(0, 8);
  const started = `task ${short} started in ${setup.cwd} with ${prepared.modelSpec}`;
  host.log(redact(`agent: ${started}`));
  context.log?.("info", started);
  let turn = 0;
  const say = (message: string) => {
    try {
      context.progress?.(redact(message));
    } catch {
      // A caller that cannot hear progress still gets the result.
    }
  };
  let outcome: TaskOutcome;
  try {
    const events = driver.send(prompt, { signal: context.signal, complete: true });
    let step = await events.next();
    for (; !step.done; step = await events.next()) {
      const event = step.value;
      const line = eventLog(event);
      if (line) context.log?.(line.level, line.text);
      if (event.type === "turn_start") say(`turn ${turn = event.turn}`);
      else if (event.type === "tool_call") {
        say(`turn ${turn}: ${event.name}${briefInput(event.input)}`);
      }
    }
    const result = step.value;
    const id = driver.conversation.saved ? result.sessionId : "";
    outcome = taskOutcome({
      sessionId: id,
      status: result.status,
      text: redact(result.text),
      turns: result.turns,
      toolCalls: result.toolCalls,
      usage: { inputTokens: result.usage.inputTokens, outputTokens: result.usage.outputTokens },
      ...(result.error ? { error: redact(result.error.message) } : {}),
    });
    const ended = `task ${short} ${result.status} (${counted(result.turns, "turn")}, ` +
      `${counted(result.toolCalls, "tool call")})`;
    host.log(`agent: ${ended}`);
    context.log?.(
      _ENDED[result.status],
      result.error ? `${ended}: ${result.error.message}` : ended,
    );
  } catch (error) {
    outcome = taskFailure(redact(`The task failed: ${_message(error)}`));
    host.log(redact(`agent: task ${short} failed: ${_message(error)}`));
    context.log?.("error", `task ${short} failed: ${_message(error)}`);
  }
  await driver.close().catch(() => {});
  return { outcome, closing: closing() };
}

/** The level of a task's end in its caller's log, by how it ended. */
const _ENDED: Record<TaskResult["status"], LogLevel> = {
  success: "info",
  aborted: "notice",
  max_turns: "warning",
  error: "error",
};

function _message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
