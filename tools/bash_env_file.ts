/**
 * The sandbox's environment for a command that a terminal of the host program starts. The
 * terminal adds to an environment of its own, which may hold the host's secrets, so bwrap
 * clears it; and a command line is there for every user of the machine to read (`ps`,
 * `/proc/<pid>/cmdline`), so the sandbox's variables are not set on it either. They go to a
 * file readable by the user alone, in a directory of its own, which the sandbox shows read-only
 * and the command's shell sources before it runs the command.
 *
 * @module
 */

import { join } from "node:path";
import { prepareSandbox, type SandboxArgsOptions } from "../lib/sandbox/bubblewrap.ts";
import type { Leftover } from "../lib/sandbox/leftovers.ts";

/** A shell identifier: what `export NAME=…` can set. Other names are left out. */
const _NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The sandbox's environment in a file private to the user (see the module's doc). */
export interface _EnvFile {
  /** The directory that holds the file alone (0700): the sandbox shows it read-only. */
  readonly dir: string;
  /** The file (0600). */
  readonly path: string;
  /** Writes `export NAME='value'` for each variable whose name is a shell identifier. */
  write(env: Record<string, string>): void;
  /** Removes the file and its directory; calling it again does nothing. */
  remove(): void;
}

/**
 * Makes a fresh directory readable by the user alone (0700) for the environment's file, which
 * {@link _EnvFile.write} then creates (0600). The real path, so that the sandbox binds it where
 * the command looks for it.
 *
 * @example
 * ```ts
 * import { _makeEnvFile } from "./bash_env_file.ts";
 * const file = _makeEnvFile();
 * file.write({ GREETING: "it's", "NOT-A-NAME": "left out" });
 * if (Deno.readTextFileSync(file.path) !== "export GREETING='it'\\''s'\n") {
 *   throw new Error("unexpected");
 * }
 * if ((Deno.statSync(file.path).mode! & 0o777) !== 0o600) throw new Error("not private");
 * file.remove();
 * if (await Deno.lstat(file.dir).then(() => true, () => false)) throw new Error("left behind");
 * ```
 */
export function _makeEnvFile(): _EnvFile {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "agent_env_" }));
  const path = join(dir, "env");
  let removed = false;
  return {
    dir,
    path,
    write(env) {
      const lines = Object.entries(env)
        .filter(([name]) => _NAME.test(name))
        .map(([name, value]) => `export ${name}=${_shellQuote(value)}\n`);
      Deno.writeTextFileSync(path, lines.join(""), { createNew: true, mode: 0o600 });
    },
    remove() {
      if (removed) return;
      removed = true;
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
    },
  };
}

/**
 * A shell script that sources `file`, then runs `script`. What the shell says while sourcing
 * (a variable it keeps read-only, such as `UID`) is not the command's output.
 *
 * @example
 * ```ts
 * import { _sourcing } from "./bash_env_file.ts";
 * if (_sourcing("/tmp/e/env", "exit 0") !== ". '/tmp/e/env' 2>/dev/null; exit 0") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function _sourcing(file: string, script: string): string {
  return `. ${_shellQuote(file)} 2>/dev/null; ${script}`;
}

/**
 * `text` as one word of a POSIX shell: in single quotes, each `'` as `'\''`.
 *
 * @example
 * ```ts
 * import { _shellQuote } from "./bash_env_file.ts";
 * if (_shellQuote("it's $HOME") !== `'it'\\''s $HOME'`) throw new Error("unexpected");
 * ```
 */
