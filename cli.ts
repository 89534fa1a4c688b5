/**
 * The `agent` command line: parse flags, build the agent, run it, print its events, and map
 * how the run ended to an exit code.
 *
 * ```
 * deno run -A jsr:@x/agent "summarize README.md"
 * ```
 *
 * @module
 */

import denoJson from "./deno.json" with { type: "json" };
import { describeCapabilities } from "./lib/capabilities.ts";
import { type CliArgs, parseCliArgs, UsageError } from "./lib/cli/args.ts";
import { type HeadlessIo, runHeadless } from "./lib/cli/headless.ts";
import { DEFAULT_MODEL, prepare, type Prepared } from "./lib/cli/prepare.ts";
import type { CliOutput } from "./lib/cli/render.ts";
import { describeWithheld, type RunSetup, setupRun } from "./lib/cli/setup.ts";
import { AgentError } from "./lib/errors.ts";
import type { RunStatus } from "./lib/events.ts";
import { DEFAULT_MAX_TURNS } from "./lib/loop.ts";
import { inputHistory } from "./lib/interactive/history.ts";
import { PROVIDER_NAMES, readEnv } from "./lib/providers/resolve.ts";

export type { CliOutput, HeadlessIo };

export { DEFAULT_MODEL };

/** The exit code for each way a run ends. */
export const EXIT_CODES: Readonly<Record<RunStatus, number>> = {
  success: 0,
  error: 1,
  max_turns: 3,
  aborted: 130,
};

/** What the CLI reads and writes; tests pass their own. */
export interface CliIo extends HeadlessIo {
  /** The piped standard input, or `undefined` when stdin is a terminal. */
  readStdin(): Promise<string | undefined>;
  /** Reads an environment variable. */
  env(name: string): string | undefined;
  /** Whether stdin is a terminal: no prompt then starts an interactive session. */
  interactive?: boolean;
}

