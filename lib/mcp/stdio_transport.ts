/**
 * An MCP stdio transport on `Deno.Command`: the server runs in its own process group with a
 * clean environment, its stderr is kept (the last few KB) instead of flooding the terminal, and
 * closing it ends the whole process tree (stdin closed, then SIGTERM, then SIGKILL).
 *
 * The SDK's own `StdioClientTransport` reads `process.env`, which makes Deno ask for `--allow-env`,
 * and cannot stop grandchildren (`npx` → `node`); this one does neither.
 *
 * With `sandbox`, the server runs inside bubblewrap (`sandboxArgs`): bwrap leads the process
 * group, and when it is killed or the server exits, the kernel ends the whole sandbox.
 *
 * @module
 */

import type { Transport } from "@modelcontextprotocol/sdk/shared/transport";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types";
import { loadLazy } from "../lazy/load.ts";
import { prepareSandbox } from "../sandbox/bubblewrap.ts";
import { filesIdle } from "../sandbox/running.ts";

/** How to start the server. */
export interface _StdioParams {
  command: string;
  args: string[];
  /** The whole environment of the server: nothing else is inherited. */
  env: Record<string, string>;
  /** The directory it runs in (default: the agent's). */
  cwd?: string;
  /** How long the server gets to exit after stdin closes, and again after SIGTERM (default 500 ms). */
  graceMs?: number;
  /** How many bytes of stderr to keep (default 8 KiB). */
  stderrBytes?: number;
  /** Runs the server inside bubblewrap, with `env` as given. */
  sandbox?: _StdioSandbox;
  /**
   * Hears, once a sandboxed server has ended, what it left behind that the sandbox undid or
   * found (see `checkLeftovers` of `prepareSandbox`).
   */
  onLeftover?(text: string): void;
}

/** The sandbox of a stdio server (see `sandboxArgs`). */
export interface _StdioSandbox {
  /** The `bwrap` to run. */
  bwrap: string;
  /** The directories it may write. */
  writable: string[];
  /** Whether it keeps the network. */
  net: boolean;
  /** More paths to hide. */
  hide?: string[];
}

/** A stdio transport, and what it knows about its process. */
export interface _StdioTransport extends Transport {
  /** The server's process id, once started. */
  readonly pid: number | undefined;
  /** The end of what the server wrote to stderr. */
  stderrTail(): string;
  /** How the process ended (`exited with code 1`, `killed by SIGKILL`), once it has. */
  exitReason(): string | undefined;
}

/** A message line longer than this is refused, so that a broken server cannot eat the memory. */
const _MAX_LINE = 64 * 1024 * 1024;

/** For a sandboxed server: settled once what its sandbox left behind has been checked. */
const _checked = new WeakMap<Deno.ChildProcess, Promise<void>>();

/** Creates the transport; `start()` spawns the server. */
export function _stdioTransport(params: _StdioParams): _StdioTransport {
  const graceMs = params.graceMs ?? 500;
  const stderr = _tail(params.stderrBytes ?? 8192);
  let child: Deno.ChildProcess | undefined;
  let writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  let status: Deno.CommandStatus | undefined;
  let exited: Promise<Deno.CommandStatus> | undefined;
  let reading: Promise<void> = Promise.resolve();
  let closing: Promise<void> | undefined;
  let closed = false;
  const encoder = new TextEncoder();

  const transport: _StdioTransport = {
    get pid() {
      return child?.pid;
    },
    stderrTail: () => stderr.text(),
    exitReason: () => status && _describeStatus(status),

    async start() {
      if (child) throw new Error("The stdio transport is already started");
      const { JSONRPCMessageSchema } = await loadLazy("mcp_sdk");
      child = await _spawn(params);
      writer = child.stdin.getWriter();
      writer.closed.catch(() => {}); // a dead server's stdin errors; send() reports it
      reading = Promise.all([
        _readLines(child.stdout, (line) => {
          let message: JSONRPCMessage;
          try {
            message = JSONRPCMessageSchema.parse(JSON.parse(line));
          } catch {
            transport.onerror?.(
              new Error(`The server wrote a line that is not JSON-RPC: ${line.slice(0, 200)}`),
            );
            return;
          }
          transport.onmessage?.(message);
        }),
        _readAll(child.stderr, stderr.push),
      ]).then(() => {});
      const pid = child.pid;
      exited = child.status.then(async (value) => {
        status = value;
        _signalGroup(pid, "SIGKILL"); // what the server left behind is of no use to anyone
        writer?.abort().catch(() => {});
        await _within(reading, 200);
        finish();
        return value;
      });
    },

    async send(message) {
      if (!writer || status || closing) throw new Error("Not connected");
      await writer.write(encoder.encode(`${JSON.stringify(message)}\n`));
    },

    close() {
      closing ??= (async () => {
        if (!child || !exited) return finish();
        const pid = child.pid;
        // A server that no longer reads its stdin would hold a flush forever.
        if (writer) await _within(writer.close(), graceMs);
        if (!await _within(exited, graceMs)) {
          _signalGroup(pid, "SIGTERM") || _signal(child, "SIGTERM");
          if (!await _within(exited, graceMs)) {
            _signalGroup(pid, "SIGKILL") || _signal(child, "SIGKILL");
          }
        }
        await exited;
        await _checked.get(child);
      })();
      return closing;
    },
  };

  function finish(): void {
    if (closed) return;
    closed = true;
    transport.onclose?.();
  }

  return transport;
}

