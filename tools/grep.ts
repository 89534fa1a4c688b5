/**
 * The `grep` tool: searches file contents with a JavaScript regular expression, respecting
 * `.gitignore`, skipping binary and very large files.
 *
 * Patterns are searched in time linear in the text (see `regex.ts`), so that no pattern or
 * file can hold the agent. Each file is searched as a whole with one regular expression; only files that match are
 * looked at line by line, and line numbers are counted only for the lines printed, so most of
 * the work stays inside the regular expression engine. Results come out in path order. On a
 * 50 MB tree it runs within 2× of `grep -rn` (see `bench/grep.ts`).
 *
 * @module
 */

import { z } from "zod";
import { yieldToEvents } from "../lib/async.ts";
import { defineTool, type Tool } from "../lib/tool.ts";
import { denoFs, isNotFound, type ToolFs } from "./fs.ts";
import { realPathOf } from "./paths.ts";
import { loadPicomatch } from "../lib/files/glob_match.ts";
import { counted } from "./counted.ts";
import { format, matchLines } from "./grep_lines.ts";
import { compileGrepPattern, type GrepPattern, type TextMatcher } from "./regex.ts";
import { displayPrefix, joinDisplay, walk } from "./walk.ts";

/** What the model passes to the `grep` tool. */
export interface GrepInput {
  /** A JavaScript regular expression. */
  pattern: string;
  /** A file or directory to search (default: the working directory). */
  path?: string;
  /** Only files whose path matches this glob. */
  glob?: string;
  /** Match letters in any case. */
  ignore_case?: boolean;
  /** Lines of context before and after each match (content mode). */
  context?: number;
  /** What to print (default `"content"`). */
  output_mode?: "content" | "files" | "count";
  /** The most matching lines (content) or files (files, count) to print (default 200). */
  limit?: number;
}

/** Options of {@link createGrepTool}. */
export interface GrepToolOptions {
  /** The file system (default: Deno's). */
  fs?: ToolFs;
  /** Files larger than this many bytes are skipped (default 20 MB). */
  maxFileSize?: number;
  /** How many files of a file system other than Deno's are read at once (default 16). */
  concurrency?: number;
}

const _parameters: z.ZodType<GrepInput> = z.object({
  pattern: z.string().min(1).describe(
    "JavaScript regular expression to search for, e.g. `function\\s+load` or `TODO|FIXME`. " +
      "Escape ( ) [ ] { } . * + ? | \\ with a backslash to match them literally. As in ripgrep, " +
      "backreferences (\\1) and lookaheads (?=…) are not supported.",
  ),
  path: z.string().optional().describe(
    "File or directory to search, relative to the working directory (default: the working directory).",
  ),
  glob: z.string().optional().describe(
    'Only search files matching this glob, e.g. "*.ts" or "src/**/*.{ts,tsx}". A glob without ' +
      '"/" matches file names in any directory; one with "/" matches paths relative to `path`.',
  ),
  ignore_case: z.boolean().optional().describe("Match letters in either case (default false)."),
  context: z.number().int().min(0).max(50).optional().describe(
    "Lines to show before and after each matching line, in content mode (default 0).",
  ),
  output_mode: z.enum(["content", "files", "count"]).optional().describe(
    '"content" (default): matching lines as path:line:text; "files": paths of matching files; ' +
      '"count": path:number of matching lines.',
  ),
  limit: z.number().int().min(1).optional().describe(
    "The most matching lines (content) or files (files, count) to return (default 200).",
  ),
});

const _DESCRIPTION =
  "Search file contents with a regular expression, across a directory tree or in one file. " +
  "Use it to find where something is defined, used or mentioned; prefer it to running grep or " +
  "rg in a shell. Files that .gitignore excludes, .git, binary files, files over 20 MB and " +
  "files the permission rules refuse to read are skipped. Results are sorted by path, with " +
  "paths relative to the working directory. " +
  "In content mode each matching line prints as path:line:text (context lines as " +
  "path-line-text, separate groups divided by --); lines longer than 500 characters are cut " +
  'around the match. Narrow a search with `glob` (e.g. "*.ts") or `path`; use ' +
  'output_mode "files" or "count" to get an overview first.';

