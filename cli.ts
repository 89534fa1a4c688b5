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
import { Agent } from "./lib/agent.ts";
import { type CliArgs, parseCliArgs, UsageError } from "./lib/cli/args.ts";
import { type CliOutput, textRenderer } from "./lib/cli/render.ts";

export type { CliOutput };
import { AgentError } from "./lib/errors.ts";
import type { RunStatus } from "./lib/events.ts";
import { readEnv, resolveModel } from "./lib/providers/resolve.ts";

/** The model used when neither `--model` nor `AGENT_MODEL` names one. */
export const DEFAULT_MODEL = "openai/gpt-4.1-mini";

/** The exit code for each way a run ends. */
export const EXIT_CODES: Readonly<Record<RunStatus, number>> = {
  success: 0,
  error: 1,
  max_turns: 3,
  aborted: 130,
};

/** What the CLI reads and writes; tests pass their own. */
export interface CliIo extends CliOutput {
  /** The piped standard input, or `undefined` when stdin is a terminal. */
  readStdin(): Promise<string | undefined>;
  /** Reads an environment variable. */
  env(name: string): string | undefined;
  /** Whether stderr takes ANSI colours. */
  color: boolean;
  /** Registers a Ctrl+C handler; returns a function that removes it. */
  onInterrupt(handler: () => void): () => void;
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
  try {
    options = parseCliArgs(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`agent: ${error.message}\n`);
    return 2;
  }
  if (options.help) {
    io.out(HELP);
    return 0;
  }
  if (options.version) {
    io.out(`agent ${denoJson.version}\n`);
    return 0;
  }
  const prompt = options.prompt || (await io.readStdin())?.trim();
  if (!prompt) {
    io.err(`agent: no prompt. Pass one as an argument or on stdin; see --help.\n`);
    return 2;
  }

  let agent: Agent;
  try {
    const model = resolveModel(options.model ?? io.env("AGENT_MODEL") ?? DEFAULT_MODEL, {
      baseURL: options.baseURL,
      env: io.env,
    });
    agent = new Agent({
      model,
      systemPrompt: [options.systemPrompt ?? SYSTEM_PROMPT, options.appendSystemPrompt]
        .filter(Boolean).join("\n\n"),
      maxTurns: options.maxTurns,
      cwd: options.cwd,
    });
  } catch (error) {
    if (!(error instanceof AgentError)) throw error;
    io.err(`agent: ${error.message}\n`);
    return 1;
  }

  const controller = new AbortController();
  let interrupts = 0;
  const removeInterrupt = io.onInterrupt(() => {
    if (++interrupts > 1) Deno.exit(130);
    controller.abort();
  });
  const render = options.output === "text" ? textRenderer(io, { color: io.color }) : undefined;
  try {
    const events = agent.stream(prompt, { signal: controller.signal });
    let step = await events.next();
    while (!step.done) {
      const event = step.value;
      if (render) render(event);
      else if (options.output === "stream-json") io.out(`${JSON.stringify(event)}\n`);
      else if (event.type === "result") io.out(`${JSON.stringify(event)}\n`);
      step = await events.next();
    }
    return EXIT_CODES[step.value.status];
  } finally {
    removeInterrupt();
  }
}

const SYSTEM_PROMPT = "You are a capable, careful assistant working in a terminal. Answer " +
  "concisely. When tools are available, use them to act rather than describing what you would do.";

const HELP = `agent ${denoJson.version}: an LLM agent for the terminal

Usage:
  agent [options] [prompt...]
  deno run -A jsr:@x/agent [options] [prompt...]

A prompt runs one task and exits; without one, the prompt is read from stdin.

Options:
  -m, --model <provider/model>  the model (env AGENT_MODEL; default ${DEFAULT_MODEL})
      --base-url <url>          the provider's API root (for openai/… it includes /v1)
      --output <format>         text (default), json, or stream-json
      --max-turns <n>           model calls allowed (0: no limit)
      --system-prompt <text>    replace the system prompt
      --append-system-prompt <text>
                                add to the system prompt
      --cwd <dir>               the working directory
  -h, --help                    show this help
  -V, --version                 show the version

Keys: OPENAI_API_KEY (and OPENAI_BASE_URL) for openai/… models.
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
