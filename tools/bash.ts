/**
 * The `bash` tool: runs a shell command in the working directory, in its own process group, with
 * stderr merged into stdout, a timeout, and output kept to its head and tail; optionally inside
 * the bubblewrap sandbox.
 *
 * @module
 */

import { z } from "zod";
import { prepareSandbox } from "../lib/sandbox/bubblewrap.ts";
import { filesIdle } from "../lib/sandbox/running.ts";
import type { Leftover } from "../lib/sandbox/leftovers.ts";
import { _groupSignaller, _killGroup } from "./bash_kill.ts";
import { _collect, _ended, _seconds } from "./bash_output.ts";
import { _runInTerminal, type BashTerminal } from "./bash_terminal.ts";
import { _sandboxInTerminal } from "./bash_env_file.ts";
import { _hostEnv, sandboxEnv } from "../lib/sandbox/env.ts";
import { defineTool, type Tool, type ToolOutput } from "../lib/tool.ts";

export type {
  BashExitStatus,
  BashTerminal,
  BashTerminalHandle,
  BashTerminalSpec,
} from "./bash_terminal.ts";

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
  /**
   * A terminal of the host program (an editor) to run each command in, so that the user watches
   * it run: the same program and arguments (`bwrap …` in the sandbox, else the shell), started,
   * killed on timeout or cancellation, and released by the host. In the sandbox, bwrap clears
   * the terminal's environment (`--clearenv`), so the host's variables never reach the command,
   * and the sandbox's reaches it through a file readable by the user alone (in a fresh 0700
   * directory, shown read-only inside, removed once the sandbox is released), which the shell
   * sources first: a command line is visible to every user of the machine, so no value is set
   * on it (variables whose names are not shell identifiers are left out); without the sandbox,
   * `env` is added to the terminal's. The host
   * keeps the output to a byte budget (the beginning goes first; the output says so), and
   * stopping what the command left in the background is the host's part. `metadata.terminalId`
   * names the terminal.
   */
  terminal?: BashTerminal;
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
        terminal: options.terminal,
        toolCallId: ctx.toolCallId,
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
  terminal?: BashTerminal;
  toolCallId: string;
}

/**
 * What runs, worked out once for `Deno.Command` and for a terminal alike: the program and its
 * arguments, the environment (the sandbox's whole environment when `clearEnv`, else variables
 * added to the inherited one; in a terminal, the sandbox's is in a file the command sources, and
 * `env` is empty), and, in the sandbox, what to do once it has ended.
 */
interface _Launch {
  program: string;
  args: string[];
  env?: Record<string, string>;
  clearEnv: boolean;
  release: () => void;
  checkLeftovers: () => Promise<Leftover[]>;
}

async function _run(
  command: string,
  cwd: string,
  signal: AbortSignal,
  options: _RunOptions,
): Promise<ToolOutput> {
  signal.throwIfAborted();
  const started = performance.now();
  // No sandbox starts while an editor acts on a path the file tools checked.
  if (options.sandbox) await filesIdle();
  const launch = _launch(command, cwd, options);
  const { release, checkLeftovers } = launch;
  const child = options.terminal ? undefined : await _spawn(launch, cwd, options);
  let outcome: ToolOutput | undefined;
  try {
    outcome = child
      ? await _outcome(child, command, started, signal, options)
      : await _runInTerminal(options.terminal!, _inTerminal(launch, command), {
        toolCallId: options.toolCallId,
        cwd,
        signal,
        timeoutMs: options.timeoutMs,
        maxOutputChars: options.maxOutputChars,
        graceMs: options.graceMs,
        sandboxed: options.sandbox !== undefined,
      });
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
  await _killGroup(_groupSignaller(child, options.shell), () => exited, options.graceMs);
  const { code, signal: exitSignal } = await status;
  const said = (await setup?.finish(_DRAIN_MS))?.trim();
  const text = (said ? `${said}\n` : "") + await output.finish(_DRAIN_MS);

  return _ended(text, command, {
    killed,
    code,
    signal: exitSignal,
    timeoutMs: options.timeoutMs,
    durationMs: Math.round(performance.now() - started),
    sandboxed: options.sandbox !== undefined,
  });
}

/** Works out what runs, and prepares the sandbox when there is one (see {@link _Launch}). */
function _launch(command: string, cwd: string, options: _RunOptions): _Launch {
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
  if (!sandbox) {
    return {
      program: options.shell,
      args: shell.slice(1),
      env: options.env,
      clearEnv: false,
      release: () => {},
      checkLeftovers: () => Promise.resolve([]),
    };
  }
  // The child gets exactly this environment, so that it never holds the secrets.
  const env = sandboxEnv({ ..._hostEnv(), ...options.env }, sandbox.secretNames);
  if (options.terminal) {
    return { ..._sandboxInTerminal(env, shell, cwd, sandbox), clearEnv: true };
  }
  const prepared = prepareSandbox({ ...sandbox, command: shell, cwd, home: env.HOME });
  return {
    program: sandbox.bwrap,
    args: prepared.args,
    env,
    clearEnv: true,
    release: prepared.release,
    checkLeftovers: prepared.checkLeftovers,
  };
}

/**
 * The launch as a terminal of the host starts it. The terminal adds to an environment of its
 * own, which may hold the host's secrets: in the sandbox, bwrap clears it and the terminal adds
 * nothing (the sandbox's environment is in the file the command sources).
 */
function _inTerminal(
  launch: _Launch,
  command: string,
): { program: string; args: string[]; env: Record<string, string>; command: string } {
  if (!launch.clearEnv) {
    return { program: launch.program, args: launch.args, env: launch.env ?? {}, command };
  }
  return { program: launch.program, args: ["--clearenv", ...launch.args], env: {}, command };
}

/** Starts the launch with `Deno.Command`; on failure, releases the sandbox and says why. */
async function _spawn(
  launch: _Launch,
  cwd: string,
  options: _RunOptions,
): Promise<Deno.ChildProcess> {
  const sandbox = options.sandbox;
  try {
    return new Deno.Command(launch.program, {
      args: launch.args,
      env: launch.env,
      clearEnv: launch.clearEnv,
      cwd,
      stdin: "null",
      stdout: "piped",
      // bwrap's own complaints are read apart; the command's stderr goes to stdout.
      stderr: sandbox ? "piped" : "null",
      detached: true,
    }).spawn();
  } catch (error) {
    launch.release();
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
