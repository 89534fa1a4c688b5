/**
 * The command the user typed to start the agent, so that the hints it prints ("go on with: … -c")
 * are ones that work: `agent` when installed with `deno install` or compiled, `deno run -A mod.ts`
 * from a checkout, `deno run -A jsr:@x/agent` from JSR, with the permission flags the user gave.
 * When the command cannot be known (Deno lets only a run with every permission read its own
 * command line), none is made up: a hint that widened the user's permissions would be worse than
 * none.
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
  /** Whether Deno grants every permission, as `-A` does. */
  everything?: boolean;
}

/**
 * The command that starts the agent as the user started it, without the arguments of this run;
 * `undefined` when it cannot be known.
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
export function invocation(facts: InvocationFacts): string | undefined {
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
    return ["deno", ...prefix.slice(1)].map(shellWord).join(" ");
  }
  // Without the command line, only a run granted everything is known to be `deno run -A`.
  if (!facts.everything) return undefined;
  if (main.startsWith("file:")) {
    const path = relative(facts.cwd, fileURLToPath(main));
    return `deno run -A ${shellWord(path.startsWith("..") ? fileURLToPath(main) : path)}`;
  }
  const jsr = main.match(/^https:\/\/jsr\.io\/(@[^/]+\/[^/]+)\//)?.[1];
  return `deno run -A ${jsr ? `jsr:${jsr}` : shellWord(main)}`;
}

/**
 * {@link invocation} for this process. Deno lets only a run granted everything read
 * `/proc/self/cmdline`; it is read then, and never asked for.
 */
export function thisInvocation(cwd: string): string | undefined {
  const everything = _PERMISSIONS.every((name) =>
    Deno.permissions.querySync({ name }).state === "granted"
  );
  let cmdline: string[] | undefined;
  if (everything) {
    try {
      cmdline = Deno.readTextFileSync("/proc/self/cmdline").split("\0").slice(0, -1);
    } catch {
      // Not Linux: `deno run -A` is what was run, whatever the script was called.
    }
  }
  return invocation({
    execPath: Deno.execPath(),
    mainModule: Deno.mainModule,
    cwd,
    cmdline,
    everything,
  });
}

/**
 * A hint to run the agent again with `flag`, the way it was started ("agent -c"), or in words
 * when that way is not known.
 *
 * @example
 * ```ts
 * import { againWith } from "./invocation.ts";
 * if (againWith("agent", "-c") !== "agent -c") throw new Error("unexpected");
 * if (againWith(undefined, "-c") !== "the same command with -c") throw new Error("unexpected");
 * ```
 */
export function againWith(command: string | undefined, flag: string): string {
  return command ? `${command} ${flag}` : `the same command with ${flag}`;
}

const _PERMISSIONS = ["read", "write", "net", "env", "run", "sys", "ffi"] as const;

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

/**
 * `word` as a shell reads it back: as it is when it is plain, else in single quotes.
 *
 * @example
 * ```ts
 * import { shellWord } from "./invocation.ts";
 * if (shellWord("a b") !== "'a b'" || shellWord("http://h:1/v1") !== "http://h:1/v1") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
