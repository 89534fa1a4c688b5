/**
 * The editor as the file tools' file system: under ACP, a client that offers
 * `fs/read_text_file` and `fs/write_text_file` is where `read`, `write` and `edit` read and
 * write, so that they see its unsaved buffers and their edits land in it. Every path is still
 * resolved and checked on the file Deno opens (inside the workspace, allowed by the rules, no
 * final symlink), and only that checked path is passed to the editor.
 *
 * @module
 */

import { denoFs, type ToolFs } from "../../../tools/fs.ts";
import { openFileOnce } from "../../../tools/open_file.ts";
import { withPathHeld } from "../../sandbox/running.ts";

/** What the editor offers of its files. */
export interface ClientFiles {
  /** Reads a file as the editor has it (its buffer, saved or not). */
  read?(path: string): Promise<string>;
  /** Writes a file through the editor. */
  write?(path: string, text: string): Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Deno's file system, with whole-file reads and writes of opened files going to the editor where
 * it offers them.
 *
 * @example
 * ```ts
 * import { clientFs } from "./client_fs.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/a.txt`, "on disk");
 * const fs = clientFs({ read: () => Promise.resolve("in the editor") });
 * const file = await fs.open!(`${dir}/a.txt`);
 * const text = new TextDecoder().decode(await file.read());
 * file[Symbol.dispose]();
 * Deno.removeSync(dir, { recursive: true });
 * if (text !== "in the editor") throw new Error(text);
 * ```
 */
export function clientFs(client: ClientFiles): ToolFs {
  const { read, write } = client;
  return {
    ...denoFs,
    async open(path, options) {
      const file = await openFileOnce(path, options);
      return {
        path: file.path,
        created: file.created,
        info: file.info,
        // A file created by this open is empty: the editor has no buffer of it yet.
        // The editor acts on the name: no sandboxed command may swap it meanwhile.
        read: read && !file.created
          ? async () => encoder.encode(await withPathHeld(file.path, () => read(file.path)))
          : () => file.read(),
        write: write
          ? (data) => withPathHeld(file.path, () => write(file.path, decoder.decode(data)))
          : (data) => file.write(data),
        [Symbol.dispose]: () => file[Symbol.dispose](),
      };
    },
  };
}
