/**
 * The default system prompt: the environment the agent works in, the capabilities Deno grants,
 * the tools offered, and the project's own instructions (`AGENTS.md`, or `CLAUDE.md` where a
 * directory has no `AGENTS.md`) from the working directory up to the repository root — the user's
 * own files only: another user's instructions never reach the prompt.
 *
 * @module
 */

import { dirname, join, relative } from "node:path";
import type { CapabilityStates } from "./capabilities.ts";
import { readOwnFileSync, repositoryRoot } from "../files/own_files.ts";

/** What the default system prompt describes. */
export interface PromptEnvironment {
  /** The working directory. */
  cwd: string;
  /** The operating system (default `Deno.build.os`). */
  os?: string;
  /** Today's date (default now). */
  date?: Date;
  /** What Deno grants. */
  capabilities: CapabilityStates;
  /** The tools offered. */
  tools: readonly string[];
  /** Directories besides the working directory that files may be changed in. */
  extraRoots?: readonly string[];
}

/** A project instructions file. */
export interface InstructionsFile {
  /** Its path. */
  path: string;
  /** Its text. */
  content: string;
}

const INSTRUCTION_NAMES = ["AGENTS.md", "CLAUDE.md"] as const;
const MAX_INSTRUCTIONS_BYTES = 64 * 1024;

/**
 * The default system prompt for an environment.
 *
 * @example
 * ```ts
 * import { defaultSystemPrompt } from "./system_prompt.ts";
 * const prompt = defaultSystemPrompt({
 *   cwd: "/work",
 *   os: "linux",
 *   date: new Date("2026-01-02T00:00:00Z"),
 *   capabilities: { read: "granted", write: "denied", run: "denied", net: "denied", env: "granted" },
 *   tools: ["read", "grep"],
 * });
 * if (!prompt.includes("- Working directory: /work") || !prompt.includes("2026-01-02")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function defaultSystemPrompt(env: PromptEnvironment): string {
  const granted = Object.entries(env.capabilities)
    .filter(([, state]) => state === "granted").map(([name]) => name);
  const missing = Object.entries(env.capabilities)
    .filter(([, state]) => state !== "granted").map(([name]) => name);
  const roots = [env.cwd, ...(env.extraRoots ?? [])];
  return `You are an autonomous coding agent working in a terminal. You act with the tools you ` +
    `are given, then report briefly what you did.

# Environment
- Working directory: ${env.cwd}${
      roots.length > 1 ? ` (files may also be changed in ${roots.slice(1).join(", ")})` : ""
    }
- Operating system: ${env.os ?? Deno.build.os}
- Date: ${(env.date ?? new Date()).toISOString().slice(0, 10)}
- Capabilities granted by the runtime: ${granted.join(", ") || "none"}${
      missing.length ? `; not granted: ${missing.join(", ")}` : ""
    }
- Tools: ${env.tools.join(", ") || "none"}

# How to work
- Use the tools to find out and to act; do not guess at file contents or describe changes ` +
    `you could make yourself.
- Look before you change: search with grep and glob, read files before editing them, and ` +
    `make the smallest change that does the task.
- Paths are relative to the working directory. Files outside the workspace cannot be changed.
- When a tool fails, read the error and change your approach; never repeat the same failing ` +
    `call.
- If the task needs a capability you were not granted, say which one, and the Deno flag that ` +
    `grants it (e.g. --allow-write).
- Keep the final answer short: what you did, what you found, and anything left to do.`;
}

/**
 * Finds the project's instructions: in each directory from the repository root (the nearest
 * ancestor with a `.git` of the user's own) down to `cwd`, `AGENTS.md`, or `CLAUDE.md` where there
 * is no `AGENTS.md` to take. Outside a repository only `cwd` is searched. Only the user's own
 * files count (see `readOwnFileSync`): one another user owns, that others may write, or in a
 * directory others may write is left out, and `warn` says so (a `.git` left out is said by the
 * project's files, see `readProjectFiles`). Files the runtime does not let the agent read are
 * skipped.
 *
 * @example
 * ```ts
 * import { findInstructions } from "./system_prompt.ts";
 * const files = await findInstructions(Deno.cwd());
 * if (!Array.isArray(files)) throw new Error("unexpected");
 * ```
 */
