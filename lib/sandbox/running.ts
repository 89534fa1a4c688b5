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

let _editorOps = 0;
let _editorIdle = Promise.withResolvers<void>();

/**
 * Runs `work` (a read or write of a file by its path, done by another program: an editor through
 * ACP) while no sandboxed process that may write is alive, and keeps any from starting until it
 * is done (see {@link filesIdle}): a command in the sandbox cannot swap the file checked for a
 * symlink to a place it may not reach while the other program acts on its name. Waits for
 * sandboxed commands to end; refuses while a sandboxed server, which lasts, may write.
 *
 * @example
 * ```ts
 * import { withPathHeld } from "./running.ts";
 * const text = await withPathHeld("/w/a.txt", () => Promise.resolve("read by the editor"));
 * if (text !== "read by the editor") throw new Error("unexpected");
 * ```
 */
export async function withPathHeld<T>(
  path: string,
  work: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  while (_live.size > 0) {
    const server = [..._live].find((live) => live.kind === "server");
    if (server) {
      throw new Error(
        `${path} was not passed to the editor: the MCP server "${server.name}" runs in the ` +
          `sandbox and may change the workspace at any moment, and the editor acts on the file's ` +
          `name. Run the agent without that server, or without the editor's file system.`,
      );
    }
    await nextSandboxEnd(signal);
  }
  _editorOps++;
  try {
    return await work();
  } finally {
    if (--_editorOps === 0) {
      _editorIdle.resolve();
      _editorIdle = Promise.withResolvers<void>();
    }
  }
}

/**
 * Resolves once no file is held by {@link withPathHeld}; a sandbox that may write is prepared
 * right after it resolves, in the same step, so that none starts while another program acts on
 * a path that was checked.
 *
 * @example
 * ```ts
 * import { filesIdle } from "./running.ts";
 * await filesIdle();
 * ```
 */
export async function filesIdle(): Promise<void> {
  while (_editorOps > 0) await _editorIdle.promise;
}
