/**
 * The CLI's flags, parsed with `node:util`'s `parseArgs`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { AgentError } from "../errors.ts";
import { PROVIDER_APIS, type ProviderApi } from "../providers/presets.ts";

/** How the CLI prints a run. */
export type OutputFormat = "text" | "json" | "stream-json";

/** The CLI's parsed flags. */
export interface CliArgs {
  /** `provider/model`. */
  model?: string;
  /** The provider's API root. */
  baseURL?: string;
  /** The wire protocol of the run's provider, over its own choice. */
  api?: ProviderApi;
  /** How to print the run. */
  output: OutputFormat;
  /** Model calls allowed. */
  maxTurns?: number;
  /** Replaces the default system prompt. */
  systemPrompt?: string;
  /** Added after the system prompt. */
  appendSystemPrompt?: string;
  /** The working directory. */
  cwd?: string;
  /** Only these tools (by name). */
  tools?: string[];
  /** More directories files may be changed in. */
  addDirs: string[];
  /** Print each model request's size, timing and tokens to stderr. */
  verbose: boolean;
  /** Extended thinking budget in tokens (0: off). */
  thinking?: number;
  /** Go on with the latest session of this directory. */
  continue: boolean;
  /** Go on with this session (an id or a unique prefix). */
  resume?: string;
  /** Save nothing. */
  noSession: boolean;
  /** List this directory's sessions and exit. */
  listSessions: boolean;
  /** `--sessions`: the page shown (from 1), and the sessions a page. */
  sessionsPage?: { page?: number; limit?: number };
  /** Rules that let calls through without asking. */
  allow: string[];
  /** Rules that ask first (deny in headless runs). */
  ask: string[];
  /** Rules that refuse calls. */
  deny: string[];
  /** The permission mode. */
  permissionMode?: "plan" | "default" | "accept-edits";
  /** MCP server config files. */
  mcpConfig: string[];
  /** Search the project's memory for this and exit. */
  recall?: string;
  /** Remember nothing, and offer no memories. */
  noMemory: boolean;
  /** Whether shell commands run in the sandbox. */
  sandbox?: "auto" | "required" | "off";
  /**
   * `serve`: run as an HTTP service; `acp`: an Agent Client Protocol agent on stdio, for
   * editors; `mcp`: the agent as an MCP server (stdio, or Streamable HTTP with `--port`).
   */
  command?: "serve" | "acp" | "mcp" | "memory" | "sessions";
  /** `agent sessions …`: the arguments after `sessions`, parsed by that command. */
  sessionsArgs?: string[];
  /** `agent memory …`: the arguments after `memory`, parsed by that command. */
  memoryArgs?: string[];
  /** `agent mcp login <server>` / `agent mcp logout <server>`: an MCP server's OAuth login. */
  mcpLogin?: { action: "login" | "logout"; server: string };
  /** The port to serve on (serve, mcp). */
  port?: number;
  /** The interface to serve on (serve, mcp). */
  host?: string;
  /** Runs going at once at most (serve). */
  maxRuns?: number;
  /** Show help. */
  help: boolean;
  /** Show the version. */
  version: boolean;
  /** Trust the project: its hooks, MCP servers, allow rules and default mode apply. */
  trustProject: boolean;
  /** `-p, --print`: run one task headless, even with no prompt argument (then stdin is read). */
  print: boolean;
  /** The prompt from the arguments (empty when none). */
  prompt: string;
}

/** The model used when neither `--model`, a resumed session, `AGENT_MODEL` nor the settings name one. */
export const DEFAULT_MODEL = "openai/gpt-4.1-mini";

/** The command line is wrong; the CLI exits with status 2. */
export class UsageError extends AgentError {}

const OUTPUTS: readonly OutputFormat[] = ["text", "json", "stream-json"];

/** The commands the first argument may name. */
const COMMANDS = ["serve", "acp", "mcp"] as const;