export function findInstructions(
  cwd: string,
  options: {
    /** Says why an instructions file was found but left out. */
    warn?: (text: string) => void;
  } = {},
): Promise<InstructionsFile[]> {
  const root = repositoryRoot(cwd);
  const dirs: string[] = [];
  for (let dir = cwd; root !== undefined; dir = dirname(dir)) {
    dirs.unshift(dir);
    if (dir === root || dirname(dir) === dir) break;
  }
  const files: InstructionsFile[] = [];
  for (const dir of root === undefined ? [cwd] : dirs) {
    for (const name of INSTRUCTION_NAMES) {
      const path = join(dir, name);
      const bytes = readOwnFileSync(path, {
        upTo: root ?? cwd,
        warn: options.warn,
        maxBytes: MAX_INSTRUCTIONS_BYTES + 1,
      });
      if (bytes === undefined) continue;
      const text = new TextDecoder().decode(bytes.subarray(0, MAX_INSTRUCTIONS_BYTES));
      const content = bytes.length > MAX_INSTRUCTIONS_BYTES ? `${text}\n[… cut at 64 KiB]` : text;
      files.push({ path, content });
      break;
    }
  }
  return Promise.resolve(files);
}

/**
 * The system prompt with the project's instructions appended.
 *
 * @example
 * ```ts
 * import { withInstructions } from "./system_prompt.ts";
 * const prompt = withInstructions("Base.", [{ path: "/w/AGENTS.md", content: "Use tabs." }], "/w");
 * if (!prompt.includes("## AGENTS.md\nUse tabs.")) throw new Error("unexpected");
 * ```
 */
export function withInstructions(
  prompt: string,
  files: readonly InstructionsFile[],
  cwd: string,
): string {
  if (files.length === 0) return prompt;
  const sections = files.map((file) =>
    `## ${relative(cwd, file.path) || file.path}\n${file.content.trim()}`
  );
  return `${prompt}\n\n# Project instructions\nFollow these instructions from the project; ` +
    `deeper files refine the ones above them.\n\n${sections.join("\n\n")}`;
}

/** The most of one server's instructions the prompt takes. */
const MAX_MCP_INSTRUCTIONS_CHARS = 4 * 1024;

/**
 * The system prompt with what each MCP server that started says about how to use it (the
 * `instructions` of its `initialize` answer), under a heading that names the server: at most
 * 4 KiB each, with `redact` applied (the run's secrets out). Servers that did not start add
 * nothing.
 *
 * @example
 * ```ts
 * import { withMcpInstructions } from "./system_prompt.ts";
 * const prompt = withMcpInstructions("Base.", [
 *   { name: "docs", state: "connected", instructions: "Search before you fetch." },
 *   { name: "down", state: "failed", instructions: "Never shown." },
 * ]);
 * if (!prompt.includes('## MCP server "docs"\nSearch before you fetch.')) throw new Error(prompt);
 * if (prompt.includes("Never shown")) throw new Error(prompt);
 * ```
 */
export function withMcpInstructions(
  prompt: string,
  servers: readonly { name: string; state: string; instructions?: string }[],
  redact: (text: string) => string = (text) => text,
): string {
  const sections: string[] = [];
  for (const { name, state, instructions } of servers) {
    const text = instructions?.trim();
    if (state !== "connected" || !text) continue;
    const cut = text.length > MAX_MCP_INSTRUCTIONS_CHARS
      ? `${text.slice(0, MAX_MCP_INSTRUCTIONS_CHARS)}\n[… cut at 4 KiB]`
      : text;
    sections.push(`## MCP server "${name}"\n${redact(cut)}`);
  }
  if (sections.length === 0) return prompt;
  return `${prompt}\n\n# MCP server instructions\nWhat the MCP servers whose tools you have say ` +
    `about how to use them.\n\n${sections.join("\n\n")}`;
}
