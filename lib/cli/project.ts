/**
 * The files a project supplies to the agent (`.agent/settings.json`, `.mcp.json`), found where
 * only the project's own owner could have put them: from the working directory up to the
 * repository root, and outside a repository in the working directory alone. A file another user
 * owns, or that others may write, or that sits in a directory others may write (so that they
 * could put theirs in its place), is ignored with a warning: a settings file planted in a shared
 * parent directory (`/tmp`) applies to nobody, and neither does a `.git` another user made there.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { readOwnFileSync, repositoryRoot } from "../files/own_files.ts";

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
 * Finds and reads the project's files under the rules above (see `readOwnFileSync`: each file,
 * and each directory from it up to the project's, must be the user's alone, and what is read is
 * what was checked). Files Deno does not already let the agent read are skipped, without asking.
 *
 * @example
 * ```ts
 * import { readProjectFiles } from "./project.ts";
 * const dir = Deno.realPathSync(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${dir}/.mcp.json`, '{"mcpServers":{}}', { mode: 0o644 });
 * const project = await readProjectFiles(dir);
 * if (project.root !== dir || project.mcp?.text !== '{"mcpServers":{}}') throw new Error("unexpected");
 * ```
 */
export function readProjectFiles(cwd: string): Promise<ProjectFiles> {
  const warnings: string[] = [];
  const warn = (text: string) => warnings.push(text);
  const root = repositoryRoot(cwd, warn) ?? cwd;
  const read = (path: string): ProjectFile | undefined => {
    const bytes = readOwnFileSync(path, { upTo: root, warn });
    return bytes && { path, text: new TextDecoder().decode(bytes) };
  };
  let settings: ProjectFile | undefined;
  for (let dir = cwd;; dir = dirname(dir)) {
    settings = read(join(dir, ".agent", "settings.json"));
    if (settings || dir === root || dirname(dir) === dir) break;
  }
  return Promise.resolve({ root, settings, mcp: read(join(cwd, ".mcp.json")), warnings });
}