const _decoder = new TextDecoder();

/**
 * Creates the `grep` tool.
 *
 * @example
 * ```ts
 * import { memoryFs } from "../lib/testing/memory_fs.ts";
 * import { createGrepTool } from "./grep.ts";
 * const fs = memoryFs();
 * fs.put("/w/a.ts", "let x = 1;\nconst answer = 42;\n");
 * const grep = createGrepTool({ fs });
 * const context = { cwd: "/w", signal: new AbortController().signal, toolCallId: "1" };
 * const result = await grep.execute({ pattern: "answer" }, context);
 * const output = typeof result === "string" ? result : result.output;
 * if (output !== "a.ts:2:const answer = 42;") throw new Error(output);
 * ```
 */
export function createGrepTool(options: GrepToolOptions = {}): Tool<GrepInput> {
  const { fs = denoFs, maxFileSize = 20 * 1024 * 1024, concurrency = 16 } = options;
  const maxMb = maxFileSize >= 1024 * 1024
    ? `${Math.round(maxFileSize / 1024 / 1024)} MB`
    : counted(maxFileSize, "byte");
  return defineTool({
    name: "grep",
    description: _DESCRIPTION.replace("20 MB", maxMb),
    parameters: _parameters,
    capabilities: ["read"],
    async execute(input, ctx) {
      const mode = input.output_mode ?? "content";
      const limit = input.limit ?? 200;
      const context = mode === "content" ? input.context ?? 0 : 0;
      const search: _Search = {
        fs,
        pattern: await compileGrepPattern(input.pattern, input.ignore_case ?? false),
        firstOnly: mode === "files",
        maxFileSize,
      };
      const path = input.path ?? ".";
      const target = await realPathOf(fs, ctx.cwd, path);
      const info = await fs.stat(target).catch((error) => {
        if (!isNotFound(error)) throw error;
        throw new Error(
          `"${path}" does not exist (looked for ${target}). Check the path, or search its parent directory.`,
        );
      });
      const prefix = await displayPrefix(fs, ctx.cwd, target);

      const out: string[] = [];
      const large: string[] = [];
      let matches = 0, files = 0, shown = 0, unreadable = 0;
      const consume = (result: _Result): void => {
        if (result === "binary") return;
        if (result === "unreadable") return void unreadable++;
        if (result.large) return void large.push(result.display);
        const count = result.hits.length;
        if (!count) return;
        files++;
        matches += count;
        if (mode !== "content") {
          if (shown < limit) {
            out.push(mode === "files" ? result.display : `${result.display}:${count}`);
          }
          shown = Math.min(limit, shown + 1);
        } else if (shown < limit) {
          const take = Math.min(limit - shown, count);
          out.push(format(result, take, context, out.length > 0));
          shown += take;
        }
      };

      let refused = 0;
      if (info.isFile) {
        const refusal = ctx.checkPath?.(target, "read");
        if (refusal) throw new Error(refusal);
        consume(await _searchFile(search, target, prefix));
      } else {
        const matcher = input.glob === undefined ? undefined : await _globMatcher(input.glob);
        // Files are searched a few at a time; results are taken in walk order, i.e. by path.
        const queue: Promise<_Result>[] = [];
        let turn = performance.now();
        const walked = walk(target, {
          fs,
          signal: ctx.signal,
          checkPath: ctx.checkPath,
          onRefused: () => refused++,
        });
        for await (const entry of walked) {
          if (matcher && !matcher(entry.path)) continue;
          queue.push(_searchFile(search, entry.absolute, joinDisplay(prefix, entry.path)));
          if (queue.length >= concurrency) consume(await queue.shift()!);
          if (performance.now() - turn > 50) {
            await yieldToEvents();
            turn = performance.now();
          }
        }
        while (queue.length) consume(await queue.shift()!);
        ctx.signal.throwIfAborted();
      }

      const total = mode === "content" ? matches : files;
      if (total > shown) {
        const more = counted(total - shown, mode === "content" ? "more match" : "more file");
        out.push(`… ${more}; narrow the pattern or raise limit`);
      }
      if (large.length) {
        const some = large.slice(0, 5).join(", ") + (large.length > 5 ? ", …" : "");
        out.push(`(${counted(large.length, "file")} over ${maxMb} not searched: ${some})`);
      }
      if (unreadable) out.push(`(${counted(unreadable, "file")} could not be read)`);
      if (refused) {
        const them = refused === 1 ? "it" : "them";
        out.push(
          `(${counted(refused, "path")} not searched: the permission rules refuse reading ${them})`,
        );
      }
      if (!files) {
        const where = prefix ? `"${prefix}"` : "the working directory";
        out.unshift(`No matches for /${input.pattern}/ in ${where}.`);
      }
      return {
        output: out.join("\n"),
        display: `${counted(matches, "matching line")} in ${counted(files, "file")}`,
        metadata: {
          matches,
          files,
          skippedLarge: large.length,
          unreadable,
          ...(refused ? { refused } : {}),
        },
      };
    },
  });
}

