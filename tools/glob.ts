/**
 * The `glob` tool: finds files by name pattern (`**\/*.ts`, `src/*.{ts,js}`), respecting
 * `.gitignore`, sorted by path.
 *
 * @module
 */

import { isAbsolute, join, posix } from "node:path";
import { z } from "zod";
import { defineTool, type Tool } from "../lib/tool.ts";
import { denoFs, isNotFound, type ToolFs } from "./fs.ts";
import { loadPicomatch } from "../lib/files/glob_match.ts";
import { realPathOf } from "./paths.ts";
import { counted } from "./counted.ts";
import { displayPrefix, joinDisplay, walk } from "./walk.ts";

/** What the model passes to the `glob` tool. */
export interface GlobInput {
  /** A glob pattern, relative to `path`. */
  pattern: string;
  /** The directory to search (default: the working directory). */
  path?: string;
}

/** Options of {@link createGlobTool}. */
export interface GlobToolOptions {
  /** The file system (default: Deno's). */
  fs?: ToolFs;
  /** The most paths returned (default 1,000); a note says how many more matched. */
  limit?: number;
}

const _parameters: z.ZodType<GlobInput> = z.object({
  pattern: z.string().min(1).describe(
    'Glob pattern relative to `path`, e.g. "**/*.ts" (any depth), "src/*.{ts,js}" (directly ' +
      'in src), "**/test_*.py". "*" stays within one directory; "**/" spans directories.',
  ),
  path: z.string().optional().describe(
    "Directory to search, relative to the working directory (default: the working directory).",
  ),
});

const _DESCRIPTION = 'Find files by name with a glob pattern, e.g. "**/*.ts" or ' +
  '"src/**/*.{ts,tsx}". Use it to discover files before reading them. A pattern matches ' +
  'paths relative to `path`: "*.ts" finds only the top-level .ts files, "**/*.ts" those at ' +
  'any depth. Hidden files and directories (names starting with ".") match only when the ' +
  'pattern names the dot (".env", "**/.github/**"). Files that .gitignore excludes, .git ' +
  "and files the permission rules refuse to read are skipped. Returns file paths (not " +
  "directories) relative to the working directory, " +
  "sorted by path, at most 1,000 with a note of how many more matched.";

/**
 * Creates the `glob` tool.
 *
 * @example
 * ```ts
 * import { memoryFs } from "../lib/testing/memory_fs.ts";
 * import { createGlobTool } from "./glob.ts";
 * const fs = memoryFs();
 * fs.put("/w/src/a.ts", "");
 * fs.put("/w/src/b.js", "");
 * const glob = createGlobTool({ fs });
 * const context = { cwd: "/w", signal: new AbortController().signal, toolCallId: "1" };
 * const result = await glob.execute({ pattern: "**\/*.ts" }, context);
 * const output = typeof result === "string" ? result : result.output;
 * if (output !== "src/a.ts") throw new Error(output);
 * ```
 */
export function createGlobTool(options: GlobToolOptions = {}): Tool<GlobInput> {
  const { fs = denoFs, limit = 1_000 } = options;
  return defineTool({
    name: "glob",
    // Not toLocaleString: loading the locale data would cost more than the whole tool.
    description: _DESCRIPTION.replace("1,000", String(limit).replace(/\B(?=(\d{3})+$)/g, ",")),
    parameters: _parameters,
    capabilities: ["read"],
    async execute(input, ctx) {
      const path = input.path ?? ".";
      let root = await realPathOf(fs, ctx.cwd, path);
      const info = await fs.stat(root).catch((error) => {
        if (!isNotFound(error)) throw error;
        throw new Error(
          `"${path}" does not exist (looked for ${root}). Check the path, or search its parent directory.`,
        );
      });
      if (!info.isDirectory) {
        throw new Error(
          `"${path}" is a file, not a directory: pass the directory to search as path and the ` +
            "file name pattern as pattern.",
        );
      }

      // Walk only below the pattern's fixed leading directories; when they leave the root
      // (an absolute pattern, or "../"), search from there instead.
      let pattern = input.pattern.replace(/^(\.\/)+/, "");
      const picomatch = await loadPicomatch();
      const scan = picomatch.scan(pattern);
      let start = scan.isGlob ? scan.base : posix.dirname(pattern);
      if (start === ".") start = "";
      if (isAbsolute(pattern) || start.split("/").includes("..")) {
        root = await realPathOf(fs, root, start);
        pattern = scan.isGlob ? scan.glob : posix.basename(pattern);
        start = "";
      }
      const exists = await fs.stat(join(root, ...start.split("/"))).then(
        (found) => found.isDirectory,
        () => false,
      );
      const prefix = await displayPrefix(fs, ctx.cwd, root);

      const matcher = picomatch(pattern, { dot: false });
      const paths: string[] = [];
      let total = 0;
      let refused = 0;
      if (exists) {
        const walked = walk(root, {
          fs,
          signal: ctx.signal,
          start,
          checkPath: ctx.checkPath,
          onRefused: () => refused++,
        });
        for await (const entry of walked) {
          if (!matcher(entry.path)) continue;
          if (++total <= limit) paths.push(joinDisplay(prefix, entry.path));
        }
      }
      const note = refused
        ? `(${counted(refused, "path")} left out: the permission rules refuse reading ` +
          `${refused === 1 ? "it" : "them"})`
        : "";
      if (!total) {
        const where = prefix ? `"${prefix}"` : "the working directory";
        const hint = pattern.includes("/")
          ? ""
          : ` (to search all directories, use "**/${pattern}")`;
        return {
          output: `No files match "${input.pattern}" in ${where}${hint}.${note && `\n${note}`}`,
          display: "no files",
          metadata: refused ? { files: 0, refused } : { files: 0 },
        };
      }
      if (total > limit) {
        const more = total - limit;
        paths.push(`… ${more} more file${more === 1 ? "" : "s"}; narrow the pattern or the path`);
      }
      if (note) paths.push(note);
      return {
        output: paths.join("\n"),
        display: `${total} file${total === 1 ? "" : "s"}`,
        metadata: refused ? { files: total, refused } : { files: total },
      };
    },
  });
}