/**
 * Runs the CLI with `args` and resolves to the exit code.
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
export async function main(args: readonly string[], io: CliIo = denoIo()): Promise<number> {
  let options: CliArgs;
  let prepared: Prepared;
  let prompt: string | undefined;
  try {
    options = parseCliArgs(args);
    if (options.version) {
      io.out(`agent ${denoJson.version}\n`);
      return 0;
    }
    if (options.help) {
      io.out(_help(await setupRun(options, io.env, io.interactive ? "interactive" : "headless")));
      return 0;
    }
    // No prompt on a terminal: an interactive session; no prompt otherwise: read stdin.
    const listing = options.listSessions || options.recall !== undefined ||
      options.command === "serve";
    const interactive = !options.prompt && io.interactive === true && !listing;
    if (!interactive && !listing) {
      prompt = options.prompt || (await io.readStdin())?.trim();
      if (!prompt) {
        throw new UsageError("no prompt. Pass one as an argument or on stdin; see --help.");
      }
    }
    prepared = await prepare(options, {
      env: io.env,
      warn: (text) => io.err(`agent: ${text}\n`),
      log: (text) => io.err(`${text}\n`),
      interactive,
    });
  } catch (error) {
    if (!(error instanceof AgentError)) throw error;
    io.err(`agent: ${error.message}\n`);
    return error instanceof UsageError ? 2 : 1;
  }
  try {
    return await _dispatch(options, prepared, prompt, io);
  } finally {
    await prepared.close();
  }
}

async function _dispatch(
  options: CliArgs,
  prepared: Prepared,
  prompt: string | undefined,
  io: CliIo,
): Promise<number> {
  if (options.command === "serve") {
    const { runServe } = await import("./lib/cli/serve.ts");
    return await runServe(options, prepared, io);
  }
  if (options.listSessions) return await _listSessions(prepared, io);
  if (options.recall !== undefined) return await _recall(prepared, options.recall, io);
  if (prompt === undefined) {
    const { runInteractive } = await import("./lib/interactive/session.ts");
    const history = prepared.dataDir
      ? inputHistory(`${prepared.dataDir}/history`)
      : { lines: [], remember: () => {} };
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
    });
  }
  return EXIT_CODES[await runHeadless(prompt, options, prepared, io)];
}

async function _listSessions(prepared: Prepared, io: CliIo): Promise<number> {
  if (!prepared.store) {
    io.err("agent: sessions are not available in this run\n");
    return 1;
  }
  const sessions = await prepared.store.list(prepared.cwd);
  if (sessions.length === 0) io.out(`No saved sessions in ${prepared.cwd}.\n`);
  for (const info of sessions) {
    io.out(
      `${info.id}  ${info.updated.slice(0, 16).replace("T", " ")}  ${info.messages} messages  ` +
        `${info.model}  ${info.title}\n`,
    );
  }
  return 0;
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

function _help(setup: RunSetup): string {
  const offered = setup.tools.map((tool) => tool.name).join(", ") || "none";
  const withheld = setup.withheld.length
    ? `\n  not offered:  ${describeWithheld(setup.withheld)}`
    : "";
  return `${HELP}
Here (${setup.cwd}), Deno grants:
  ${describeCapabilities(setup.capabilities)}
  tools offered: ${offered}${withheld}
`;
}

const HELP = `agent ${denoJson.version}: an LLM agent for the terminal

Usage:
  agent [options] [prompt...]
  agent serve [--port <n>] [--host <addr>] [--max-runs <n>] [options]
  deno run -A jsr:@x/agent [options] [prompt...]

A prompt runs one task and exits. Without one, on a terminal, an interactive session starts;
otherwise the prompt is read from stdin. Sessions are saved under ~/.local/share/agent.

Options:
  -m, --model <provider/model>  the model (env AGENT_MODEL; default ${DEFAULT_MODEL})
      --base-url <url>          the provider's API root (for openai/… it includes /v1)
      --output <format>         text (default), json, or stream-json
      --max-turns <n>           model calls allowed (0: no limit; default ${DEFAULT_MAX_TURNS})
      --system-prompt <text>    replace the default system prompt
      --append-system-prompt <text>
                                add to the system prompt
  -c, --continue                go on with the latest session of this directory
  -r, --resume <id>             go on with a saved session (an id or its first characters)
      --sessions                list this directory's saved sessions
      --recall <query>          search this project's memory of earlier work, and exit
      --no-memory               remember nothing and offer no memories
      --no-session              save nothing
      --allow <rule>            let matching calls through, e.g. "bash(git *)" (repeatable)
      --ask <rule>              ask before matching calls (refused in headless runs)
      --deny <rule>             refuse matching calls, e.g. "bash(rm *)", "write(secrets/**)"
      --permission-mode <mode>  plan (look and propose), default, or accept-edits
      --mcp-config <file>       MCP servers (also read: .mcp.json); repeatable
      --sandbox <mode>          run shell commands in bubblewrap: auto (when installed;
                                the default), required (refuse without it), or off
      --tools <a,b>             offer only these tools
      --cwd <dir>               the working directory
      --add-dir <dir>           another directory files may be changed in (repeatable)
      --thinking <tokens>       extended thinking budget (Anthropic models; 0: off)
  -v, --verbose                 print each model request's size, timing and tokens
      --port <n>                serve: the port (default 8787; 0 picks a free one)
      --host <addr>             serve: the interface (default 127.0.0.1; others need
                                AGENT_SERVE_TOKEN, the bearer token clients send)
      --max-runs <n>            serve: runs going at once at most (default 16; then 429)
  -h, --help                    show this help
  -V, --version                 show the version

Tools are offered when Deno grants what they need: read, ls, glob, grep need --allow-read;
write, edit --allow-write; bash --allow-run; fetch and web_search --allow-net (web_search also
TAVILY_API_KEY or BRAVE_API_KEY). So --allow-read=. with --allow-net=<provider host> makes a
read-only agent.

Providers: ${PROVIDER_NAMES.join(", ")}, and your own in ~/.config/agent/settings.json.
Keys come from each provider's env var (OPENAI_API_KEY, ANTHROPIC_API_KEY, DEEPSEEK_API_KEY, …);
local servers (ollama, lmstudio, vllm, llamacpp) need none.
Exit codes: 0 success · 1 error · 2 usage error · 3 max turns reached · 130 interrupted.
`;

/** The CLI's input and output on the real process. */
export function denoIo(): CliIo {
  return {
    out: (text) => _writeAll(Deno.stdout, text),
    err: (text) => _writeAll(Deno.stderr, text),
    async readStdin() {
      if (Deno.stdin.isTerminal()) return undefined;
      return await new Response(Deno.stdin.readable).text();
    },
    env: readEnv,
    interactive: Deno.stdin.isTerminal(),
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
