/**
 * `agent mcp`: the agent as an MCP server, for other agents (Claude Code, Codex, …) to hand it
 * tasks as a tool. On stdio by default, where stdout carries the protocol alone and everything
 * else goes to stderr; with `--port`, Streamable HTTP at `/mcp` (`./mcp_server_http.ts`). Its
 * tools (`./mcp_server_tools.ts`) run each task as a headless CLI run of the server's flags
 * (`./mcp_server_tasks.ts`). The configuration is checked once at start, so that a bad flag or
 * a missing key stops it with a clear message and the CLI's exit code. It serves until the
 * client goes away (stdin ends) or Ctrl+C, which cancels the tasks going, their sessions kept.
 *
 * @module
 */

import process from "node:process";
import type { CliArgs } from "./args.ts";
import { UsageError } from "./args.ts";
import { loadLazy } from "../lazy/load.ts";
import { isLoopback, newServiceToken } from "../service/auth.ts";
import type { Redactor } from "../session/mod.ts";
import type { HeadlessIo } from "./headless.ts";
import { prepare } from "./prepare.ts";
import { mcpTasks } from "./mcp_server_tasks.ts";
import { redactingToo, serveMcpHttp } from "./mcp_server_http.ts";
import { mcpToolServer } from "./mcp_server_tools.ts";
import { describeWithheld } from "./workspace.ts";

/** What `agent mcp` writes to and reads. */
export type McpServerIo = HeadlessIo & {
  /** Reads an environment variable. */
  env(name: string): string | undefined;
  /** Redacts what is written to stderr from now on with `redact` (the CLI's output does). */
  redactWith?(redact: (text: string) => string): void;
};

/**
 * Serves MCP until the client goes away or Ctrl+C; resolves to the exit code. A bad flag throws
 * a `UsageError`, a bad configuration (a missing key) a `ConfigError`, as any CLI run does.
 *
 * @example
 * ```ts
 * import { parseCliArgs } from "./args.ts";
 * import { runMcpServer } from "./mcp_server.ts";
 * const refused = await runMcpServer(parseCliArgs(["mcp", "--continue"]), {
 *   out: () => {},
 *   err: () => {},
 *   env: () => undefined,
 *   color: false,
 *   onInterrupt: () => () => {},
 * }).catch((error) => error);
 * if (!(refused instanceof Error) || !refused.message.includes("continue_task")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export async function runMcpServer(options: CliArgs, io: McpServerIo): Promise<number> {
  _checkFlags(options);
  const http = options.port !== undefined;
  const host = options.host ?? "127.0.0.1";
  const given = io.env("AGENT_SERVE_TOKEN")?.trim() || undefined;
  if (http && !given && !isLoopback(host)) {
    io.err(
      `agent: serving on ${host} reaches other machines, so it needs a token: set ` +
        `AGENT_SERVE_TOKEN (e.g. AGENT_SERVE_TOKEN=$(openssl rand -hex 32)) and have clients ` +
        `send Authorization: Bearer <token>\n`,
    );
    return 2;
  }
  // The SDK loads while the configuration is checked.
  const loading = loadLazy("mcp_server_sdk");
  loading.catch(() => {});
  const checked = await _checkConfiguration(options, io);
  // The model's transport loads before the first task needs it (the OpenAI SDK for all but
  // Anthropic's API).
  if (!checked.modelSpec.startsWith("anthropic/")) loadLazy("openai_sdk").catch(() => {});
  if (http && !given && !checked.dataDir) {
    io.err(
      "agent: agent mcp --port needs a token and has nowhere to keep one for you alone: set " +
        "AGENT_SERVE_TOKEN (e.g. AGENT_SERVE_TOKEN=$(openssl rand -hex 32)) and have clients " +
        "send Authorization: Bearer <token>, or give it a data directory (AGENT_DATA_DIR or " +
        "HOME, that Deno lets it write)\n",
    );
    return 2;
  }
  const token = http ? given ?? newServiceToken() : undefined;
  const redact = token ? redactingToo(checked.redact, token) : checked.redact;
  io.redactWith?.(redact);
  const tasks = mcpTasks(options, {
    env: io.env,
    log: (text) => io.err(`${text}\n`),
    redact,
    redactRun: token ? (run) => redactingToo(run, token) : undefined,
  });
  const sdk = await loading;
  if (token) {
    return await serveMcpHttp(sdk, tasks, {
      host,
      port: options.port!,
      token,
      keepTokenIn: given ? undefined : checked.dataDir,
      what: checked.modelSpec,
    }, io);
  }
  return await _serveStdio(sdk, tasks, io, checked.modelSpec);
}

/** The flags of a single run, which the server's tasks take as their arguments instead. */
function _checkFlags(options: CliArgs): void {
  const wrong = options.continue
    ? "--continue"
    : options.resume !== undefined
    ? "--resume"
    : options.print
    ? "--print"
    : options.listSessions
    ? "--sessions"
    : options.recall !== undefined
    ? "--recall"
    : options.output !== "text"
    ? "--output"
    : undefined;
  if (wrong) {
    throw new UsageError(
      `${wrong} is not an option of agent mcp: its callers pick sessions with the ` +
        "continue_task tool and get structured results from each tool call",
    );
  }
  if (options.host !== undefined && options.port === undefined) {
    throw new UsageError("agent mcp --host serves over HTTP: give --port too (0 picks a free one)");
  }
}

