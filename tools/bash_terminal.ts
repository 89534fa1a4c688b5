/**
 * The `bash` tool's commands run in a terminal that the host program (an editor) shows the
 * user: the host starts the command, keeps its output, and kills it when asked. The shape
 * follows the terminals of the Agent Client Protocol, without depending on it.
 *
 * @module
 */

import type { ToolOutput } from "../lib/tool.ts";
import { _ended, _keepEnds } from "./bash_output.ts";

/** How a command in a {@link BashTerminal} ended. */
export interface BashExitStatus {
  /** The exit code, or null (or absent) when a signal ended the command. */
  exitCode?: number | null;
  /** The name of the signal that ended the command (`SIGKILL`), or null (or absent). */
  signal?: string | null;
}

/** What to start in a {@link BashTerminal}. */
export interface BashTerminalSpec {
  /** The id of the tool call the command runs for, so that the host can show it there. */
  toolCallId: string;
  /** The program. */
  command: string;
  /** Its arguments. */
  args: string[];
  /** Variables added to the terminal's environment. */
  env: Record<string, string>;
  /** The working directory. */
  cwd: string;
  /** The most output the terminal keeps; past it, it drops the oldest output. */
  outputByteLimit: number;
}

/** A command started in a {@link BashTerminal}. */
export interface BashTerminalHandle {
  /** The terminal's id, as the host names it. */
  readonly id: string;
  /**
   * The output so far (stdout and stderr as the terminal shows them), whether the terminal
   * dropped its beginning to keep within `outputByteLimit`, and how the command ended once it
   * has.
   */
  output(): Promise<{ output: string; truncated: boolean; exitStatus?: BashExitStatus | null }>;
  /** Resolves once the command has ended. */
  waitForExit(): Promise<BashExitStatus>;
  /** Kills the command; the terminal stays, with its output. */
  kill(): Promise<void>;
  /** Kills the command if it still runs and lets the host free the terminal. */
  release(): Promise<void>;
}

/**
 * A terminal the host program shows the user, in which `bash` runs its commands (see
 * `BashToolOptions.terminal`).
 *
 * @example A host that runs each command to its end
 * ```ts
 * import { type BashTerminal, createBashTool } from "./mod.ts";
 * const terminal: BashTerminal = {
 *   create(spec) {
 *     const env = { ...Deno.env.toObject(), ...spec.env };
 *     const { command, args, cwd } = spec;
 *     const run = new Deno.Command(command, { args, cwd, env, stdin: "null" }).output();
 *     const exit = run.then(({ code, signal }) => ({ exitCode: code, signal }));
 *     return Promise.resolve({
 *       id: "terminal-1",
 *       output: async () => ({
 *         output: new TextDecoder().decode((await run).stdout),
 *         truncated: false,
 *         exitStatus: await exit,
 *       }),
 *       waitForExit: () => exit,
 *       kill: () => Promise.resolve(),
 *       release: () => Promise.resolve(),
 *     });
 *   },
 * };
 * const bash = createBashTool({ terminal });
 * const result = await bash.execute({ command: "echo hi >&2" }, {
 *   cwd: Deno.cwd(),
 *   signal: new AbortController().signal,
 *   toolCallId: "1",
 * });
 * if (typeof result === "string" || result.output !== "hi\n[exit code 0]") {
 *   throw new Error("unexpected");
 * }
 * if (result.metadata?.terminalId !== "terminal-1") throw new Error("unexpected");
 * ```
 */
export interface BashTerminal {
  /** Starts `command args…` in `cwd`; `env` is added to the terminal's environment. */
  create(spec: BashTerminalSpec): Promise<BashTerminalHandle>;
}

/** What {@link _runInTerminal} needs beyond the command. */
export interface _TerminalRun {
  toolCallId: string;
  cwd: string;
  signal: AbortSignal;
  timeoutMs: number;
  maxOutputChars: number;
  /** How long to wait for the command to end once killed, in milliseconds. */
  graceMs: number;
  sandboxed: boolean;
}

/** What the model reads first when the terminal dropped the beginning of the output. */
export const _TERMINAL_CUT = "[earlier output cut by the terminal]";

/**
 * The terminal's byte budget for an output kept to `maxOutputChars`: room for that many
 * characters of up to 4 bytes each, so that the tail kept is never short.
 */
export function _outputByteLimit(maxOutputChars: number): number {
  return Math.max(1, maxOutputChars) * 4;
}

/**
 * Runs `program args…` in a terminal of the host: waits for it to end, the timeout, or the
 * call's cancellation (then kills it), reads its output, and releases the terminal whatever
 * happens. A host that fails throws an error that says so.
 */
export async function _runInTerminal(
  terminal: BashTerminal,
  launch: { program: string; args: string[]; env: Record<string, string>; command: string },
  run: _TerminalRun,
): Promise<ToolOutput> {
  const started = performance.now();
  let handle: BashTerminalHandle;
  try {
    handle = await terminal.create({
      toolCallId: run.toolCallId,
      command: launch.program,
      args: launch.args,
      env: launch.env,
      cwd: run.cwd,
      outputByteLimit: _outputByteLimit(run.maxOutputChars),
    });
  } catch (error) {
    throw new Error(`The host program's terminal could not start the command: ${_say(error)}`, {
      cause: error,
    });
  }
  try {
    let killed: "timeout" | "cancel" | undefined;
    const stop = Promise.withResolvers<void>();
    const timer = setTimeout(() => {
      killed ??= "timeout";
      stop.resolve();
    }, run.timeoutMs);
    const onAbort = () => {
      killed ??= "cancel";
      stop.resolve();
    };
    if (run.signal.aborted) onAbort();
    else run.signal.addEventListener("abort", onAbort, { once: true });
    let status: BashExitStatus | undefined;
    const exit = handle.waitForExit().then((value) => status = value);
    try {
      await Promise.race([exit, stop.promise]);
    } catch (error) {
      throw new Error(`The host program's terminal failed while the command ran: ${_say(error)}`, {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
      run.signal.removeEventListener("abort", onAbort);
    }
    if (status === undefined) {
      // A host that cannot kill or wait still has the output: the footer says it was killed.
      exit.catch(() => {});
      await handle.kill().catch(() => {});
      await _within(exit, run.graceMs + 1_000);
    }
    let read;
    try {
      read = await handle.output();
    } catch (error) {
      throw new Error(`The host program's terminal did not give the output: ${_say(error)}`, {
        cause: error,
      });
    }
    status ??= read.exitStatus ?? undefined;
    const text = _keepEnds(read.output, run.maxOutputChars);
    const result = _ended(read.truncated ? `${_TERMINAL_CUT}\n${text}` : text, launch.command, {
      killed,
      code: status?.exitCode ?? null,
      signal: status?.signal ?? null,
      timeoutMs: run.timeoutMs,
      durationMs: Math.round(performance.now() - started),
      sandboxed: run.sandboxed,
    });
    return { ...result, metadata: { ...result.metadata, terminalId: handle.id } };
  } finally {
    await handle.release().catch(() => {});
  }
}

/** Waits for `promise` at most `ms` milliseconds, never throwing. */
async function _within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    promise.catch(() => {}),
    new Promise<void>((resolve) => timer = setTimeout(resolve, ms)),
  ]);
  clearTimeout(timer);
}

function _say(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
