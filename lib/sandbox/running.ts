/**
 * The sandboxed processes alive now that may write somewhere: `bash` commands, hooks and MCP
 * stdio servers run by bubblewrap with writable directories, counted from `prepareSandbox` until
 * their sandbox is released. A command or a hook ends by itself
 * (and when bwrap has exited, the kernel has ended everything inside: the command is the init of
 * the sandbox's PID namespace); a server lasts as long as the run.
 *
 * Where Deno does not let the file tools check what they opened by its handle, they open a file
 * only while none of these is alive, so that nothing can swap a directory of the workspace for a
 * symlink between their check and their open (see `tools/open_file.ts`).
 *
 * @module
 */

/** What a sandboxed process is: a `command` (or a hook) ends by itself; a `server` lasts. */
export type SandboxedKind = "command" | "server";

/** A sandboxed process that may write, alive now. */
export interface LiveSandbox {
  /** What it is. */
  readonly kind: SandboxedKind;
  /** What it runs, for messages: its command line. */
  readonly name: string;
}

const _live = new Set<LiveSandbox>();
let _ended = Promise.withResolvers<void>();

/**
 * Counts a sandboxed process that may write as alive until `end()` is called: call it once
 * bwrap has exited, or failed to start (calling it again does nothing).
 *
 * @example
 * ```ts
 * import { liveSandboxes, sandboxStarted } from "./running.ts";
 * const started = sandboxStarted("command", "make test");
 * if (liveSandboxes().length !== 1) throw new Error("unexpected");
 * started.end();
 * if (liveSandboxes().length !== 0) throw new Error("unexpected");
 * ```
 */
export function sandboxStarted(kind: SandboxedKind, name: string): { end(): void } {
  const live: LiveSandbox = { kind, name };
  _live.add(live);
  return {
    end() {
      if (!_live.delete(live)) return;
      _ended.resolve();
      _ended = Promise.withResolvers<void>();
    },
  };
}

/**
 * The sandboxed processes that may write, alive now, in the order they started.
 *
 * @example
 * ```ts
 * import { liveSandboxes } from "./running.ts";
 * if (!Array.isArray(liveSandboxes())) throw new Error("unexpected");
 * ```
 */
export function liveSandboxes(): LiveSandbox[] {
  return [..._live];
}

/**
 * Resolves when the next sandboxed process ends; rejects with the signal's reason when it is
 * aborted first.
 *
 * @example
 * ```ts
 * import { nextSandboxEnd, sandboxStarted } from "./running.ts";
 * const started = sandboxStarted("command", "deno fmt");
 * const ended = nextSandboxEnd();
 * started.end();
 * await ended;
 * ```
 */
export function nextSandboxEnd(signal?: AbortSignal): Promise<void> {
  if (!signal) return _ended.promise;
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    _ended.promise.then(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    });
  });
}
