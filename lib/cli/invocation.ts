/**
 * The command the user typed to start the agent, so that the hints it prints ("go on with: … -c")
 * are ones that work: `agent` when installed with `deno install` or compiled, `deno run -A mod.ts`
 * from a checkout, `deno run -A jsr:@x/agent` from JSR.
 *
 * @module
 */

import { basename, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** What {@link invocation} works from. */
export interface InvocationFacts {
  /** The running program: Deno itself, or a compiled binary. */
  execPath: string;
  /** The main module's URL. */
  mainModule: string;
  /** The working directory, for paths given relative to it. */
  cwd: string;
  /** The process's arguments as the system has them (`/proc/self/cmdline`), when readable. */
  cmdline?: readonly string[];
}

/**
 * The command that starts the agent as the user started it, without the arguments of this run.
 *
 * @example
 * ```ts
 * import { invocation } from "./invocation.ts";
 * const checkout = invocation({
 *   execPath: "/usr/bin/deno",
 *   mainModule: "file:///src/agent/mod.ts",
 *   cwd: "/src/agent",
 *   cmdline: ["deno", "run", "-A", "mod.ts", "fix the bug"],
 * });
 * if (checkout !== "deno run -A mod.ts") throw new Error(checkout);
 * const installed = invocation({
 *   execPath: "/usr/bin/deno",
 *   mainModule: "file:///src/agent/mod.ts",
 *   cwd: "/w",
 *   cmdline: ["deno", "run", "--allow-all", "--config", "/h/.deno/bin/.agent/deno.json", "file:///src/agent/mod.ts"],
 * });
 * if (installed !== "agent") throw new Error(installed);
 * ```
 */
export function invocation(facts: InvocationFacts): string {
  const program = basename(facts.execPath);
  if (!/^deno(\.exe)?$/.test(program)) return program; // deno compile
  const main = facts.mainModule;
  const args = facts.cmdline ?? [];
  const script = args.findIndex((arg, i) => i > 1 && _isMain(arg, main, facts.cwd));
  if (script > 0) {
    const prefix = args.slice(0, script + 1);
    // `deno install` writes a script that runs the module with a config beside it, in
    // <root>/bin/.<name>/: the command is that name.
    const installed = prefix.map((arg) => arg.match(/\/bin\/\.([^/]+)\/deno\.jsonc?$/)?.[1])
      .find(Boolean);
    if (installed) return installed;
    return ["deno", ...prefix.slice(1)].map(_quote).join(" ");
  }
  if (main.startsWith("file:")) {
    const path = relative(facts.cwd, fileURLToPath(main));
    return `deno run -A ${_quote(path.startsWith("..") ? fileURLToPath(main) : path)}`;
  }
  const jsr = main.match(/^https:\/\/jsr\.io\/(@[^/]+\/[^/]+)\//)?.[1];
  return `deno run -A ${jsr ? `jsr:${jsr}` : _quote(main)}`;
}

/**
 * {@link invocation} for this process, reading `/proc/self/cmdline` when Deno already grants it
 * (without asking).
 */
export function thisInvocation(cwd: string): string {
  let cmdline: string[] | undefined;
  const proc = "/proc/self/cmdline";
  try {
    if (Deno.permissions.querySync({ name: "read", path: proc }).state === "granted") {
      cmdline = Deno.readTextFileSync(proc).split("\0").slice(0, -1);
    }
  } catch {
    // Not Linux, or not readable: the fallback is good enough.
  }
  return invocation({ execPath: Deno.execPath(), mainModule: Deno.mainModule, cwd, cmdline });
}

/** Whether a command-line word names the main module. */
function _isMain(arg: string, main: string, cwd: string): boolean {
  if (arg === main) return true;
  if (/^(jsr|npm|https?):/.test(arg)) {
    const jsr = arg.match(/^jsr:\/?(@[^/@]+\/[^/@]+)/)?.[1];
    return jsr !== undefined && main.startsWith(`https://jsr.io/${jsr}/`);
  }
  if (arg.startsWith("-") || !main.startsWith("file:")) return false;
  try {
    return pathToFileURL(arg.startsWith("/") ? arg : `${cwd}/${arg}`).href === main;
  } catch {
    return false;
  }
}

function _quote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