export function _shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The path of `program` as the `PATH` given finds it, where Deno already lets it be looked at
 * (nobody is asked); else `program` as it is. bwrap, its environment cleared, looks a bare name
 * up in `/bin:/usr/bin` only.
 *
 * @example
 * ```ts
 * import { _findProgram } from "./bash_env_file.ts";
 * if (_findProgram("/bin/sh", "/usr/bin") !== "/bin/sh") throw new Error("unexpected");
 * if (_findProgram("no-such-program-here", "/usr/bin") !== "no-such-program-here") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function _findProgram(program: string, path: string | undefined): string {
  if (program.includes("/") || !path) return program;
  for (const dir of path.split(":")) {
    if (!dir.startsWith("/")) continue;
    const candidate = join(dir, program);
    if (Deno.permissions.querySync({ name: "read", path: candidate }).state !== "granted") continue;
    try {
      const info = Deno.statSync(candidate);
      if (info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0) return candidate;
    } catch {
      // Not there: the next directory.
    }
  }
  return program;
}

/** What a terminal of the host starts in the sandbox, and what to do once it has ended. */
export interface _TerminalSandbox {
  /** `bwrap`. */
  program: string;
  /** Its arguments, with no value of the environment among them. */
  args: string[];
  /** Releases the sandbox and removes the environment's file. */
  release: () => void;
  /** See `PreparedSandbox.checkLeftovers`. */
  checkLeftovers: () => Promise<Leftover[]>;
}

/**
 * The sandbox that runs `shell` (`[shell, "-c", script, $0, $1]`) for a terminal of the host,
 * whose command line every user of the machine can read: `env` goes to a file of the user's
 * alone, in a directory the sandbox shows read-only (after its own `/tmp`, which would hide it),
 * and the outer shell sources it before `script`. What bwrap sets itself (`TMPDIR`) is left out
 * of it, so that bwrap's value stands as it does for a child given the environment directly.
 * Releasing the sandbox removes the file; when preparing fails, nothing is left.
 *
 * @example
 * ```ts
 * import { _sandboxInTerminal } from "./bash_env_file.ts";
 * const ws = Deno.realPathSync(Deno.makeTempDirSync());
 * const shell = ["bash", "-c", 'exec "$0" -c "$1"', "bash", "true"];
 * const env = { PATH: "/usr/bin", GREETING: "hello-there" };
 * const sandbox = { bwrap: "bwrap", writable: [ws], net: true };
 * const run = _sandboxInTerminal(env, shell, ws, sandbox);
 * if (run.args.some((arg) => arg.includes("hello-there"))) throw new Error("on the command line");
 * run.release();
 * Deno.removeSync(ws, { recursive: true });
 * ```
 */
export function _sandboxInTerminal(
  env: Record<string, string>,
  shell: string[],
  cwd: string,
  sandbox: Omit<SandboxArgsOptions, "command" | "cwd" | "home"> & { bwrap: string },
): _TerminalSandbox {
  const file = _makeEnvFile();
  try {
    // With its environment cleared, bwrap would look the shell up in /bin:/usr/bin alone.
    const [program, flag, script, ...rest] = shell;
    const prepared = prepareSandbox({
      ...sandbox,
      readable: [...(sandbox.readable ?? []), file.dir],
      command: [_findProgram(program, env.PATH), flag, _sourcing(file.path, script), ...rest],
      cwd,
      home: env.HOME,
    });
    const release = () => {
      try {
        prepared.release();
      } finally {
        file.remove();
      }
    };
    try {
      const setByBwrap = _setenvNames(prepared.args);
      file.write(
        Object.fromEntries(Object.entries(env).filter(([name]) => !setByBwrap.has(name))),
      );
    } catch (error) {
      release();
      throw error;
    }
    return {
      program: sandbox.bwrap,
      args: prepared.args,
      release,
      checkLeftovers: prepared.checkLeftovers,
    };
  } catch (error) {
    file.remove();
    throw error;
  }
}

/** The names bwrap's arguments set (`--setenv NAME VALUE`) before the command. */
function _setenvNames(args: string[]): Set<string> {
  const names = new Set<string>();
  const end = args.indexOf("--");
  for (let i = 0; i < (end < 0 ? args.length : end); i++) {
    if (args[i] !== "--setenv") continue;
    names.add(args[i + 1]);
    i += 2;
  }
  return names;
}
