/**
 * `@path` in a message attaches that file's content; Tab completes the path.
 *
 * @module
 */

import { join, resolve } from "node:path";

/** What attaching the files of a message gave. */
export interface Attached {
  /** The message with the files' contents appended. */
  text: string;
  /** The files attached. */
  files: string[];
  /** Files named but not attached, and why. */
  problems: string[];
}

const MENTION = /(^|\s)@((?:\\ |[^\s])+)/g;
const MAX_BYTES = 256 * 1024;

/**
 * Appends the content of each `@path` the message names (relative to `cwd`) in a `<file>`
 * block. Directories, binary files, missing files and files over 256 KiB are left out and
 * reported.
 *
 * @example
 * ```ts
 * import { attachFiles } from "./attach.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/notes.txt`, "remember the milk");
 * const { text, files } = await attachFiles("summarize @notes.txt please", dir);
 * if (files[0] !== "notes.txt" || !text.includes('<file path="notes.txt">\nremember the milk')) {
 *   throw new Error(text);
 * }
 * ```
 */
export async function attachFiles(message: string, cwd: string): Promise<Attached> {
  const files: string[] = [];
  const problems: string[] = [];
  const blocks: string[] = [];
  for (const match of message.matchAll(MENTION)) {
    const path = match[2].replaceAll("\\ ", " ").replace(/[.,;:!?)]+$/, "");
    if (files.includes(path)) continue;
    try {
      const bytes = await Deno.readFile(resolve(cwd, path));
      if (bytes.length > MAX_BYTES) {
        problems.push(`${path}: ${Math.round(bytes.length / 1024)} KiB is too large to attach`);
        continue;
      }
      if (bytes.subarray(0, 8192).includes(0)) {
        problems.push(`${path}: a binary file`);
        continue;
      }
      blocks.push(`<file path="${path}">\n${new TextDecoder().decode(bytes)}\n</file>`);
      files.push(path);
    } catch (error) {
      // A mention of something that is not a file ("@team") is left as written.
      if (!(error instanceof Deno.errors.NotFound)) {
        problems.push(`${path}: ${(error as Error).message}`);
      }
    }
  }
  const text = blocks.length ? `${message}\n\n${blocks.join("\n\n")}` : message;
  return { text, files, problems };
}

/**
 * Completes the `@path` being typed at the end of `line`: the entries of its directory that
 * start with what was typed (directories with a trailing `/`). Gives the candidates and the
 * part they replace, the shape `node:readline` completers return.
 *
 * @example
 * ```ts
 * import { completePath } from "./attach.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.mkdir(`${dir}/src`);
 * await Deno.writeTextFile(`${dir}/src/main.ts`, "");
 * const [candidates, typed] = await completePath("read @src/ma", dir);
 * if (typed !== "@src/ma" || candidates[0] !== "@src/main.ts") throw new Error("unexpected");
 * ```
 */
export async function completePath(line: string, cwd: string): Promise<[string[], string]> {
  const typed = /(?:^|\s)(@\S*)$/.exec(line)?.[1];
  if (!typed) return [[], line];
  const partial = typed.slice(1);
  const slash = partial.lastIndexOf("/");
  const folder = partial.slice(0, slash + 1);
  const prefix = partial.slice(slash + 1);
  const candidates: string[] = [];
  try {
    for await (const entry of Deno.readDir(join(cwd, folder || "."))) {
      if (
        !entry.name.startsWith(prefix) || (entry.name.startsWith(".") && !prefix.startsWith("."))
      ) continue;
      candidates.push(`@${folder}${entry.name}${entry.isDirectory ? "/" : ""}`);
    }
  } catch {
    return [[], typed];
  }
  return [candidates.sort().slice(0, 200), typed];
}
