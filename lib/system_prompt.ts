/**
 * The default system prompt: the environment the agent works in, the capabilities Deno grants,
 * the tools offered, and the project's own instructions (`AGENTS.md`, or `CLAUDE.md` where a
 * directory has no `AGENTS.md`) from the working directory up to the repository root.
 *
 * @module
 */

import { dirname, join, relative } from "node:path";
import type { CapabilityStates } from "./capabilities.ts";

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
 * ancestor with `.git`) down to `cwd`, `AGENTS.md`, or `CLAUDE.md` where there is no
 * `AGENTS.md`. Outside a repository only `cwd` is searched. Files the runtime does not let the
 * agent read are skipped.
 *
 * @example
 * ```ts
 * import { findInstructions } from "./system_prompt.ts";
 * const files = await findInstructions(Deno.cwd());
 * if (!Array.isArray(files)) throw new Error("unexpected");
 * ```
 */
export async function findInstructions(cwd: string): Promise<InstructionsFile[]> {
  const chain: string[] = [];
  let root: string | undefined;
  for (let dir = cwd;; dir = dirname(dir)) {
    chain.push(dir);
    if (await _exists(join(dir, ".git"))) {
      root = dir;
      break;
    }
    if (dirname(dir) === dir) break;
  }
  const dirs = root === undefined ? [cwd] : chain.reverse();
  const files: InstructionsFile[] = [];
  for (const dir of dirs) {
    for (const name of INSTRUCTION_NAMES) {
      const content = await _read(join(dir, name));
      if (content === undefined) continue;
      files.push({ path: join(dir, name), content });
      break;
    }
  }
  return files;
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

/** Whether Deno already lets the agent read `path` (never asking the user). */
function _readable(path: string): boolean {
  return Deno.permissions.querySync({ name: "read", path }).state === "granted";
}

async function _exists(path: string): Promise<boolean> {
  if (!_readable(path)) return false;
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

async function _read(path: string): Promise<string | undefined> {
  if (!_readable(path)) return undefined;
  try {
    const info = await Deno.stat(path);
    if (!info.isFile) return undefined;
    const bytes = await Deno.readFile(path);
    const text = new TextDecoder().decode(bytes.subarray(0, MAX_INSTRUCTIONS_BYTES));
    return bytes.length > MAX_INSTRUCTIONS_BYTES ? `${text}\n[… cut at 64 KiB]` : text;
  } catch {
    return undefined;
  }
}