async function _spawn(params: _StdioParams): Promise<Deno.ChildProcess> {
  const sandbox = params.sandbox;
  // No sandbox starts while an editor acts on a path the file tools checked.
  if (sandbox) await filesIdle();
  // In the sandbox, bwrap is the process group's leader: killing it ends the whole namespace.
  const prepared = sandbox
    ? prepareSandbox({
      ...sandbox,
      command: [params.command, ...params.args],
      cwd: params.cwd ?? Deno.cwd(),
      home: params.env.HOME,
      kind: "server",
    })
    : undefined;
  const [program, args] = sandbox && prepared
    ? [sandbox.bwrap, prepared.args]
    : [params.command, params.args];
  try {
    const child = new Deno.Command(program, {
      args,
      cwd: params.cwd,
      env: params.env,
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      detached: true, // its own process group, so that close() can end the whole tree
    }).spawn();
    // What the sandbox put in place of absent protected files goes once bwrap has exited and
    // what it left of the sandbox is killed.
    if (prepared) {
      const checked = child.status.finally(async () => {
        _signalGroup(child.pid, "SIGKILL");
        prepared.release();
        // What it left in git's index that would run code outside the sandbox is undone.
        for (const leftover of await prepared.checkLeftovers()) params.onLeftover?.(leftover.text);
      });
      _checked.set(child, checked.then(() => {}, () => {}));
    }
    return child;
  } catch (error) {
    prepared?.release();
    if (error instanceof Deno.errors.NotCapable) {
      throw new Error(
        `Deno does not allow running "${program}": allow it with --allow-run`,
        { cause: error },
      );
    }
    if (error instanceof Deno.errors.NotFound) {
      const cwdExists = params.cwd === undefined ||
        await Deno.stat(params.cwd).then((info) => info.isDirectory, () => false);
      throw new Error(
        !cwdExists
          ? `the directory ${params.cwd} does not exist: fix "cwd" in the MCP config`
          : sandbox
          ? `bubblewrap (${sandbox.bwrap}) not found: install it (apt-get install bubblewrap)`
          : `command "${params.command}" not found: install it or fix "command" in the MCP config`,
        { cause: error },
      );
    }
    throw new Error(`cannot run "${params.command}": ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** Calls `onLine` with each line of the stream, without its line break. */
async function _readLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for await (const chunk of stream) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n")) !== -1) {
        const line = buffer.slice(0, end).replace(/\r$/, "");
        buffer = buffer.slice(end + 1);
        if (line.trim() !== "") onLine(line);
      }
      if (buffer.length > _MAX_LINE) buffer = "";
    }
  } catch {
    // The pipe broke: the process is gone, which its status reports.
  }
}

async function _readAll(
  stream: ReadableStream<Uint8Array>,
  onChunk: (chunk: Uint8Array) => void,
): Promise<void> {
  try {
    for await (const chunk of stream) onChunk(chunk);
  } catch {
    // As above.
  }
}

/** Keeps the last `max` bytes pushed into it. */
function _tail(max: number): { push(chunk: Uint8Array): void; text(): string } {
  let chunks: Uint8Array[] = [];
  let size = 0;
  return {
    push(chunk) {
      chunks.push(chunk.slice(Math.max(0, chunk.length - max)));
      size += Math.min(chunk.length, max);
      while (size - chunks[0].length >= max) size -= chunks.shift()!.length;
    },
    text() {
      const all = new Uint8Array(size);
      let offset = 0;
      for (const chunk of chunks) {
        all.set(chunk, offset);
        offset += chunk.length;
      }
      chunks = [all];
      return new TextDecoder().decode(all.subarray(Math.max(0, size - max))).trim();
    },
  };
}

function _describeStatus(status: Deno.CommandStatus): string {
  return status.signal ? `killed by ${status.signal}` : `exited with code ${status.code}`;
}

/** Whether `promise` settles within `ms`. */
async function _within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const settled = await Promise.race([
    promise.then(() => true, () => true),
    new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms)),
  ]);
  clearTimeout(timer);
  return settled;
}

/**
 * Signals a process group; false when there is no such group (or no groups, on Windows), or
 * when Deno does not already grant all of `run`, which `Deno.kill` needs: the server's own
 * handle is signalled then, and Deno never asks for more than it asked to start the server.
 */
function _signalGroup(pid: number, signal: Deno.Signal): boolean {
  if (Deno.permissions.querySync({ name: "run" }).state !== "granted") return false;
  try {
    Deno.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

function _signal(child: Deno.ChildProcess, signal: Deno.Signal): void {
  try {
    child.kill(signal);
  } catch {
    // Already gone.
  }
}