interface _Search {
  fs: ToolFs;
  pattern: GrepPattern;
  firstOnly: boolean;
  maxFileSize: number;
}

type _Result =
  | "binary"
  | "unreadable"
  | { display: string; large?: true; text: string; hits: number[]; matcher?: TextMatcher };

/** Reads one file and finds the start offsets of its matching lines; never throws. */
async function _searchFile(search: _Search, absolute: string, display: string): Promise<_Result> {
  let bytes;
  try {
    bytes = await _read(search.fs, absolute, search.maxFileSize);
  } catch {
    return "unreadable";
  }
  if (!bytes) return { display, large: true, text: "", hits: [] };
  const text = _decoder.decode(bytes);
  const matcher = await search.pattern.matcherFor(text);
  if (!matcher.test(text)) return { display, text: "", hits: [] };
  // Binary files are told by a NUL near the start, checked only once they match.
  const nul = text.indexOf("\0");
  if (nul !== -1 && nul < 8192) return "binary";
  const hits = matchLines(text, matcher, search.firstOnly ? 1 : Infinity);
  return { display, text, hits, matcher };
}

/** A glob without "/" matches file names; one with "/" paths relative to the search root. */
async function _globMatcher(glob: string): Promise<(path: string) => boolean> {
  const pattern = glob.replace(/^(\.\/)+/, "");
  const match = (await loadPicomatch())(pattern, { dot: true });
  if (pattern.includes("/")) return match;
  return (path) => match(path.slice(path.lastIndexOf("/") + 1));
}

/**
 * A file's bytes, or `undefined` when it is larger than `max`. Each of Deno's async file ops
 * costs a hand-off to a worker thread that outweighs reading a small cached file (on the 50 MB
 * benchmark: 360 ms async against 150 ms sync), so Deno's file system is read synchronously,
 * sized from the open file rather than by a second lookup of the path; the caller gives the
 * event loop a turn every 50 ms.
 */
async function _read(fs: ToolFs, path: string, max: number): Promise<Uint8Array | undefined> {
  if (fs !== denoFs) return (await fs.stat(path)).size > max ? undefined : await fs.readFile(path);
  using file = Deno.openSync(path);
  const size = file.statSync().size;
  if (size > max) return undefined;
  const bytes = new Uint8Array(size);
  let read = 0;
  for (let n = 0; read < size; read += n) {
    n = file.readSync(bytes.subarray(read)) ?? 0;
    if (!n) break;
  }
  return read < size ? bytes.subarray(0, read) : bytes;
}