/** The CLI's options. */
const _OPTIONS = {
  model: { type: "string", short: "m" },
  "base-url": { type: "string" },
  api: { type: "string" },
  output: { type: "string" },
  "max-turns": { type: "string" },
  "system-prompt": { type: "string" },
  "append-system-prompt": { type: "string" },
  cwd: { type: "string" },
  tools: { type: "string" },
  "add-dir": { type: "string", multiple: true },
  verbose: { type: "boolean", short: "v" },
  thinking: { type: "string" },
  continue: { type: "boolean", short: "c" },
  resume: { type: "string", short: "r" },
  "no-session": { type: "boolean" },
  sessions: { type: "boolean" },
  page: { type: "string" },
  limit: { type: "string" },
  allow: { type: "string", multiple: true },
  ask: { type: "string", multiple: true },
  deny: { type: "string", multiple: true },
  "permission-mode": { type: "string" },
  "mcp-config": { type: "string", multiple: true },
  recall: { type: "string" },
  "no-memory": { type: "boolean" },
  sandbox: { type: "string" },
  port: { type: "string" },
  host: { type: "string" },
  "max-runs": { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
  print: { type: "boolean", short: "p" },
  "trust-project": { type: "boolean" },
} as const;

/**
 * A command that parses its own arguments, named by the first word after any options: those
 * options given before it (`agent --cwd x memory stats`) are passed on to it, to take or refuse.
 */
function _commandOfItsOwn(
  args: readonly string[],
): { command: "sessions" | "memory"; args: string[] } | undefined {
  let tokens;
  try {
    ({ tokens } = parseArgs({
      args: [...args],
      options: _OPTIONS,
      allowPositionals: true,
      strict: false,
      tokens: true,
    }));
  } catch {
    return undefined;
  }
  const first = tokens.find((token) => token.kind !== "option");
  if (first?.kind !== "positional") return undefined;
  const command = (["sessions", "memory"] as const).find((name) => name === first.value);
  return command && {
    command,
    args: [...args.slice(0, first.index), ...args.slice(first.index + 1)],
  };
}

/**
 * Parses the CLI's arguments.
 *
 * @example
 * ```ts
 * import { parseCliArgs } from "./args.ts";
 * const args = parseCliArgs(["-m", "openai/gpt-4.1-mini", "--output", "json", "list", "files"]);
 * if (args.prompt !== "list files" || args.output !== "json") throw new Error("unexpected");
 * ```
 */
export function parseCliArgs(args: readonly string[]): CliArgs {
  const named = _commandOfItsOwn(args);
  if (named?.command === "sessions") {
    return { ...parseCliArgs([]), command: "sessions", sessionsArgs: named.args };
  }
  if (named?.command === "memory") {
    return { ...parseCliArgs([]), command: "memory", memoryArgs: named.args };
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      strict: true,
      options: _OPTIONS,
    });
  } catch (error) {
    throw new UsageError(_parseProblem((error as Error).message));
  }
  const { values, positionals } = parsed;
  const output = values.output ?? "text";
  if (!OUTPUTS.includes(output as OutputFormat)) {
    throw new UsageError(`--output must be one of ${OUTPUTS.join(", ")}, got "${output}"`);
  }
  let maxTurns: number | undefined;
  if (values["max-turns"] !== undefined) {
    maxTurns = Number(values["max-turns"]);
    if (!Number.isInteger(maxTurns) || maxTurns < 0) {
      throw new UsageError(
        `--max-turns must be a whole number ≥ 0 (0 for no limit), got "${values["max-turns"]}"`,
      );
    }
  }
  let thinking: number | undefined;
  if (values.thinking !== undefined) {
    thinking = Number(values.thinking);
    if (!Number.isInteger(thinking) || thinking < 0) {
      throw new UsageError(
        `--thinking must be a number of tokens ≥ 0 (0 turns it off), got "${values.thinking}"`,
      );
    }
  }
  if (values.api !== undefined && !PROVIDER_APIS.includes(values.api as ProviderApi)) {
    throw new UsageError(`--api must be one of ${PROVIDER_APIS.join(", ")}, got "${values.api}"`);
  }
  const mode = values["permission-mode"];
  if (mode !== undefined && !["plan", "default", "accept-edits"].includes(mode)) {
    throw new UsageError(`--permission-mode must be plan, default or accept-edits, got "${mode}"`);
  }
  const sandbox = values.sandbox;
  if (sandbox !== undefined && !["auto", "required", "off"].includes(sandbox)) {
    throw new UsageError(`--sandbox must be auto, required or off, got "${sandbox}"`);
  }
  const command = COMMANDS.find((name) => name === positionals[0]);
  const login = command === "mcp" && (positionals[1] === "login" || positionals[1] === "logout")
    ? positionals[1]
    : undefined;
  if (login && positionals.length !== 3) {
    throw new UsageError(
      `agent mcp ${login} takes the name of one MCP server of your configuration, as in: ` +
        `agent mcp ${login} linear`,
    );
  }
  if (command && !login && positionals.length > 1) {
    throw new UsageError(
      `agent ${command} takes no prompt (got "${positionals.slice(1).join(" ")}"); to run a ` +
        `task that starts with "${command}", quote it: agent "${command} …"`,
    );
  }
  const serveFlag = ["port", "host", "max-runs"].find((name) =>
    values[name as "port"] !== undefined
  );
  if (serveFlag && command !== "serve" && !(command === "mcp" && serveFlag !== "max-runs")) {
    throw new UsageError(
      serveFlag === "max-runs"
        ? "--max-runs is an option of agent serve"
        : `--${serveFlag} is an option of agent serve and agent mcp`,
    );
  }
  const port = _whole(values.port, "--port", 0, 65535);
  const maxRuns = _whole(values["max-runs"], "--max-runs", 1, 100_000);
  const paging = ["page", "limit"].find((name) => values[name as "page"] !== undefined);
  if (paging && !values.sessions) throw new UsageError(`--${paging} is an option of --sessions`);
  if (values.continue && values.resume !== undefined) {
    throw new UsageError("--continue and --resume both pick a session: give one of them");
  }
  if (values.resume !== undefined && values.resume.trim() === "") {
    throw new UsageError("--resume needs a session id, or its first characters (see --sessions)");
  }
  return {
    model: values.model,
    thinking,
    continue: values.continue ?? false,
    resume: values.resume,
    noSession: values["no-session"] ?? false,
    listSessions: values.sessions ?? false,
    sessionsPage: paging
      ? {
        page: _whole(values.page, "--page", 1, 1_000_000),
        limit: _whole(values.limit, "--limit", 1, 1000),
      }
      : undefined,
    allow: values.allow ?? [],
    ask: values.ask ?? [],
    deny: values.deny ?? [],
    permissionMode: mode as CliArgs["permissionMode"],
    mcpConfig: values["mcp-config"] ?? [],
    recall: values.recall,
    noMemory: values["no-memory"] ?? false,
    sandbox: sandbox as CliArgs["sandbox"],
    command,
    mcpLogin: login ? { action: login, server: positionals[2] } : undefined,
    port,
    host: values.host,
    maxRuns,
    baseURL: values["base-url"],
    api: values.api as ProviderApi | undefined,
    output: output as OutputFormat,
    maxTurns,
    systemPrompt: values["system-prompt"],
    appendSystemPrompt: values["append-system-prompt"],
    cwd: values.cwd,
    tools: values.tools?.split(",").map((name) => name.trim()).filter(Boolean),
    addDirs: values["add-dir"] ?? [],
    verbose: values.verbose ?? false,
    help: values.help ?? false,
    version: values.version ?? false,
    print: values.print ?? false,
    trustProject: values["trust-project"] ?? false,
    prompt: command ? "" : positionals.join(" ").trim(),
  };
}

