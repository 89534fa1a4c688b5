/**
 * The `bash` tool: runs a shell command in the working directory, in its own process group, with
 * stderr merged into stdout, a timeout, and output kept to its head and tail; optionally inside
 * the bubblewrap sandbox.
 *
 * @module
 */

import { z } from "zod";
import { sleep } from "../lib/async.ts";
import { prepareSandbox } from "../lib/sandbox/bubblewrap.ts";
import type { Leftover } from "../lib/sandbox/leftovers.ts";
import { _collect } from "./bash_output.ts";
import { _hostEnv, sandboxEnv } from "../lib/sandbox/env.ts";
import { defineTool, type Tool, type ToolOutput } from "../lib/tool.ts";

/**
 * The `bash` tool's sandbox: the `bwrap` to run commands with and what they may do (see
 * `sandboxArgs`), or, when a sandbox is required and there is none, the reason every call fails
 * with.
 */
export type BashSandbox =
  | {
    /** The path of `bwrap`, from `detectSandbox`. */
    bwrap: string;
    /** The directories commands may write: the workspace roots, and extras. */
    writable: string[];
    /** Whether commands keep the network. */
    net: boolean;
    /** More paths to hide, e.g. the agent's own data directory. */
    hide?: string[];
    /**
     * Variables kept out of commands whatever their names, e.g. the `apiKeyEnv` of the user's
     * providers (secret-named variables and secret-shaped values are kept out anyway).
     */
    secretNames?: string[];
    /** Directories shown read-only even under the sandbox's own `/tmp` (the Deno cache). */
    readable?: string[];
  }
  | {
    /** What every call answers instead of running. */
    refuse: string;
  };

/** Options of {@link createBashTool}. */
export interface BashToolOptions {
  /** The shell to run the command with `-c` (default `bash`). */
  shell?: string;
  /** The timeout when the call gives none, in milliseconds (default 120,000). */
  defaultTimeoutMs?: number;
  /** The longest timeout a call may ask for, in milliseconds (default 600,000). */
  maxTimeoutMs?: number;
  /** Output longer than this many characters keeps its head and tail (default 30,000). */
  maxOutputChars?: number;
  /**
   * Variables added to the inherited environment. In the sandbox, secrets are stripped from both
   * (see `sandboxEnv`).
   */
  env?: Record<string, string>;
  /** How long processes get to exit after SIGTERM before SIGKILL, in milliseconds (default 1,000). */
  killGraceMs?: number;
  /**
   * Runs each command as `bwrap <sandboxArgs> -- bash -c …`, with the environment cleared and
   * refilled by `sandboxEnv`; or, given `{ refuse }`, fails every call with that message.
   */
  sandbox?: BashSandbox;
}

/** The input of the `bash` tool. */
export interface BashInput {
  /** The command line. */
  command: string;
  /** The timeout in milliseconds. */
  timeout?: number;
}

/** How long to wait for the pipe to drain once the command is over, before giving up on it. */
const _DRAIN_MS = 200;

