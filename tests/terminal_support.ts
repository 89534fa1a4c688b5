/**
 * What the tests that run the CLI as a child process share: a run with its output collected, a
 * terminal (tmux, on a server of its own) to type into and read, and an environment of the test's
 * own making (a temp HOME and data directory, the Deno cache of this process), so that nothing of
 * the user's leaks in.
 *
 * @module
 */

import { fileURLToPath } from "node:url";

/** The CLI's entry point. */
export const MOD: string = fileURLToPath(new URL("../mod.ts", import.meta.url));

let _denoDir: Promise<string> | undefined;

/** Where this Deno keeps its cache: children find their modules there. */
export function denoDir(): Promise<string> {
  _denoDir ??= (async () => {
    const given = Deno.env.get("DENO_DIR");
    if (given) return given;
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json"],
      stdout: "piped",
      stderr: "null",
    }).output();
    return JSON.parse(new TextDecoder().decode(output.stdout)).denoDir as string;
  })();
  return _denoDir;
}

/**
 * The whole environment of a CLI child: a temp HOME and data directory, this process's Deno
 * cache and PATH, no colours, and `extra` on top. Nothing else is inherited.
 */
export async function childEnv(
  extra: Record<string, string> = {},
): Promise<Record<string, string>> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: await Deno.makeTempDir({ prefix: "agent_home_" }),
    AGENT_DATA_DIR: await Deno.makeTempDir({ prefix: "agent_data_" }),
    DENO_DIR: await denoDir(),
    NO_COLOR: "1",
    ...extra,
  };
}

/** A temp directory, by its real path (Deno's grants and the CLI's messages use real paths). */
export async function tempDir(prefix = "agent_cwd_"): Promise<string> {
  return await Deno.realPath(await Deno.makeTempDir({ prefix }));
}

/** How a CLI run ended, and what it printed. */
export interface CliRun {
  /** The exit code. */
  code: number;
  /** What it printed on stdout. */
  stdout: string;
  /** What it printed on stderr. */
  stderr: string;
}

/**
 * Runs `deno run <permissions> mod.ts <args>` in `cwd` (default a new temp directory) with the
 * environment of {@link childEnv} and `env` on top, and stdin closed, given, or held open and
 * silent.
 */
export async function runCli(
  args: readonly string[],
  options: {
    env?: Record<string, string>;
    cwd?: string;
    permissions?: readonly string[];
    stdin?: string | "held open";
  } = {},
): Promise<CliRun> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...(options.permissions ?? ["-A"]), MOD, ...args],
    env: await childEnv(options.env),
    clearEnv: true,
    cwd: options.cwd ?? await tempDir(),
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = options.stdin === undefined ? undefined : child.stdin.getWriter();
  if (writer && options.stdin !== "held open") {
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const output = await child.output();
  await writer?.close().catch(() => {});
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/** A terminal running one command, on a tmux server of its own. */
export class Terminal implements AsyncDisposable {
  /** The tmux session's name. */
  readonly name = `agent-test-${crypto.randomUUID().slice(0, 8)}`;
  /** The directory of the tmux server's socket, removed with the terminal. */
  readonly #dir = Deno.makeTempDirSync({ prefix: "agent_tmux_" });
  /** The file the pane's output is appended to. */
  readonly #log = `${this.#dir}/output`;

  /**
   * Starts `command` in `cwd` with exactly `env` as its environment. When the command ends, the
   * pane shows `[exit <code>]` and stays open.
   */
  static async start(
    command: string[],
    env: Record<string, string>,
    cwd: string,
  ): Promise<Terminal> {
    const terminal = new Terminal();
    const vars = Object.entries({ TERM: "xterm-256color", ...env }).map(([key, value]) =>
      `${key}=${value}`
    );
    const line = ["env", "-i", ...vars, ...command].map(_quote).join(" ");
    const script = `${line}; echo "[exit $?]"; sleep 120`;
    await terminal.#tmux(
      "new-session",
      "-d",
      "-s",
      terminal.name,
      "-x",
      "110",
      "-y",
      "40",
      "-c",
      cwd,
      "sh",
      "-c",
      script,
    );
    // Everything the pane shows from now on is also appended to a file: while its size stays
    // the same, the screen has not changed, and `waitFor` need not ask tmux for it again.
    await terminal.#tmux("pipe-pane", "-t", terminal.name, `cat >> ${_quote(terminal.#log)}`);
    return terminal;
  }

  /** Types `text` as it is. */
  async type(text: string): Promise<void> {
    await this.#tmux("send-keys", "-t", this.name, "-l", text);
  }

  /** Presses keys by their tmux names (`Enter`, `C-c`). */
  async keys(...keys: string[]): Promise<void> {
    await this.#tmux("send-keys", "-t", this.name, ...keys);
  }

  /** What the terminal shows, its scrollback included. */
  async screen(): Promise<string> {
    return await this.#tmux("capture-pane", "-p", "-J", "-S", "-500", "-t", this.name);
  }

  /** The title the program in the terminal gave it (its host's name if none). */
  async title(): Promise<string> {
    return (await this.#tmux("display-message", "-p", "-t", this.name, "#{pane_title}")).trim();
  }

  /**
   * Waits until the screen matches `pattern`, and gives the screen. The screen is read again
   * when the pane has had output since it was last read, and at least every half second.
   */
  async waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<string> {
    const until = Date.now() + timeoutMs;
    let screen = "";
    let seen = -1;
    let readAt = 0;
    while (Date.now() < until) {
      // The size before the screen: output after it is in the screen or changes the size.
      const size = await this.#logSize();
      if (size !== seen || Date.now() - readAt >= 500) {
        seen = size;
        readAt = Date.now();
        screen = await this.screen();
        if (pattern.test(screen)) return screen;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    screen = await this.screen();
    if (pattern.test(screen)) return screen;
    throw new Error(`the screen never showed ${pattern}:\n${screen}`);
  }

  /** The size of the pane's output so far (0 before the first). */
  async #logSize(): Promise<number> {
    try {
      return (await Deno.stat(this.#log)).size;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return 0;
      throw error;
    }
  }

  /** Stops the tmux server, and with it the command. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.#tmux("kill-server").catch(() => {});
    await Deno.remove(this.#dir, { recursive: true });
  }

  async #tmux(...args: string[]): Promise<string> {
    const output = await new Deno.Command("tmux", {
      args: ["-S", `${this.#dir}/socket`, "-f", "/dev/null", ...args],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!output.success) {
      throw new Error(`tmux ${args[0]}: ${new TextDecoder().decode(output.stderr)}`);
    }
    return new TextDecoder().decode(output.stdout);
  }
}

function _quote(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}
