/**
 * The `write` tool: creates or replaces a file inside the workspace, with its parent
 * directories. The file is opened once, checked as opened (inside the workspace, allowed by the
 * rules), and only then truncated and written (see `open_file.ts`).
 *
 * @module
 */

import { z } from "zod";
import { defineTool, type Tool } from "../lib/tool.ts";
import { counted } from "./counted.ts";
import { denoFs, type ToolFs } from "./fs.ts";
import { openChecked } from "./paths.ts";

/** Options of the tools that change files. */
export interface WriteToolOptions {
  /** The file system (default Deno's). */
  fs?: ToolFs;
  /** The directories files may be changed in (default the working directory). */
  roots?: readonly string[];
}

/** The input of the `write` tool. */
export interface WriteInput {
  /** The file, relative to the working directory or absolute. */
  path: string;
  /** The whole new content. */
  content: string;
}

const encoder = new TextEncoder();

/**
 * Creates the `write` tool.
 *
 * @example
 * ```ts
 * import { memoryFs } from "../lib/testing/mod.ts";
 * import { createWriteTool } from "./write.ts";
 * const fs = memoryFs();
 * fs.put("/work/.keep", "");
 * const write = createWriteTool({ fs });
 * const ctx = { cwd: "/work", toolCallId: "1", signal: new AbortController().signal };
 * await write.execute({ path: "src/a.txt", content: "hi\n" }, ctx);
 * if (fs.text("/work/src/a.txt") !== "hi\n") throw new Error("unexpected");
 * ```
 */
export function createWriteTool(options: WriteToolOptions = {}): Tool<WriteInput> {
  const fs = options.fs ?? denoFs;
  return defineTool({
    name: "write",
    description: "Create a file, or replace a file's whole content. Parent directories are " +
      "created. To change part of an existing file, prefer edit. Files outside the workspace " +
      "are refused.",
    parameters: z.object({
      path: z.string().min(1).describe(
        "The file to write, relative to the working directory or absolute",
      ),
      content: z.string().describe("The complete content of the file"),
    }),
    capabilities: ["write"],
    async execute({ path, content }, ctx) {
      using file = await openChecked(fs, ctx.cwd, path, {
        roots: options.roots ?? [ctx.cwd],
        access: "write",
        create: true,
        checkPath: ctx.checkPath,
        signal: ctx.signal,
      });
      if (!file.info.isFile) throw new Error(`"${path}" is not a regular file; give a file path`);
      const bytes = encoder.encode(content);
      await file.write(bytes);
      const lines = content === ""
        ? 0
        : content.split("\n").length - (content.endsWith("\n") ? 1 : 0);
      const summary = `${file.created ? "Created" : "Replaced"} ${path} (${
        counted(lines, "line")
      }, ${counted(bytes.length, "byte")})`;
      return {
        output: summary,
        display: summary,
        metadata: { path: file.path, created: file.created, bytes: bytes.length },
      };
    },
  });
}
