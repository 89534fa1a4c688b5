/**
 * The files a project supplies to the agent (`.agent/settings.json`, `.mcp.json`), found where
 * only the project's own owner could have put them: from the working directory up to the
 * repository root, and outside a repository in the working directory alone. A file another user
 * owns, or that others may write, is ignored with a warning: a settings file planted in a shared
 * parent directory (`/tmp`) applies to nobody.
 *
 * @module
 */

import { dirname, join } from "node:path";

/** A project file as read: its path and its text, read once. */
export interface ProjectFile {
  /** Where it is. */
  path: string;
  /** What it says. */
  text: string;
}

/** What a project supplies. */
export interface ProjectFiles {
  /** The project's directory: the repository root, or the working directory outside one. */
  root: string;
  /** `.agent/settings.json`, from the working directory up to the root. */
  settings?: ProjectFile;
  /** `.mcp.json` in the working directory. */
  mcp?: ProjectFile;
  /** Files found but ignored, and why. */
  warnings: string[];
}

/**
 * Finds and reads the project's files under the rules above. Files Deno does not already let
 * the agent read are skipped, without asking.
 *
 * @example
 * ```ts
 * import { readProjectFiles } from "./project.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/.mcp.json`, '{"mcpServers":{}}');
 * const project = await readProjectFiles(dir);
 * if (project.root !== dir || project.mcp?.text !== '{"mcpServers":{}}') throw new Error("unexpected");
 * ```
 */
export async function readProjectFiles(cwd: string): Promise<ProjectFiles> {
  const warnings: string[] = [];
  const root = (await _repositoryRoot(cwd)) ?? cwd;
  const owner = _userId();
  const read = async (path: string): Promise<ProjectFile | undefined> => {
    if (Deno.permissions.querySync({ name: "read", path }).state !== "granted") return undefined;
    let info: Deno.FileInfo;
    try {
      info = await Deno.lstat(path);
    } catch {
      return undefined;
    }
    const why = _untrustworthy(info, owner);
    if (why) {
      warnings.push(`${path} ignored: ${why}`);
      return undefined;
    }
    try {
      return { path, text: await Deno.readTextFile(path) };
    } catch {
      return undefined;
    }
  };
  let settings: ProjectFile | undefined;
  for (let dir = cwd;; dir = dirname(dir)) {
    settings = await read(join(dir, ".agent", "settings.json"));
    if (settings || dir === root || dirname(dir) === dir) break;
  }
  return { root, settings, mcp: await read(join(cwd, ".mcp.json")), warnings };
}

/** The nearest directory at or above `cwd` that holds `.git`, if Deno lets it look. */
async function _repositoryRoot(cwd: string): Promise<string | undefined> {
  for (let dir = cwd;; dir = dirname(dir)) {
    if (Deno.permissions.querySync({ name: "read", path: dir }).state !== "granted") {
      return undefined;
    }
    try {
      await Deno.lstat(join(dir, ".git"));
      return dir;
    } catch {
      // Not here: look higher.
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/** Why a file is not to be taken as the user's own: another owner, or others may write it. */
function _untrustworthy(info: Deno.FileInfo, owner: number | undefined): string | undefined {
  if (info.isSymlink) return "it is a symbolic link";
  if (!info.isFile) return "it is not a file";
  if (owner !== undefined && info.uid !== null && info.uid !== owner) {
    return `it belongs to another user (uid ${info.uid})`;
  }
  if (info.mode !== null && (info.mode & 0o022) !== 0) return "others may write it";
  return undefined;
}

/** The user's id, when Deno grants asking for it (or reading HOME, which the user owns). */
function _userId(): number | undefined {
  try {
    if (Deno.permissions.querySync({ name: "sys", kind: "uid" }).state === "granted") {
      return Deno.uid() ?? undefined;
    }
    const home = Deno.permissions.querySync({ name: "env", variable: "HOME" }).state === "granted"
      ? Deno.env.get("HOME")
      : undefined;
    if (home && Deno.permissions.querySync({ name: "read", path: home }).state === "granted") {
      return Deno.statSync(home).uid ?? undefined;
    }
  } catch {
    // Unknown: only the mode is checked.
  }
  return undefined;
}