/** What the start found: the configuration works, and what the server needs of it. */
interface _Checked {
  redact: Redactor;
  dataDir?: string;
  modelSpec: string;
}

/**
 * Prepares a run of the server's flags once, as every task will be, so that what would fail
 * each of them (a bad flag or setting, a missing key) fails the start instead; its warnings are
 * said now, once. What it opened is closed again: each task prepares its own run.
 */
async function _checkConfiguration(options: CliArgs, io: McpServerIo): Promise<_Checked> {
  const prepared = await prepare({ ...options, noMemory: true }, {
    env: io.env,
    warn: (text) => io.err(`agent: ${text}\n`),
    log: (text) => io.err(`${text}\n`),
    interactive: false,
    onRedactor: (redact) => io.redactWith?.(redact),
  });
  try {
    const { setup } = prepared;
    io.err(
      `agent: tools of its tasks in ${setup.cwd}: ` +
        `${setup.tools.map((tool) => tool.name).join(", ") || "none"}` +
        (setup.withheld.length ? `; not offered: ${describeWithheld(setup.withheld)}` : "") +
        "\n",
    );
    return { redact: prepared.redact, dataDir: prepared.dataDir, modelSpec: prepared.modelSpec };
  } finally {
    await prepared.close();
  }
}

/** Serves on stdin and stdout until stdin ends or Ctrl+C; resolves to 0. */
async function _serveStdio(
  sdk: Awaited<ReturnType<typeof loadLazy<"mcp_server_sdk">>>,
  tasks: ReturnType<typeof mcpTasks>,
  io: McpServerIo,
  modelSpec: string,
): Promise<number> {
  const server = mcpToolServer(sdk, tasks);
  const transport = new sdk.StdioServerTransport();
  const ended = Promise.withResolvers<string>();
  const onEnd = () => ended.resolve("the client went away");
  process.stdin.on("end", onEnd);
  process.stdin.on("close", onEnd);
  // A client that stops reading (EPIPE) is gone too: nothing more can reach it.
  process.stdout.on("error", onEnd);
  transport.onclose = onEnd;
  let interrupts = 0;
  const removeInterrupt = io.onInterrupt(() => {
    if (++interrupts > 1) Deno.exit(130);
    ended.resolve("interrupted");
  });
  try {
    await server.connect(transport);
    io.err(`agent: serving MCP (${modelSpec}) on stdio\n`);
    const why = await ended.promise;
    const running = tasks.running;
    io.err(
      `agent: stopping (${why})` +
        (running ? `: cancelling ${running} task${running > 1 ? "s" : ""}` : "") + "\n",
    );
    // The tasks end as aborted, their sessions kept, and answer if the client still listens.
    await tasks.stop();
  } finally {
    removeInterrupt();
    process.stdin.off("end", onEnd);
    process.stdin.off("close", onEnd);
    // What is still written to a stdout that is gone fails there, not as an uncaught error.
    process.stdout.on("error", () => {});
    process.stdout.off("error", onEnd);
    await server.close().catch(() => {});
  }
  return 0;
}
