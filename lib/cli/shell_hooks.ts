/**
 * Hooks from the settings file: shell commands run around model and tool calls. Each gets the
 * event as JSON on stdin. Exit code 0 lets things go on (a JSON object on stdout may change
 * them); exit code 2 blocks, and what the command wrote to stderr is shown to the model; any
 * other exit code is reported as a warning and changes nothing.
 *
 * A hook runs as the `bash` tool's commands do: in the sandbox when there is one, never without
 * it when it is required, and always with the agent's environment stripped of its secrets.
 *
 * @module
 */

import { filesIdle } from "../sandbox/running.ts";
import type { AgentEvent } from "../events.ts";
import type { Hooks } from "../hooks.ts";
import type { Message } from "../messages.ts";
import { prepareSandbox } from "../sandbox/bubblewrap.ts";
import { _hostEnv, sandboxEnv } from "../sandbox/env.ts";
import type { Leftover } from "../sandbox/leftovers.ts";
import type { BashSandbox } from "../../tools/bash.ts";

/** One hook command. */
export interface ShellHook {
  /** A regular expression over the tool name (tool hooks) or the event type (`onEvent`). */
  matcher?: string;
  /** The shell command line. */
  command: string;
  /** Seconds it may take (default 60). */
  timeout?: number;
}

/** The hooks section of the settings. */
export interface ShellHooksConfig {
  /** Before each model call. */
  beforeModelCall?: ShellHook[];
  /** After each model call. */
  afterModelCall?: ShellHook[];
  /** Before each tool call. */
  beforeToolCall?: ShellHook[];
  /** After each tool call. */
  afterToolCall?: ShellHook[];
  /** For each event (not awaited). */
  onEvent?: ShellHook[];
}

/** What a hook command did. */
interface _Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of {@link shellHooks}. */
export interface ShellHooksOptions {
  /** The working directory the commands run in. */
  cwd: string;
  /** Says what went wrong with a command, or that the hooks are refused. */
  warn(text: string): void;
  /** The session's id, passed to each command. */
  sessionId?: string;
  /**
   * The `bash` tool's sandbox: commands run inside it, or, given `{ refuse }`, never run. Without
   * it they run unconfined. Either way their environment is the agent's without its secrets.
   */
  sandbox?: BashSandbox;
  /** Variables kept out of the commands whatever their names (the user's providers' keys). */
  secretNames?: readonly string[];
}

/**
 * Turns the settings' hook commands into library {@link Hooks}. When the sandbox refuses (it is
 * required and there is none), no command runs: that is said once, and a tool call that a
 * `beforeToolCall` command would have checked is blocked, with the reason.
 *
 * @example
 * ```ts
 * import { shellHooks } from "./shell_hooks.ts";
 * const hooks = shellHooks({ beforeToolCall: [{ matcher: "bash", command: "exit 2" }] }, {
 *   cwd: Deno.cwd(),
 *   warn: () => {},
 * });
 * if (typeof hooks.beforeToolCall !== "function" || hooks.afterToolCall) throw new Error("unexpected");
 * ```
 */
export function shellHooks(config: ShellHooksConfig, options: ShellHooksOptions): Hooks {
  const sandbox = options.sandbox;
  if (sandbox && "refuse" in sandbox) return _refused(config, sandbox.refuse, options.warn);
  const run = (hook: ShellHook, name: string, payload: unknown) =>
    _run(hook, name, {
      hook: name,
      cwd: options.cwd,
      sessionId: options.sessionId,
      ...payload as object,
    }, { cwd: options.cwd, warn: options.warn, sandbox, secretNames: options.secretNames });
  const hooks: Hooks = {};
  // Model hooks: stderr of exit 2 goes to the model as a note in the next request.
  const notes: string[] = [];

  if (config.beforeToolCall?.length) {
    hooks.beforeToolCall = async ({ call }) => {
      let input = call.input;
      for (const hook of _matching(config.beforeToolCall, call.name)) {
        const outcome = await run(hook, "beforeToolCall", { tool: call.name, id: call.id, input });
        if (outcome?.code === 2) {
          return { refuse: outcome.stderr.trim() || `refused by ${hook.command}` };
        }
        const change = _json(outcome?.stdout);
        // `block` is the older word for `refuse`, still read.
        const refuse = change?.refuse ?? change?.block;
        if (refuse) return { refuse: String(refuse) };
        if (change && "input" in change) input = change.input;
      }
      return input === call.input ? undefined : { input };
    };
  }
  if (config.afterToolCall?.length) {
    hooks.afterToolCall = async ({ call, result }) => {
      let { output, isError } = result;
      for (const hook of _matching(config.afterToolCall, call.name)) {
        const outcome = await run(hook, "afterToolCall", {
          tool: call.name,
          id: call.id,
          input: call.input,
          output,
          isError,
        });
        if (outcome?.code === 2) {
          output = outcome.stderr.trim() || `refused by ${hook.command}`;
          isError = true;
          continue;
        }
        const change = _json(outcome?.stdout);
        if (typeof change?.output === "string") output = change.output;
        if (typeof change?.isError === "boolean") isError = change.isError;
      }
      return { output, isError };
    };
  }
  if (config.beforeModelCall?.length || config.afterModelCall?.length) {
    hooks.beforeModelCall = async ({ turn, messages }) => {
      for (const hook of _matching(config.beforeModelCall, "model")) {
        const outcome = await run(hook, "beforeModelCall", { turn, messages });
        if (outcome?.code === 2 && outcome.stderr.trim()) notes.push(outcome.stderr.trim());
      }
      if (notes.length === 0) return undefined;
      const note: Message = {
        role: "user",
        content: `[from a hook]\n${notes.splice(0).join("\n")}`,
      };
      return [...messages, note];
    };
  }
  if (config.afterModelCall?.length) {
    hooks.afterModelCall = async ({ turn, message, usage }) => {
      for (const hook of _matching(config.afterModelCall, "model")) {
        const outcome = await run(hook, "afterModelCall", { turn, message, usage });
        if (outcome?.code === 2 && outcome.stderr.trim()) notes.push(outcome.stderr.trim());
      }
    };
  }
  if (config.onEvent?.length) {
    hooks.onEvent = (event: AgentEvent) => {
      for (const hook of _matching(config.onEvent, event.type)) {
        void run(hook, "onEvent", { event });
      }
    };
  }
  return hooks;
}

