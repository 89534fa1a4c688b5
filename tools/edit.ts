/**
 * The `edit` tool: exact replacement of a unique string in a file, keeping the file's line
 * endings and byte-order mark. The file is opened once, checked as opened (inside the workspace,
 * allowed by the rules), then read and rewritten through that one handle (see `open_file.ts`).
 *
 * @module
 */

import { z } from "zod";
import { defineTool, type Tool } from "../lib/tool.ts";
import { denoFs, type ToolFs } from "./fs.ts";
import { openChecked } from "./paths.ts";
import type { WriteToolOptions } from "./write.ts";

/** The input of the `edit` tool. */
export interface EditInput {
  /** The file, relative to the working directory or absolute. */
  path: string;
  /** The exact text to replace. */
  old_string: string;
  /** The text to put in its place. */
  new_string: string;
  /** Replace every occurrence instead of requiring a unique one. */
  replace_all?: boolean;
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/**
 * Creates the `edit` tool.
 *
 * @example
 * ```ts
 * import { memoryFs } from "../lib/testing/mod.ts";
 * import { createEditTool } from "./edit.ts";
 * const fs = memoryFs();
 * fs.put("/work/a.txt", "let x = 1;\r\nlet y = 2;\r\n");
 * const edit = createEditTool({ fs });
 * const ctx = { cwd: "/work", toolCallId: "1", signal: new AbortController().signal };
 * await edit.execute({ path: "a.txt", old_string: "x = 1;\nlet y", new_string: "x = 3;\nlet y" }, ctx);
 * if (fs.text("/work/a.txt") !== "let x = 3;\r\nlet y = 2;\r\n") throw new Error("unexpected");
 * ```
 */
export function createEditTool(options: WriteToolOptions = {}): Tool<EditInput> {
  const fs: ToolFs = options.fs ?? denoFs;
  return defineTool({
    name: "edit",
    description: "Replace exact text in a file. old_string must match the file exactly " +
      "(whitespace and indentation included; leave out the line numbers read shows) and be " +
      "unique, unless replace_all is true: include enough surrounding lines to make it unique. " +
      "Read the file first. Use write to create files.",
    parameters: z.object({
      path: z.string().min(1).describe(
        "The file to edit, relative to the working directory or absolute",
      ),
      old_string: z.string().describe("The exact text to replace"),
      new_string: z.string().describe("The replacement text"),
      replace_all: z.boolean().optional().describe("Replace every occurrence (default false)"),
    }),
    capabilities: ["write"],
    async execute({ path, old_string, new_string, replace_all = false }, ctx) {
      if (old_string === "") throw new Error("old_string is empty; use write to create a file");
      if (old_string === new_string) {
        throw new Error("old_string and new_string are the same; nothing to change");
      }
      using file = await openChecked(fs, ctx.cwd, path, {
        roots: options.roots ?? [ctx.cwd],
        access: "update",
        checkPath: ctx.checkPath,
        signal: ctx.signal,
      });
      if (!file.info.isFile) throw new Error(`"${path}" is not a regular file; give a file path`);
      let text: string;
      try {
        text = decoder.decode(await file.read());
      } catch (error) {
        if (error instanceof TypeError) {
          throw new Error(`${path} is not UTF-8 text; edit only changes text files`);
        }
        throw error;
      }
      // The model writes "\n"; a file with CRLF line endings keeps them.
      const crlf = text.includes("\r\n") && !/(^|[^\r])\n/.test(text);
      const find = crlf ? _toCrlf(old_string) : old_string;
      const replacement = crlf ? _toCrlf(new_string) : new_string;
      const count = _count(text, find);
      if (count === 0) {
        throw new Error(
          `old_string was not found in ${path}. Read the file again and copy the exact text, ` +
            `with its whitespace and indentation and without line numbers.`,
        );
      }
      if (count > 1 && !replace_all) {
        throw new Error(
          `old_string occurs ${count} times in ${path}. Include more surrounding lines so that ` +
            `it is unique, or set replace_all to true to change every occurrence.`,
        );
      }
      const first = text.indexOf(find);
      const updated = replace_all
        ? text.replaceAll(find, () => replacement)
        : text.replace(find, () => replacement);
      await file.write(encoder.encode(updated));
      const line = text.slice(0, first).split("\n").length;
      const summary = `Edited ${path}: replaced ${
        count === 1 ? "1 occurrence" : `${count} occurrences`
      }`;
      return {
        output: `${summary} (first at line ${line}).\n${_snippet(updated, line, replacement)}`,
        display: summary,
        metadata: { path: file.path, replacements: count, line },
      };
    },
  });
}

function _toCrlf(text: string): string {
  return text.replace(/\r?\n/g, "\r\n");
}

function _count(text: string, find: string): number {
  let count = 0;
  for (let at = text.indexOf(find); at !== -1; at = text.indexOf(find, at + find.length)) count++;
  return count;
}

/** The changed lines with a little context, numbered like read shows them. */
function _snippet(text: string, line: number, replacement: string): string {
  const lines = text.split(/\r?\n/);
  const from = Math.max(1, line - 2);
  const to = Math.min(lines.length, line + replacement.split("\n").length + 1);
  const shown: string[] = [];
  for (let i = from; i <= to; i++) shown.push(`${String(i).padStart(6)}\t${lines[i - 1]}`);
  return shown.join("\n");
}
