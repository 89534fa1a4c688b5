/**
 * The `agent` command line: parse flags, build the agent, run it, print its events, and map
 * how the run ended to an exit code.
 *
 * ```
 * deno run -A jsr:@x/agent "summarize README.md"
 * ```
 *
 * {@link main} runs it from a program of your own, with the I/O it is given.
 *
 * @example
 * ```ts
 * import { main } from "@x/agent/cli";
 *
 * let out = "";
 * const code = await main(["--version"], {
 *   out: (text) => out += text,
 *   err: () => {},
 *   readStdin: () => Promise.resolve(undefined),
 *   env: () => undefined,
 *   color: false,
 *   onInterrupt: () => () => {},
 * });
 * if (code !== 0 || !out.startsWith("agent ")) throw new Error("unexpected");
 * ```
 *
 * @module
 */

import denoJson from "./deno.json" with { type: "json" };
import { type CliArgs, DEFAULT_MODEL, outputOf, parseCliArgs, UsageError } from "./lib/cli/args.ts";
import type { HeadlessIo } from "./lib/cli/headless.ts";
import type { Prepared } from "./lib/cli/prepare.ts";
import type { InteractiveOptions } from "./lib/cli/terminal/interactive.ts";
import { type RedactedOutput, redactedOutput } from "./lib/cli/redacted_output.ts";
import type { CliOutput } from "./lib/cli/render.ts";
import { runSecrets } from "./lib/cli/secrets.ts";
import { AgentError, describeError } from "./lib/errors.ts";
import { loadLazy } from "./lib/lazy/load.ts";
import type { RunStatus } from "./lib/events.ts";
import { readStdin, STDIN_WAIT_MS } from "./lib/cli/stdin.ts";
import { terminalText } from "./lib/cli/terminal_text.ts";
import type { TrustAnswer, TrustRequest } from "./lib/cli/trust.ts";
import { readEnv } from "./lib/providers/resolve.ts";

export type { CliOutput, HeadlessIo, TrustAnswer, TrustRequest };

export { DEFAULT_MODEL, STDIN_WAIT_MS };

/** The exit code for each way a run ends. */
export const EXIT_CODES: Readonly<Record<RunStatus, number>> = {
  success: 0,
  error: 1,
  max_turns: 3,
  aborted: 130,
};

/** What the CLI reads and writes; tests pass their own. */
export interface CliIo extends HeadlessIo {
  /**
   * The piped standard input, or `undefined` when stdin is a terminal. With `optional` (a prompt
   * was given as an argument), only a pipe, a socket or a file is read, and one that gives nothing
   * for {@link STDIN_WAIT_MS} is left alone, so that a program that starts the agent without
   * closing its stdin does not wait forever.
   */
  readStdin(options?: { optional?: boolean }): Promise<string | undefined>;
  /** Reads an environment variable. */
  env(name: string): string | undefined;
  /** Whether stdin is a terminal: no prompt then starts an interactive session. */
  interactive?: boolean;
  /** Asks on the terminal whether to trust the project (the terminal session only). */
  askTrust?: (request: TrustRequest) => Promise<TrustAnswer>;
}

/**
 * Runs the CLI with `args` and resolves to the exit code. What it writes goes through the
 * run's redactor (before that is built, one of the environment's secrets): every line on
 * stderr, and on stdout every JSON line and the answer printed for a program; only the answer
 * streamed to a terminal is left as it is.
 *
 * @example
 * ```ts
 * import { main } from "./cli.ts";
 * let out = "";
 * const code = await main(["--version"], {
 *   out: (text) => out += text,
 *   err: () => {},
 *   readStdin: () => Promise.resolve(undefined),
 *   env: () => undefined,
 *   color: false,
 *   onInterrupt: () => () => {},
 * });
 * if (code !== 0 || !out.startsWith("agent ")) throw new Error("unexpected");
 * ```
 */