/**
 * Creates the `bash` tool. Each call runs `bash -c <command>` in the call's working directory,
 * with no stdin and stderr merged into stdout in the order written. The command runs in a new
 * process group; on timeout or cancellation the whole group gets SIGTERM, then SIGKILL after a
 * short grace, and background jobs left when the command ends are stopped the same way. The
 * signals go through what Deno already grants (all of `run`, or the shell itself), so Deno never
 * asks for more than running the command.
 *
 * With `sandbox`, the command runs inside bubblewrap: the process group is bwrap's, and when it
 * is killed, or the command exits, the kernel kills everything left in the sandbox's PID
 * namespace. A command killed by a signal inside then ends with code 128 + the signal's number
 * (bwrap's exit code), and bwrap's own errors come first in the output. `metadata.sandboxed` says
 * whether the sandbox was used.
 *
 * @example
 * ```ts
 * import { createBashTool } from "./bash.ts";
 * const bash = createBashTool();
 * const input = bash.parse!({ command: "echo hi" });
 * if (!input.success) throw new Error("unexpected");
 * const result = await bash.execute(input.data, {
 *   cwd: Deno.cwd(),
 *   signal: new AbortController().signal,
 *   toolCallId: "1",
 * });
 * if (typeof result === "string" || result.output !== "hi\n[exit code 0]") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function createBashTool(options: BashToolOptions = {}): Tool<BashInput> {
  const shell = options.shell ?? "bash";
  const defaultTimeoutMs = options.defaultTimeoutMs ?? 120_000;
  const maxTimeoutMs = options.maxTimeoutMs ?? 600_000;
  const maxOutputChars = options.maxOutputChars ?? 30_000;
  const graceMs = options.killGraceMs ?? 1_000;
  const sandbox = options.sandbox;
  const confined = sandbox && "bwrap" in sandbox ? sandbox : undefined;
  return defineTool({
    name: "bash",
    description: `Runs a shell command with ${shell} -c in the working directory and returns its ` +
      `combined stdout and stderr followed by the exit code. Use it for builds, tests, git, ` +
      `package managers and other programs; prefer the file tools to read, search or edit files. ` +
      `There is no stdin: interactive commands fail, so pass flags such as --yes or ` +
      `--no-pager. Each call starts a fresh shell (cd and exports do not carry over; chain ` +
      `commands with && instead). The command is stopped after ${_seconds(defaultTimeoutMs)} ` +
      `unless timeout says otherwise (at most ${_seconds(maxTimeoutMs)}). Background jobs (&) ` +
      (confined
        ? `are stopped when the command returns. `
        : `are stopped when the command returns; to leave a server running, start it with ` +
          `\`setsid <cmd> > file.log 2>&1 &\`. `) +
      `Long output keeps only its beginning and end, so filter it (grep, head, tail) when you ` +
      `need a specific part.` + (confined ? _sandboxNote(confined) : ""),
    parameters: z.object({
      command: z.string().min(1).describe("The command line to run, e.g. `deno test -A`."),
      timeout: z.number().int().positive().max(maxTimeoutMs).optional().describe(
        `Timeout in milliseconds (default ${defaultTimeoutMs}, at most ${maxTimeoutMs}).`,
      ),
    }),
    capabilities: ["run"],
    timeoutMs: maxTimeoutMs + 30_000,
    execute: ({ command, timeout }, ctx) => {
      if (sandbox && "refuse" in sandbox) {
        return { output: sandbox.refuse, isError: true, metadata: { sandboxed: false } };
      }
      return _run(command, ctx.cwd, ctx.signal, {
        shell,
        env: options.env,
        sandbox: confined,
        timeoutMs: timeout ?? defaultTimeoutMs,
        maxOutputChars,
        graceMs,
      });
    },
  });
}

/** What the model is told about the sandbox. */
function _sandboxNote(sandbox: { writable: string[]; net: boolean }): string {
  const writable = sandbox.writable.length ? sandbox.writable.join(", ") : "nothing";
  return ` Commands run in a sandbox: the file system is read-only except ${writable} and a ` +
    `private /tmp emptied after each command; ` +
    (sandbox.net ? "" : "there is no network, so downloads and installs fail; ") +
    `API keys and tokens are not in the environment, and ~/.ssh and similar are hidden. ` +
    `What would run code outside the sandbox stays read-only even in the workspace: .git/config, ` +
    `.git/hooks, .agent/, .mcp.json, .envrc, .vscode/, .idea/ (where one does not exist, an ` +
    `empty read-only directory holds its place while a command runs), so git init, git config ` +
    `and hooks are for the user to change; a git repository registered in the index (git add ` +
    `of a nested repository, a submodule) is taken out again after the command.`;
}

interface _RunOptions {
  shell: string;
  env?: Record<string, string>;
  sandbox?: Extract<BashSandbox, { bwrap: string }>;
  timeoutMs: number;
  maxOutputChars: number;
  graceMs: number;
}

async function _run(
  command: string,
  cwd: string,
  signal: AbortSignal,
  options: _RunOptions,
): Promise<ToolOutput> {
  signal.throwIfAborted();
  const started = performance.now();
  const { child, release, checkLeftovers } = await _spawn(command, cwd, options);
  let outcome: ToolOutput | undefined;
  try {
    outcome = await _outcome(child, command, started, signal, options);
  } finally {
    // Only once nothing of the sandbox is left: what stands in place of absent protected files,
    // and what the command left in git's index that would run code outside the sandbox.
    release();
    const said = await checkLeftovers();
    if (outcome && said.length) outcome = _withLeftovers(outcome, said);
  }
  return outcome;
}

