/**
 * What a CLI run works with: the working directory and workspace roots, what Deno grants, the
 * tools offered, and the system prompt.
 *
 * @module
 */

import { resolve } from "node:path";
import {
  CAPABILITY_FLAGS,
  type CapabilityStates,
  offerTools,
  queryCapabilities,
  type SessionMode,
  type WithheldTool,
} from "./capabilities.ts";
import { defaultSystemPrompt, findInstructions, withInstructions } from "./system_prompt.ts";
import type { Tool } from "../tool.ts";
import { type BashToolOptions, builtinTools, type ToolFs } from "../../tools/mod.ts";
import { type CliArgs, UsageError } from "./args.ts";

/** The environment of a CLI run. */
export interface Workspace {
  /** The working directory, absolute. */
  cwd: string;
  /** Where files may be changed: the working directory and each `--add-dir`. */
  roots: string[];
  /** What Deno grants. */
  capabilities: CapabilityStates;
  /** The tools offered to the model. */
  tools: Tool[];
  /** The tools left out, and why. */
  withheld: WithheldTool[];
}

/**
 * Works out the run's environment from the flags and Deno's permissions; `extra` tools (an MCP
 * server's) are offered as they are, `bash` configures the shell tool (its sandbox) and `fs` is the
 * file tools' file system (default Deno's). Throws a
 * {@link UsageError} for a working directory that does not exist or an unknown tool name.
 *
 * @example
 * ```ts
 * import { parseCliArgs } from "./args.ts";
 * import { openWorkspace } from "./workspace.ts";
 * const setup = await openWorkspace(parseCliArgs(["--tools", "read,grep", "x"]), () => undefined, "headless");
 * if (setup.tools.some((tool) => !["read", "grep"].includes(tool.name))) throw new Error("unexpected");
 * ```
 */
export async function openWorkspace(
  args: CliArgs,
  env: (name: string) => string | undefined,
  mode: SessionMode,
  extra: readonly Tool[] = [],
  bash?: BashToolOptions,
  fs?: ToolFs,
): Promise<Workspace> {
  const roots = workspaceRoots(args);
  const cwd = roots[0];
  for (const dir of args.cwd ? roots : roots.slice(1)) await _assertDirectory(dir);
  const all = builtinTools({ roots, env, bash, fs });
  if (args.tools) {
    const known = new Set([...all, ...extra].map((tool) => tool.name));
    const unknown = args.tools.filter((name) => !known.has(name));
    if (unknown.length > 0) {
      throw new UsageError(
        `Unknown tool ${unknown.map((name) => `"${name}"`).join(", ")} in --tools. ` +
          `Available tools: ${[...known].join(", ")}`,
      );
    }
  }
  const chosen = args.tools ? all.filter((tool) => args.tools!.includes(tool.name)) : all;
  const capabilities = await queryCapabilities(cwd);
  const { offered, withheld } = offerTools(chosen, capabilities, mode);
  // Extra tools (MCP servers') were already checked against Deno when their servers started.
  const extras = args.tools ? extra.filter((tool) => args.tools!.includes(tool.name)) : extra;
  return { cwd, roots, capabilities, tools: [...offered, ...extras], withheld };
}

/**
 * The workspace roots, absolute: the working directory (`--cwd`, or Deno's), then each `--add-dir`.
 *
 * @example
 * ```ts
 * import { parseCliArgs } from "./args.ts";
 * import { workspaceRoots } from "./workspace.ts";
 * const roots = workspaceRoots(parseCliArgs(["--cwd", "/w", "--add-dir", "../lib"]));
 * if (roots.join() !== "/w,/lib") throw new Error(roots.join());
 * ```
 */
export function workspaceRoots(args: Pick<CliArgs, "cwd" | "addDirs">): string[] {
  const cwd = resolve(args.cwd ?? Deno.cwd());
  return [cwd, ...args.addDirs.map((dir) => resolve(cwd, dir))];
}

/**
 * The system prompt for a run: `--system-prompt` or the default (environment and project
 * instructions), then `--append-system-prompt`. `warn` says which instructions files were left
 * out, and why.
 *
 * @example
 * ```ts
 * import { systemPromptFor } from "./workspace.ts";
 * const setup = {
 *   cwd: "/w",
 *   roots: ["/w"],
 *   capabilities: { read: "granted", write: "granted", run: "granted", net: "granted", env: "granted" } as const,
 *   tools: [],
 *   withheld: [],
 * };
 * const prompt = await systemPromptFor({ systemPrompt: "Be brief.", appendSystemPrompt: "In French." }, setup);
 * if (prompt !== "Be brief.\n\nIn French.") throw new Error("unexpected");
 * ```
 */
export async function systemPromptFor(
  args: Pick<CliArgs, "systemPrompt" | "appendSystemPrompt">,
  setup: Workspace,
  warn?: (text: string) => void,
): Promise<string> {
  const base = args.systemPrompt ?? withInstructions(
    defaultSystemPrompt({
      cwd: setup.cwd,
      capabilities: setup.capabilities,
      tools: setup.tools.map((tool) => tool.name),
      extraRoots: setup.roots.slice(1),
    }),
    await findInstructions(setup.cwd, { warn }),
    setup.cwd,
  );
  return args.appendSystemPrompt ? `${base}\n\n${args.appendSystemPrompt}` : base;
}

/**
 * Says which tools were left out and which flag would bring each back.
 *
 * @example
 * ```ts
 * import { describeWithheld } from "./workspace.ts";
 * const text = describeWithheld([{ name: "write", capability: "write", state: "prompt" }]);
 * if (!text.includes("--allow-write")) throw new Error("unexpected");
 * ```
 */
export function describeWithheld(withheld: readonly WithheldTool[]): string {
  const byCapability = new Map<string, string[]>();
  for (const { name, capability, state } of withheld) {
    const key = `${capability}${state === "denied" ? " (denied)" : ""}`;
    byCapability.set(key, [...(byCapability.get(key) ?? []), name]);
  }
  return [...byCapability].map(([key, names]) => {
    const capability = key.split(" ")[0] as keyof typeof CAPABILITY_FLAGS;
    const how = key.endsWith("(denied)")
      ? `${capability} is denied`
      : `grant with ${CAPABILITY_FLAGS[capability]}`;
    return `${names.join(", ")} (${how})`;
  }).join("; ");
}

async function _assertDirectory(dir: string): Promise<void> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(dir);
  } catch (error) {
    throw new UsageError(`Cannot use directory ${dir}: ${(error as Error).message}`);
  }
  if (!info.isDirectory) throw new UsageError(`${dir} is not a directory`);
}
