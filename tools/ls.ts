/**
 * The `ls` tool: the entries of one directory, directories first, with sizes and symlink
 * targets.
 *
 * @module
 */

import { join, relative } from "node:path";
import { z } from "zod";
import { defineTool, type Tool, type ToolContext } from "../lib/tool.ts";
import { counted } from "./counted.ts";
import { denoFs, isNotFound, type ToolDirEntry, type ToolFs } from "./fs.ts";
import { isInside, realPathOf } from "./paths.ts";

/** What the model passes to the `ls` tool. */
export interface LsInput {
  /** The directory to list (default: the working directory). */
  path?: string;
}

/** Options of {@link createLsTool}. */
export interface LsToolOptions {
  /** The file system (default: Deno's). */
  fs?: ToolFs;
  /** The most entries shown (default 1,000); a note says how many more there are. */
  limit?: number;
}

const _parameters: z.ZodType<LsInput> = z.object({
  path: z.string().optional().describe(
    "Directory to list, relative to the working directory or absolute (default: the working directory).",
  ),
});

const _DESCRIPTION = "List the entries of one directory (not recursive). Directories come " +
  'first and end with "/"; files show their size; symbolic links end with "@" and show ' +
  'where they lead ("name@ -> target"). Lists hidden files too; entries the permission ' +
  "rules refuse to read are left out. Use it to see what a " +
  "directory holds; use glob to find files by name across directories.";

interface _Entry {
  name: string;
  isDirectory: boolean;
  line: string;
}

/**
 * Creates the `ls` tool.
 *
 * @example
 * ```ts
 * import { memoryFs } from "../lib/testing/memory_fs.ts";
 * import { createLsTool } from "./ls.ts";
 * const fs = memoryFs();
 * fs.put("/w/b.txt", "hello");
 * fs.put("/w/a/c.txt", "");
 * const ls = createLsTool({ fs });
 * const context = { cwd: "/w", signal: new AbortController().signal, toolCallId: "1" };
 * const result = await ls.execute({}, context);
 * const output = typeof result === "string" ? result : result.output;
 * if (output !== "a/\nb.txt  5 B") throw new Error(output);
 * ```
 */
export function createLsTool(options: LsToolOptions = {}): Tool<LsInput> {
  const { fs = denoFs, limit = 1_000 } = options;
  return defineTool({
    name: "ls",
    description: _DESCRIPTION,
    parameters: _parameters,
    capabilities: ["read"],
    async execute(input, ctx) {
      const path = input.path ?? ".";
      const dir = await realPathOf(fs, ctx.cwd, path);
      const info = await fs.stat(dir).catch((error) => {
        if (!isNotFound(error)) throw error;
        throw new Error(
          `"${path}" does not exist (looked for ${dir}). Check the path, or list its parent directory.`,
        );
      });
      if (!info.isDirectory) {
        throw new Error(
          `"${path}" is a file, not a directory: use the read tool to see its content.`,
        );
      }

      const found: ToolDirEntry[] = [];
      let refused = 0;
      for await (const entry of fs.readDir(dir)) {
        ctx.signal.throwIfAborted();
        if (ctx.checkPath && await _refused(fs, dir, entry, ctx.checkPath)) refused++;
        else found.push(entry);
      }
      // Directories first (a symlink counts as what it leads to), each group by name.
      const entries = await Promise.all(found.map((entry) => _describe(fs, dir, entry)));
      entries.sort((a, b) =>
        a.isDirectory !== b.isDirectory
          ? (a.isDirectory ? -1 : 1)
          : a.name < b.name
          ? -1
          : a.name > b.name
          ? 1
          : 0
      );
      const note = refused
        ? `(${counted(refused, "entry", "entries")} hidden: the permission rules refuse ` +
          `reading ${refused === 1 ? "it" : "them"})`
        : "";
      if (!entries.length) {
        const output = note ? note : "(empty directory)";
        return { output, display: "0 entries", ...(refused ? { metadata: { refused } } : {}) };
      }
      const lines = entries.slice(0, limit).map((entry) => entry.line);
      if (entries.length > limit) {
        lines.push(
          `… ${counted(entries.length - limit, "more entry", "more entries")} ` +
            `(${entries.length} in all); ` +
            "use glob to find specific files",
        );
      }
      if (note) lines.push(note);
      return {
        output: lines.join("\n"),
        display: counted(entries.length, "entry", "entries"),
        metadata: refused ? { entries: entries.length, refused } : { entries: entries.length },
      };
    },
  });
}

/** Whether the rules refuse reading an entry (a symlink by where it leads). */
async function _refused(
  fs: ToolFs,
  dir: string,
  entry: ToolDirEntry,
  checkPath: NonNullable<ToolContext["checkPath"]>,
): Promise<boolean> {
  const path = join(dir, entry.name);
  const real = entry.isSymlink ? await fs.realPath(path).catch(() => path) : path;
  return checkPath(real, "read") !== undefined ||
    (real !== path && checkPath(path, "read") !== undefined);
}

/** One entry's line: `dir/`, `file  1.2 KB`, `link@ -> target` (with `/` for a directory). */
async function _describe(fs: ToolFs, dir: string, entry: ToolDirEntry): Promise<_Entry> {
  const path = join(dir, entry.name);
  if (entry.isDirectory) return { name: entry.name, isDirectory: true, line: `${entry.name}/` };
  if (!entry.isSymlink) {
    const size = await fs.lstat(path).then((info) => _size(info.size), () => "");
    return { name: entry.name, isDirectory: false, line: `${entry.name}${size && `  ${size}`}` };
  }
  try {
    const target = await fs.realPath(path);
    const info = await fs.stat(target);
    const shown = isInside(target, dir) ? relative(dir, target) : target;
    return {
      name: entry.name,
      isDirectory: info.isDirectory,
      line: `${entry.name}@ -> ${shown}${info.isDirectory ? "/" : `  ${_size(info.size)}`}`,
    };
  } catch {
    return { name: entry.name, isDirectory: false, line: `${entry.name}@ -> (broken link)` };
  }
}

/** A size for people: `512 B`, `1.2 KB`, `3.4 MB`, `1.1 GB`. */
function _size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}
