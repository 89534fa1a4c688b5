/**
 * The token of `agent serve` when the user gives none: made fresh at each start and kept in a
 * file that only the user can read, `<data dir>/serve-<port>.token` (0600 in the private data
 * directory, which sandboxed commands do not see), where the user's own clients read it — as
 * Jupyter keeps its server's token. It is removed when the service stops; a file left by a
 * service that was killed holds a token nothing answers to any more.
 *
 * @module
 */

import { join } from "node:path";
import { writePrivateFile } from "../files/private_files.ts";

/**
 * Where `agent serve` on `port` keeps the token it made.
 *
 * @example
 * ```ts
 * import { serveTokenPath } from "./serve_token.ts";
 * if (serveTokenPath("/home/ada/.local/share/agent", 8787) !== "/home/ada/.local/share/agent/serve-8787.token") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function serveTokenPath(dataDir: string, port: number): string {
  return join(dataDir, `serve-${port}.token`);
}

/**
 * Writes `token` to `path` for the user alone (0600, in a folder made private): written whole
 * under another name, then moved into place, so that a client never reads half of it and no
 * file of another mode is reused.
 *
 * @example
 * ```ts
 * import { keepServeToken } from "./serve_token.ts";
 * const dir = await Deno.makeTempDir();
 * keepServeToken(`${dir}/serve-1.token`, "t0ken");
 * if (Deno.readTextFileSync(`${dir}/serve-1.token`) !== "t0ken\n") throw new Error("unexpected");
 * if (Deno.build.os !== "windows" && (Deno.statSync(`${dir}/serve-1.token`).mode! & 0o777) !== 0o600) {
 *   throw new Error("not private");
 * }
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function keepServeToken(path: string, token: string): void {
  writePrivateFile(path, `${token}\n`);
}

/**
 * Removes the token file at `path` if it still holds `token` (another service on the same port
 * may have put its own there since).
 *
 * @example
 * ```ts
 * import { dropServeToken, keepServeToken } from "./serve_token.ts";
 * const dir = await Deno.makeTempDir();
 * keepServeToken(`${dir}/serve-1.token`, "mine");
 * dropServeToken(`${dir}/serve-1.token`, "other");
 * dropServeToken(`${dir}/serve-1.token`, "mine");
 * if ([...Deno.readDirSync(dir)].length !== 0) throw new Error("unexpected");
 * await Deno.remove(dir);
 * ```
 */
export function dropServeToken(path: string, token: string): void {
  try {
    if (Deno.readTextFileSync(path).trim() === token) Deno.removeSync(path);
  } catch {
    // Gone already.
  }
}
