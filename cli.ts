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
import { describeCapabilities } from "./lib/capabilities.ts";
import { type CliArgs, parseCliArgs, UsageError } from "./lib/cli/args.ts";
import { type CliOutput, textRenderer } from "./lib/cli/render.ts";
import { describeWithheld, type RunSetup, setupRun, systemPromptFor } from "./lib/cli/setup.ts";
import { verboseModel } from "./lib/cli/verbose.ts";
import { DEFAULT_MAX_TURNS } from "./lib/loop.ts";
import type { Model } from "./lib/model.ts";

export type { CliOutput };
import { AgentError } from "./lib/errors.ts";
import type { RunStatus } from "./lib/events.ts";
import { parseModelSpec, PROVIDER_NAMES, readEnv, resolveModel } from "./lib/providers/resolve.ts";
import { loadSettings } from "./lib/settings.ts";
import { resolve } from "node:path";

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
  let setup: RunSetup;
  let prompt: string | undefined;
  let model: Model;
  try {
    options = parseCliArgs(args);
    if (options.version) {
      io.out(`agent ${denoJson.version}\n`);
      return 0;
    }
    if (options.help) {
      io.out(_help(await setupRun(options, io.env, "headless")));
      return 0;
    }
    const cwd = resolve(options.cwd ?? Deno.cwd());
    const { settings, warnings } = await loadSettings({ cwd, env: io.env });
    for (const warning of warnings) io.err(`agent: ${warning}\n`);
    const spec = options.model ?? io.env("AGENT_MODEL") ?? settings.model ?? DEFAULT_MODEL;
    try {
      parseModelSpec(spec, settings.providers);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    model = resolveModel(spec, {
      baseURL: options.baseURL,
      env: io.env,
      providers: settings.providers,
      models: settings.models,
      thinkingBudget: options.thinking ?? settings.thinkingBudget,
    });
    setup = await setupRun(options, io.env, "headless");
    prompt = options.prompt || (await io.readStdin())?.trim();
    if (!prompt) {
      throw new UsageError("no prompt. Pass one as an argument or on stdin; see --help.");
    }
  } catch (error) {
    if (!(error instanceof AgentError)) throw error;
    io.err(`agent: ${error.message}\n`);
    return error instanceof UsageError ? 2 : 1;
  }
  if (options.verbose) model = verboseModel(model, (line) => io.err(`${line}\n`));

  const agent = new Agent({
    model,
    tools: setup.tools,
    systemPrompt: await systemPromptFor(options, setup),
    maxTurns: options.maxTurns,
    cwd: setup.cwd,
    capabilities: setup.capabilities,
  });
  const controller = new AbortController();
  let interrupts = 0;
  const removeInterrupt = io.onInterrupt(() => {
    if (++interrupts > 1) Deno.exit(130);
    controller.abort();
  });
  const render = options.output === "text" ? textRenderer(io, { color: io.color }) : undefined;
  if (render && setup.withheld.length > 0) {
    io.err(`agent: not offered: ${describeWithheld(setup.withheld)}\n`);
  }
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
  deno run -A jsr:@x/agent [options] [prompt...]

A prompt runs one task and exits; without one, the prompt is read from stdin.

Options:
  -m, --model <provider/model>  the model (env AGENT_MODEL; default ${DEFAULT_MODEL})
      --base-url <url>          the provider's API root (for openai/… it includes /v1)
      --output <format>         text (default), json, or stream-json
      --max-turns <n>           model calls allowed (0: no limit; default ${DEFAULT_MAX_TURNS})
      --system-prompt <text>    replace the default system prompt
      --append-system-prompt <text>
                                add to the system prompt
      --tools <a,b>             offer only these tools
      --cwd <dir>               the working directory
      --add-dir <dir>           another directory files may be changed in (repeatable)
      --thinking <tokens>       extended thinking budget (Anthropic models; 0: off)
  -v, --verbose                 print each model request's size, timing and tokens
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
