/**
 * The `read` tool: a text file with line numbers, a window of lines, and clear refusals for
 * directories, binary files and files too large to read whole. The file is opened once and
 * checked as opened (allowed by the rules, granted by Deno), then read through that handle (see
 * `open_file.ts`). Lines the model was already shown, by a result it still has in view, of a
 * file unchanged since, come back as a short note that points to that result instead of the
 * content again (see `read_seen.ts`): in a long session, each request stays the size of what
 * is new.
 *
 * @module
 */

import { z } from "zod";
import { defineTool, type Tool, type ToolOutput } from "../lib/tool.ts";
import { counted } from "./counted.ts";
import { denoFs, type ToolFs } from "./fs.ts";
import { openChecked } from "./paths.ts";
import { readMemory, type ReadStillShown, sha256 } from "./read_seen.ts";

/** Options of {@link createReadTool}. */
export interface ReadToolOptions {
  /** The file system (default Deno's). */
  fs?: ToolFs;
  /** Files larger than this many bytes are refused (default 10 MiB). */
  maxBytes?: number;
  /** Lines shown when no `limit` is given (default 2,000). */
  defaultLimit?: number;
  /** Longer lines are cut to this many characters (default 2,000). */
  maxLineLength?: number;
}

/** The input of the `read` tool. */
export interface ReadInput {
  /** The file, relative to the working directory or absolute. */
  path: string;
  /** The first line to show, from 1. */
  offset?: number;
  /** How many lines to show. */
  limit?: number;
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Creates the `read` tool. A read of lines the model was shown by an earlier read that is still
 * in its view (`ToolContext.history`), of a file unchanged since (same size, modification time
 * and content), returns a short note pointing to that result instead of the lines.
 *
 * @example
 * ```ts
 * import { memoryFs } from "../lib/testing/mod.ts";
 * import { createReadTool } from "./read.ts";
 * const fs = memoryFs();
 * fs.put("/work/a.txt", "one\ntwo\n");
 * const read = createReadTool({ fs });
 * const ctx = { cwd: "/work", toolCallId: "1", signal: new AbortController().signal };
 * const result = await read.execute({ path: "a.txt" }, ctx);
 * const text = typeof result === "string" ? result : result.output;
 * if (!text.startsWith("     1\tone\n     2\ttwo")) throw new Error("unexpected");
 * ```
 */
export function createReadTool(options: ReadToolOptions = {}): Tool<ReadInput> {
  const fs = options.fs ?? denoFs;
  const maxBytes = options.maxBytes ?? 10 * 1024 * 1024;
  const defaultLimit = options.defaultLimit ?? 2_000;
  const maxLineLength = options.maxLineLength ?? 2_000;
  const memory = readMemory("read");
  return defineTool({
    name: "read",
    description: "Read a text file. Lines come numbered (`     12\\tcode`); the numbers are not " +
      `part of the file. Shows up to ${defaultLimit} lines; for longer files pass offset (first ` +
      "line, from 1) and limit to read the rest. Read a file before you edit it. Directories " +
      "and binary files are refused: use ls for directories. Lines you have already read, of a " +
      "file unchanged since, come back as a note pointing to that earlier result.",
    parameters: z.object({
      path: z.string().min(1).describe(
        "The file to read, relative to the working directory or absolute",
      ),
      offset: z.number().int().min(1).optional().describe("The first line to show, from 1"),
      limit: z.number().int().min(1).optional().describe(
        `How many lines to show (default ${defaultLimit})`,
      ),
    }),
    capabilities: ["read"],
    async execute({ path, offset = 1, limit = defaultLimit }, ctx) {
      using file = await openChecked(fs, ctx.cwd, path, {
        checkPath: ctx.checkPath,
        signal: ctx.signal,
      });
      const info = file.info;
      if (info.isDirectory) throw new Error(`${path} is a directory; use ls to list it`);
      if (!info.isFile) {
        throw new Error(
          `${path} is not a regular file (a FIFO, a socket or a device); read only shows files`,
        );
      }
      if (info.size > maxBytes) {
        throw new Error(
          `${path} is ${_size(info.size)}, more than the ${_size(maxBytes)} read allows; search ` +
            `it with grep instead`,
        );
      }
      const bytes = await file.read();
      const digest = sha256(bytes);
      const still = memory.find(ctx.history, { path: file.path, info, digest }, (lines) => {
        if (offset > lines) return undefined;
        return { from: offset, to: Math.min(lines, offset - 1 + limit) };
      });
      if (still) return _unchanged(path, file.path, offset, limit, still);
      const text = _text(bytes, path);
      if (text === "") return `(${path} is empty)`;
      const lines = text.split(/\r?\n/);
      if (lines.at(-1) === "") lines.pop(); // the final newline ends the last line
      if (offset > lines.length) {
        throw new Error(
          `${path} has ${counted(lines.length, "line")}; offset ${offset} is past the end`,
        );
      }
      const end = Math.min(lines.length, offset - 1 + limit);
      const width = Math.max(6, String(end).length);
      const shown: string[] = [];
      for (let i = offset - 1; i < end; i++) {
        const line = lines[i].length > maxLineLength
          ? `${lines[i].slice(0, maxLineLength)}… [line cut at ${maxLineLength} characters]`
          : lines[i];
        shown.push(`${String(i + 1).padStart(width)}\t${line}`);
      }
      if (end < lines.length || offset > 1) {
        shown.push(
          `\n(${path} has ${counted(lines.length, "line")}; shown ${offset}-${end}${
            end < lines.length ? `; continue with offset=${end + 1}` : ""
          })`,
        );
      }
      const output = shown.join("\n");
      // Worth pointing back to later: more than the note that would stand for it.
      if (output.length > 400) {
        memory.remember(ctx.toolCallId, output, {
          path: file.path,
          size: info.size,
          mtimeMs: info.mtime?.getTime(),
          digest,
          lines: lines.length,
          from: offset,
          to: end,
        });
      }
      return {
        output,
        display: end - offset + 1 === lines.length
          ? `${path} (${counted(lines.length, "line")})`
          : `${path} (${end - offset + 1} of ${counted(lines.length, "line")})`,
        metadata: { path: file.path, lines: lines.length, from: offset, to: end },
      };
    },
  });
}

/** The note that stands for lines the model still has in view, of a file unchanged since. */
function _unchanged(
  path: string,
  real: string,
  offset: number,
  limit: number,
  { toolCallId, shown }: ReadStillShown,
): ToolOutput {
  const to = Math.min(shown.lines, offset - 1 + limit);
  const whole = offset === 1 && to === shown.lines;
  const what = whole ? path : `Lines ${offset}-${to} of ${path}`;
  return {
    output: `${what} ${whole ? "is" : "are"} unchanged since you read ${
      whole ? "it" : "them"
    }: the result of your earlier read of ${path} (lines ${shown.from}-${shown.to}) above still shows ${
      whole ? "its" : "their"
    } current content. Use that result instead of reading again.`,
    display: `${path} (unchanged since read)`,
    metadata: {
      path: real,
      lines: shown.lines,
      from: offset,
      to,
      unchanged: true,
      readCallId: toolCallId,
    },
  };
}

/** Decodes UTF-8 text, refusing binary content. */
function _text(bytes: Uint8Array, path: string): string {
  const head = bytes.subarray(0, 8192);
  if (head.includes(0)) {
    throw new Error(`${path} is a binary file (${_size(bytes.length)}); read only shows text`);
  }
  try {
    return decoder.decode(bytes);
  } catch {
    throw new Error(`${path} is not UTF-8 text (${_size(bytes.length)}); read only shows text`);
  }
}

function _size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