/**
 * A result that says first what the sandbox undid or found, so that the model and the user (who
 * sees the display, or the first line of a failure) both read it. A call whose effect was partly
 * undone failed.
 */
function _withLeftovers(outcome: ToolOutput, said: Leftover[]): ToolOutput {
  const texts = said.map((leftover) => leftover.text);
  return {
    ...outcome,
    output: `${texts.join("\n")}\n\n${outcome.output}`,
    isError: outcome.isError || said.some((leftover) => leftover.undone),
    display: [outcome.display ?? "", ...texts].join("\n"),
    metadata: { ...outcome.metadata, leftovers: texts },
  };
}

async function _outcome(
  child: Deno.ChildProcess,
  command: string,
  started: number,
  signal: AbortSignal,
  options: _RunOptions,
): Promise<ToolOutput> {
  const output = _collect(child.stdout, options.maxOutputChars);
  // bwrap's own complaints (a bind that fails, …); the command's stderr goes to stdout.
  const setup = options.sandbox ? _collect(child.stderr, 4_000) : undefined;

  // Wait for the shell to exit, the timeout, or cancellation, whichever comes first.
  let killed: "timeout" | "cancel" | undefined;
  const stop = Promise.withResolvers<void>();
  const timer = setTimeout(() => {
    killed ??= "timeout";
    stop.resolve();
  }, options.timeoutMs);
  const onAbort = () => {
    killed ??= "cancel";
    stop.resolve();
  };
  signal.addEventListener("abort", onAbort, { once: true });
  let exited = false;
  const status = child.status.finally(() => exited = true);
  try {
    await Promise.race([status, stop.promise]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  }
  // Whether the command finished or not, nothing of its process group outlives the call.
  await _killGroup(_groupSignaller(child, options), () => exited, options.graceMs);
  const { code, signal: exitSignal } = await status;
  const said = (await setup?.finish(_DRAIN_MS))?.trim();
  const text = (said ? `${said}\n` : "") + await output.finish(_DRAIN_MS);

  const durationMs = Math.round(performance.now() - started);
  const timedOut = killed === "timeout";
  let footer: string;
  if (timedOut) footer = `[killed: timed out after ${_seconds(options.timeoutMs)}]`;
  else if (killed === "cancel") footer = "[killed: cancelled]";
  else if (exitSignal !== null) footer = `[killed by ${exitSignal}]`;
  else footer = `[exit code ${code}]`;
  const isError = killed !== undefined || exitSignal !== null || code !== 0;
  const firstLine = command.trim().split("\n")[0];
  const shown = firstLine.length > 60 ? `${firstLine.slice(0, 59)}…` : firstLine;
  const outcome = footer.slice(1, -1);
  return {
    output: text === "" ? footer : `${text}${text.endsWith("\n") ? "" : "\n"}${footer}`,
    isError,
    display: `$ ${shown}  (${outcome}, ${(durationMs / 1000).toFixed(1)} s)`,
    metadata: {
      exitCode: killed === undefined ? code : null,
      timedOut,
      durationMs,
      sandboxed: options.sandbox !== undefined,
    },
  };
}

async function _spawn(
  command: string,
  cwd: string,
  options: _RunOptions,
): Promise<
  { child: Deno.ChildProcess; release: () => void; checkLeftovers: () => Promise<Leftover[]> }
> {
  const sandbox = options.sandbox;
  // Merge stderr into stdout, then run the command in a fresh shell on the merged output, so
  // that even its syntax errors are shown, with the right line numbers. In the sandbox the outer
  // shell stays, as the PID namespace's init: the command's own shell is then an ordinary
  // process (init ignores signals it has no handler for, so `kill $$` would do nothing), and
  // when it exits, init exits with its status and the kernel ends whatever is left. Its own
  // notes ("Terminated") are not the command's output.
  const wrapper = sandbox
    ? 'exec 2>/dev/null; "$0" -c "$1" 2>&1; exit $?'
    : 'exec 2>&1; exec "$0" -c "$1"';
  const shell = [options.shell, "-c", wrapper, options.shell, command];
  let program = options.shell;
  let spawn: Deno.CommandOptions = { args: shell.slice(1), env: options.env, stderr: "null" };
  let release = () => {};
  let checkLeftovers = () => Promise.resolve<Leftover[]>([]);
  if (sandbox) {
    // The child gets exactly this environment, so that it never holds the secrets.
    const env = sandboxEnv({ ..._hostEnv(), ...options.env }, sandbox.secretNames);
    program = sandbox.bwrap;
    const prepared = prepareSandbox({ ...sandbox, command: shell, cwd, home: env.HOME });
    release = prepared.release;
    checkLeftovers = prepared.checkLeftovers;
    spawn = { args: prepared.args, env, clearEnv: true, stderr: "piped" };
  }
  try {
    const child = new Deno.Command(program, {
      ...spawn,
      cwd,
      stdin: "null",
      stdout: "piped",
      detached: true,
    }).spawn();
    return { child, release, checkLeftovers };
  } catch (error) {
    release();
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    const cwdExists = await Deno.stat(cwd).then((info) => info.isDirectory, () => false);
    if (!cwdExists) {
      throw new Error(`The working directory ${cwd} does not exist: create it or run elsewhere.`);
    }
    if (sandbox) {
      throw new Error(
        `bubblewrap (${sandbox.bwrap}) was not found: install it (apt-get install bubblewrap) ` +
          `or turn the sandbox off.`,
      );
    }
    throw new Error(
      `The shell "${options.shell}" was not found: install it or configure another shell.`,
    );
  }
}

/** Sends a signal to the command's process group; false when the group no longer exists. */
type _Signaller = (signal: Deno.Signal) => Promise<boolean>;

/**
 * How to signal the command's process group with what Deno already grants, so that a command
 * Deno was allowed to run never makes it ask again (`Deno.kill` needs all of `run`): with all of
 * `run` granted, `Deno.kill`; else, when Deno grants the shell (it ran the command, or the
 * sandbox's commands), the shell's own `kill`; else the group's leader through its handle,
 * which in the sandbox is bwrap, whose death ends everything inside.
 */
function _groupSignaller(child: Deno.ChildProcess, options: _RunOptions): _Signaller {
  const granted = (descriptor: Deno.RunPermissionDescriptor) =>
    Deno.permissions.querySync(descriptor).state === "granted";
  if (granted({ name: "run" })) {
    return (signal) => Promise.resolve(_attempt(() => Deno.kill(-child.pid, signal)));
  }
  const leader = (signal: Deno.Signal) => _attempt(() => child.kill(signal));
  if (granted({ name: "run", command: options.shell })) {
    return async (signal) => {
      try {
        const { success } = await new Deno.Command(options.shell, {
          args: ["-c", 'kill -s "$0" -- "-$1" 2>/dev/null', signal.slice(3), String(child.pid)],
          clearEnv: true,
          stdin: "null",
          stdout: "null",
          stderr: "null",
        }).output();
        return success;
      } catch {
        // No process can start (the user's process limit is reached): the leader, at least.
        return leader(signal);
      }
    };
  }
  return (signal) => Promise.resolve(leader(signal));
}

/** SIGTERM to the group, then SIGKILL once the grace is over if anything may still be alive. */
async function _killGroup(
  signal: _Signaller,
  exited: () => boolean,
  graceMs: number,
): Promise<void> {
  if (!await signal("SIGTERM")) return;
  // SIGCONT wakes stopped processes so they can handle SIGTERM, and probes whether any is left.
  const deadline = performance.now() + graceMs;
  while (performance.now() < deadline) {
    if (exited() && !await signal("SIGCONT")) return;
    await sleep(20);
  }
  await signal("SIGKILL");
}

/** Whether `send` went through (it throws when no process is left to signal). */
function _attempt(send: () => void): boolean {
  try {
    send();
    return true;
  } catch {
    return false;
  }
}

function _seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