/** The commands of `hooks` whose matcher fits `subject` (a tool name or an event type). */
function _matching(hooks: ShellHook[] | undefined, subject: string): ShellHook[] {
  return (hooks ?? []).filter((hook) =>
    !hook.matcher || new RegExp(`^(?:${hook.matcher})$`).test(subject)
  );
}

/** The hooks when none may run: said once; a call a command would have checked is blocked. */
function _refused(config: ShellHooksConfig, refuse: string, warn: (text: string) => void): Hooks {
  const reason = refuse.charAt(0).toLowerCase() + refuse.slice(1);
  const guards = config.beforeToolCall ?? [];
  warn(
    `the settings' hooks are refused: ${reason}` +
      (guards.length ? " The tool calls their beforeToolCall commands check are refused too." : ""),
  );
  if (!guards.length) return {};
  return {
    beforeToolCall: ({ call }) => {
      const hook = _matching(guards, call.name)[0];
      return hook ? { refuse: `the hook "${hook.command}" is refused: ${reason}` } : undefined;
    },
  };
}

/** Options of {@link _run}. */
interface _RunOptions {
  cwd: string;
  warn(text: string): void;
  sandbox?: { bwrap: string; writable: string[]; net: boolean; hide?: string[] };
  secretNames?: readonly string[];
}

/**
 * `sh -c <command>`, with the agent's environment less its secrets; in the sandbox, through
 * bwrap, in a session of its own (nothing inside has a terminal to push keystrokes into), so
 * that killing bwrap ends everything inside.
 */
function _command(
  hook: ShellHook,
  name: string,
  options: _RunOptions,
): { command: Deno.Command; release: () => void; checkLeftovers?: () => Promise<Leftover[]> } {
  const env = sandboxEnv({ ..._hostEnv(), AGENT_HOOK: name }, options.secretNames);
  const io = { stdin: "piped", stdout: "piped", stderr: "piped" } as const;
  const command = ["sh", "-c", hook.command];
  if (!options.sandbox) {
    return {
      command: new Deno.Command(command[0], {
        args: command.slice(1),
        cwd: options.cwd,
        env,
        clearEnv: true,
        ...io,
      }),
      release: () => {},
    };
  }
  // What the sandbox puts in place of absent protected files goes once bwrap has exited.
  const prepared = prepareSandbox({
    ...options.sandbox,
    command,
    cwd: options.cwd,
    home: env.HOME,
  });
  return {
    command: new Deno.Command(options.sandbox.bwrap, {
      args: prepared.args,
      cwd: options.cwd,
      env,
      clearEnv: true,
      detached: true,
      ...io,
    }),
    release: prepared.release,
    checkLeftovers: prepared.checkLeftovers,
  };
}

async function _run(
  hook: ShellHook,
  name: string,
  payload: unknown,
  options: _RunOptions,
): Promise<_Outcome | undefined> {
  let release = () => {};
  let checkLeftovers: (() => Promise<Leftover[]>) | undefined;
  try {
    // No sandbox starts while an editor acts on a path the file tools checked.
    if (options.sandbox) await filesIdle();
    const prepared = _command(hook, name, options);
    release = prepared.release;
    checkLeftovers = prepared.checkLeftovers;
    const child = prepared.command.spawn();
    const timer = setTimeout(() => child.kill("SIGKILL"), (hook.timeout ?? 60) * 1000);
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(JSON.stringify(payload))).catch(() => {});
    await writer.close().catch(() => {});
    const output = await child.output();
    clearTimeout(timer);
    const outcome = {
      code: output.code,
      stdout: new TextDecoder().decode(output.stdout),
      stderr: new TextDecoder().decode(output.stderr),
    };
    if (output.signal === "SIGKILL") {
      options.warn(
        `${name} hook "${hook.command}" took more than ${hook.timeout ?? 60} s and was stopped`,
      );
      return undefined;
    }
    if (outcome.code !== 0 && outcome.code !== 2) {
      options.warn(
        `${name} hook "${hook.command}" failed (exit ${outcome.code}): ${outcome.stderr.trim()}`,
      );
    }
    return outcome;
  } catch (error) {
    options.warn(`${name} hook "${hook.command}" could not run: ${(error as Error).message}`);
    return undefined;
  } finally {
    release();
    // What the hook left in git's index that would run code outside the sandbox is undone.
    for (const leftover of await checkLeftovers?.() ?? []) {
      options.warn(`${name} hook "${hook.command}": ${leftover.text}`);
    }
  }
}

function _json(text: string | undefined): Record<string, unknown> | undefined {
  if (!text?.trim()) return undefined;
  try {
    const value = JSON.parse(text);
    return value && typeof value === "object" && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