/**
 * The `--output` format the arguments ask for, read without parsing them all: a run whose
 * arguments are wrong still answers in the format asked for.
 *
 * @example
 * ```ts
 * import { outputOf } from "./args.ts";
 * if (outputOf(["--bad", "--output=json"]) !== "json") throw new Error("unexpected");
 * if (outputOf(["--output", "yaml"]) !== "text") throw new Error("unexpected");
 * ```
 */
export function outputOf(args: readonly string[]): OutputFormat {
  let found: string | undefined;
  args.forEach((arg, i) => {
    if (arg === "--output") found = args[i + 1];
    else if (arg.startsWith("--output=")) found = arg.slice("--output=".length);
  });
  return OUTPUTS.includes(found as OutputFormat) ? found as OutputFormat : "text";
}

/** A problem `parseArgs` found, said in this CLI's words (its own are for programmers). */
function _parseProblem(message: string): string {
  const flag = message.match(/'(?:-\w, )?(--?[\w-]+)/)?.[1] ?? "an option";
  if (/argument missing/.test(message)) return `${flag} needs a value (see --help)`;
  if (/argument is ambiguous/.test(message)) {
    return `${flag} needs a value (see --help); for one that starts with "-", write ${flag}=<value>`;
  }
  if (/does not take an argument/.test(message)) return `${flag} takes no value (see --help)`;
  if (/Unknown option/.test(message)) {
    return `Unknown option ${flag} (see --help); a prompt that starts with "-" goes after --, ` +
      `as in: agent -- "${flag} …"`;
  }
  return `${message.replace(/\.$/, "")} (see --help)`;
}

function _whole(text: string | undefined, flag: string, min: number, max: number) {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, got "${text}"`);
  }
  return value;
}