export async function main(args: readonly string[], given: CliIo = denoIo()): Promise<number> {
  const started = performance.now();
  const output = outputOf(args);
  const io = redactedOutput(given, {
    redact: runSecrets(given.env, {}),
    stdout: output !== "text" ? "json" : given.outIsTerminal ? "terminal" : "text",
  });
  try {
    return await _main(args, io);
  } catch (error) {
    // The reader of stdout went away (`agent --help | head -1`): nothing more to say.
    if (error instanceof Deno.errors.BrokenPipe) return 0;
    const code = error instanceof UsageError ? 2 : 1;
    // A program reading JSON gets one result that says what went wrong, whatever it was.
    if (output !== "text") {
      const failed = {
        type: "result",
        status: "error",
        text: "",
        turns: 0,
        toolCalls: 0,
        usage: { inputTokens: 0, outputTokens: 0 },
        durationMs: Math.round(performance.now() - started),
        error: describeError(error),
      };
      try {
        io.out(`${JSON.stringify(failed)}\n`);
      } catch {
        // stdout is gone too: stderr says it.
      }
    }
    if (!(error instanceof AgentError)) {
      // A fault of the program: said as Deno would, without the run's secrets.
      io.err(
        `agent: ${
          terminalText(error instanceof Error ? error.stack ?? error.message : String(error))
        }\n`,
      );
      return code;
    }
    io.err(`agent: ${terminalText(error.message)}\n`);
    return code;
  }
}

async function _main(args: readonly string[], io: CliIo & RedactedOutput): Promise<number> {
  const options = parseCliArgs(args);
  if (options.version) {
    io.out(`agent ${denoJson.version}\n`);
    return 0;
  }
  if (options.help) {
    const { helpText } = await import("./lib/cli/help.ts");
    io.out(await helpText(options, io.env, io.interactive ? "interactive" : "headless"));
    return 0;
  }
  // The protocol servers speak on stdio and prepare a run for each session or task they get.
  if (options.command === "acp") {
    const { runAcp } = await import("./lib/cli/acp/agent.ts");
    return await runAcp(options, io);
  }
  if (options.mcpLogin) {
    const { runMcpLogin } = await import("./lib/cli/mcp_login.ts");
    return await runMcpLogin(options, options.mcpLogin, io);
  }
  if (options.command === "sessions") {
    const { runSessionsCommand } = await import("./lib/cli/sessions_command.ts");
    return await runSessionsCommand(options.sessionsArgs ?? [], io);
  }
  if (options.command === "mcp") {
    const { runMcpServer } = await import("./lib/cli/mcp_server.ts");
    return await runMcpServer(options, io);
  }
  if (options.command === "memory") {
    const { runMemoryCommand } = await import("./lib/cli/memory_command.ts");
    return await runMemoryCommand(options.memoryArgs ?? [], io);
  }
  _loadTransport(options, io.env);
  // No prompt on a terminal: an interactive session (unless -p); no prompt otherwise: read stdin.
  const listing = options.listSessions || options.recall !== undefined ||
    options.command === "serve";
  const interactive = !options.prompt && !options.print && io.interactive === true && !listing;
  let prompt: string | undefined;
  if (!interactive && !listing) prompt = await _prompt(options.prompt, io);
  // What a run needs loads once it is known to be a run (not --version or --help).
  const { prepare } = await import("./lib/cli/prepare.ts");
  // The terminal session asks the user what an MCP server asks for, once it has started.
  const elicitation: InteractiveElicitation = {};
  const prepared = await prepare(options, {
    env: io.env,
    warn: (text) => io.err(`agent: ${terminalText(text)}\n`),
    log: (text) => io.err(`${terminalText(text)}\n`),
    interactive,
    // Only the terminal session asks whether to trust the project; other runs go on without.
    askTrust: interactive ? io.askTrust : undefined,
    onElicitation: interactive
      ? (server, request) =>
        elicitation.ask?.(server, request) ?? Promise.resolve({ action: "cancel" })
      : undefined,
    onRedactor: (redact) => io.redactWith(redact),
  });
  try {
    return await _dispatch(options, prepared, prompt, io, elicitation);
  } finally {
    await prepared.close();
  }
}

/**
 * Starts loading the OpenAI SDK, the transport of every provider but Anthropic's, so that it
 * loads while stdin is read and the run is set up; the model takes the same module when it
 * makes its client. Not for a command that calls no model, nor for a model named Anthropic's.
 */
function _loadTransport(options: CliArgs, env: (name: string) => string | undefined): void {
  if (options.command || options.listSessions || options.recall !== undefined) return;
  const spec = options.model ?? env("AGENT_MODEL");
  if (spec?.startsWith("anthropic/")) return;
  loadLazy("openai_sdk").catch(() => {});
}

/**
 * The task of a headless run: the prompt argument, after what was piped to stdin (as context,
 * in a `<stdin>` block that keeps it apart from what the user asked), or stdin alone.
 */
