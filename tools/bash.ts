/**
 * The `bash` tool: runs a shell command in the working directory, in its own process group, with
 * stderr merged into stdout, a timeout, and output kept to its head and tail.
 *
 * @module
 */

import { z } from "zod";
import { sleep } from "../lib/async.ts";
import { defineTool, type Tool, type ToolOutput } from "../lib/tool.ts";

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
  /** Variables added to the inherited environment. */
  env?: Record<string, string>;
  /** How long processes get to exit after SIGTERM before SIGKILL, in milliseconds (default 1,000). */
  killGraceMs?: number;
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
 * short grace, and background jobs left when the command ends are stopped the same way.
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
  return defineTool({
    name: "bash",
    description: `Runs a shell command with ${shell} -c in the working directory and returns its ` +
      `combined stdout and stderr followed by the exit code. Use it for builds, tests, git, ` +
      `package managers and other programs; prefer the file tools to read, search or edit files. ` +
      `There is no stdin: interactive commands fail, so pass flags such as --yes or ` +
      `--no-pager. Each call starts a fresh shell (cd and exports do not carry over; chain ` +
      `commands with && instead). The command is stopped after ${_seconds(defaultTimeoutMs)} ` +
      `unless timeout says otherwise (at most ${_seconds(maxTimeoutMs)}). Background jobs (&) ` +
      `are stopped when the command returns; to leave a server running, start it with ` +
      `\`setsid <cmd> > file.log 2>&1 &\`. Long output keeps only its beginning and end, so ` +
      `filter it (grep, head, tail) when you need a specific part.`,
    parameters: z.object({
      command: z.string().min(1).describe("The command line to run, e.g. `deno test -A`."),
      timeout: z.number().int().positive().max(maxTimeoutMs).optional().describe(
        `Timeout in milliseconds (default ${defaultTimeoutMs}, at most ${maxTimeoutMs}).`,
      ),
    }),
    capabilities: ["run"],
    timeoutMs: maxTimeoutMs + 30_000,
    execute: ({ command, timeout }, ctx) =>
      _run(command, ctx.cwd, ctx.signal, {
        shell,
        env: options.env,
        timeoutMs: timeout ?? defaultTimeoutMs,
        maxOutputChars,
        graceMs,
      }),
  });
}

interface _RunOptions {
  shell: string;
  env?: Record<string, string>;
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
  const child = await _spawn(command, cwd, options);
  const output = _collect(child.stdout, options.maxOutputChars);

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
  await _killGroup(child.pid, () => exited, options.graceMs);
  const { code, signal: exitSignal } = await status;
  const text = await output.finish(_DRAIN_MS);

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
    metadata: { exitCode: killed === undefined ? code : null, timedOut, durationMs },
  };
}

async function _spawn(
  command: string,
  cwd: string,
  options: _RunOptions,
): Promise<Deno.ChildProcess> {
  try {
    return new Deno.Command(options.shell, {
      // Merge stderr into stdout, then run the command in a fresh shell on the merged output, so
      // that even its syntax errors are shown, with the right line numbers.
      args: ["-c", 'exec 2>&1; exec "$0" -c "$1"', options.shell, command],
      cwd,
      env: options.env,
      stdin: "null",
      stdout: "piped",
      stderr: "null",
      detached: true,
    }).spawn();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    const cwdExists = await Deno.stat(cwd).then((info) => info.isDirectory, () => false);
    if (!cwdExists) {
      throw new Error(`The working directory ${cwd} does not exist: create it or run elsewhere.`);
    }
    throw new Error(
      `The shell "${options.shell}" was not found: install it or configure another shell.`,
    );
  }
}

/** SIGTERM to the group, then SIGKILL once the grace is over if anything may still be alive. */
async function _killGroup(pid: number, exited: () => boolean, graceMs: number): Promise<void> {
  if (!_signalGroup(pid, "SIGTERM")) return;
  // SIGCONT wakes stopped processes so they can handle SIGTERM, and probes whether any is left.
  const deadline = performance.now() + graceMs;
  while (performance.now() < deadline) {
    if (exited() && !_signalGroup(pid, "SIGCONT")) return;
    await sleep(20);
  }
  _signalGroup(pid, "SIGKILL");
}

/** Signals a process group; false when the group no longer exists. */
function _signalGroup(pid: number, signal: Deno.Signal): boolean {
  try {
    Deno.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

interface _Collector {
  /** Waits up to `drainMs` for the end of the output, then stops reading and gives the text. */
  finish(drainMs: number): Promise<string>;
}

/** Reads a stream keeping only its first and last bytes, so any amount of output fits. */
function _collect(stream: ReadableStream<Uint8Array>, maxChars: number): _Collector {
  const headCap = Math.ceil(maxChars / 2);
  const tailCap = maxChars - headCap;
  const head = new Uint8Array(headCap);
  let headLength = 0;
  const tail: Uint8Array[] = [];
  let tailLength = 0;
  let total = 0;
  const reader = stream.getReader();
  const reading = (async () => {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return;
      total += value.length;
      let chunk = value;
      if (headLength < headCap) {
        const take = Math.min(headCap - headLength, chunk.length);
        head.set(chunk.subarray(0, take), headLength);
        headLength += take;
        chunk = chunk.subarray(take);
      }
      if (chunk.length === 0 || tailCap === 0) continue;
      tail.push(chunk.slice());
      tailLength += chunk.length;
      while (tail.length > 1 && tailLength - tail[0].length >= tailCap) {
        tailLength -= tail.shift()!.length;
      }
    }
  })().catch(() => {});
  return {
    async finish(drainMs) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const drained = await Promise.race([
        reading.then(() => true),
        new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), drainMs)),
      ]);
      clearTimeout(timer);
      // A process outside the group may still hold the pipe: stop waiting for its end.
      if (!drained) await reader.cancel().catch(() => {});
      await reading;
      const rest = _concat(tail, tailLength);
      const kept = rest.subarray(Math.max(0, rest.length - tailCap));
      const cut = total - headLength - kept.length;
      if (cut <= 0) return new TextDecoder().decode(_concat([head.subarray(0, headLength), kept]));
      // Decode each side on its own, dropping a character split by the cut.
      const start = new TextDecoder().decode(head.subarray(0, headLength), { stream: true });
      let skip = 0;
      while (skip < 3 && skip < kept.length && (kept[skip] & 0xc0) === 0x80) skip++;
      const end = new TextDecoder().decode(kept.subarray(skip));
      return `${start}\n\n[… ${cut + skip} bytes of output cut …]\n\n${end}`;
    },
  };
}

function _concat(chunks: readonly Uint8Array[], length?: number): Uint8Array {
  const out = new Uint8Array(length ?? chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

function _seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