async function _prompt(argument: string, io: CliIo): Promise<string> {
  const piped = (await io.readStdin(argument ? { optional: true } : {}))?.trim();
  const prompt = argument && piped
    ? `<stdin>\n${piped}\n</stdin>\n\n${argument}`
    : argument || piped;
  if (!prompt) {
    throw new UsageError("no prompt: give one as an argument or on stdin (see --help)");
  }
  return prompt;
}

/** Where the terminal session puts its way of asking what an MCP server asks for. */
type InteractiveElicitation = NonNullable<InteractiveOptions["elicitation"]>;

async function _dispatch(
  options: CliArgs,
  prepared: Prepared,
  prompt: string | undefined,
  io: CliIo,
  elicitation?: InteractiveElicitation,
): Promise<number> {
  if (options.command === "serve") {
    const { runServe } = await import("./lib/cli/serve.ts");
    return await runServe(options, prepared, io);
  }
  if (options.listSessions) {
    const { listSessions } = await import("./lib/cli/sessions_command.ts");
    const { store, cwd, command } = prepared;
    return await listSessions(store, cwd, options.sessionsPage ?? {}, command, io);
  }
  if (options.recall !== undefined) return await _recall(prepared, options.recall, io);
  if (prompt === undefined) {
    const { runInteractive } = await import("./lib/cli/terminal/interactive.ts");
    const { inputHistory } = await import("./lib/cli/terminal/history.ts");
    const kept = prepared.dataDir
      ? inputHistory(`${prepared.dataDir}/history`, { redact: prepared.redact })
      : { lines: [], remember: () => {} };
    // `--no-session` writes nothing: earlier input is there to recall, this session's is not kept.
    const history = options.noSession ? { lines: kept.lines, remember: () => {} } : kept;
    return await runInteractive({
      ...prepared,
      history: history.lines,
      remember: history.remember,
      tools: prepared.setup.tools,
      withheld: prepared.setup.withheld,
      capabilities: prepared.setup.capabilities,
      sandbox: prepared.sandbox,
      roots: prepared.setup.roots,
      recallTool: !options.tools || options.tools.includes("recall"),
      maxTurns: options.maxTurns,
      color: io.color,
      elicitation,
    });
  }
  const { runHeadless } = await import("./lib/cli/headless.ts");
  return EXIT_CODES[await runHeadless(prompt, options, prepared, io)];
}

async function _recall(prepared: Prepared, query: string, io: CliIo): Promise<number> {
  if (!prepared.memory) {
    io.err("agent: the memory is not available in this run (see the warnings above)\n");
    return 1;
  }
  const found = await prepared.memory.retrieve(query, { limit: 10 });
  if (found.length === 0) io.out(`Nothing in this project's memory matches "${query}".\n`);
  for (const segment of found) {
    const { anchor } = segment;
    io.out(
      `${anchor.runLoopId}#${anchor.segment}  ${anchor.type}  ${anchor.timestamp.slice(0, 16)}  ` +
        `${segment.relevance.toFixed(2)}\n  ${segment.text.replace(/\s+/g, " ").slice(0, 300)}\n`,
    );
  }
  return 0;
}

/** The CLI's input and output on the real process. */
export function denoIo(): CliIo {
  const err = (text: string) => _writeAll(Deno.stderr, text);
  return {
    out: (text) => _writeAll(Deno.stdout, text),
    err: (text) => {
      try {
        err(text);
      } catch (error) {
        // Nobody reads stderr any more: what it would have said is lost, nothing else is.
        if (!(error instanceof Deno.errors.BrokenPipe)) throw error;
      }
    },
    readStdin: (options) => readStdin(options?.optional ?? false, err),
    env: readEnv,
    interactive: Deno.stdin.isTerminal(),
    askTrust: async (request) => (await import("./lib/cli/trust.ts")).askTrustOnTerminal(request),
    outIsTerminal: Deno.stdout.isTerminal(),
    color: Deno.stderr.isTerminal() && !readEnv("NO_COLOR"),
    onInterrupt(handler) {
      Deno.addSignalListener("SIGINT", handler);
      return () => Deno.removeSignalListener("SIGINT", handler);
    },
  };
}

const encoder = new TextEncoder();

function _writeAll(stream: { writeSync(bytes: Uint8Array): number }, text: string): void {
  let bytes = encoder.encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(stream.writeSync(bytes));
}

// `deno run -A cli.ts …` runs the command line as the package's main module does.
if (import.meta.main) Deno.exit(await main(Deno.args));
