/**
 * What the tests of the CLI's sandbox share: a run of the real CLI against a scripted model, in
 * an environment of the test's own making (a HOME the sandbox can see, not under `/tmp`, which is
 * the sandbox's own), with every temporary directory removed at the end.
 *
 * @module
 */

import { join } from "node:path";
import { type MockReply, type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { denoDir, MOD } from "./terminal_support.ts";

// deno-lint-ignore no-explicit-any
export type Event = { type: string } & Record<string, any>;

/** How a CLI run ended: its exit code, stderr, and the events it printed. */
export interface SandboxRun {
  code: number;
  stderr: string;
  events: Event[];
}

/** Temporary directories that {@link Scratch} removes when disposed. */
export class Scratch implements AsyncDisposable {
  readonly #dirs: string[] = [];

  /** A new directory (its real path) under `/var/tmp`, which the sandbox shows as it is. */
  async visible(prefix = "agent_sandbox_"): Promise<string> {
    const parent = await Deno.stat("/var/tmp").then(() => "/var/tmp", () => undefined);
    return this.#keep(await Deno.makeTempDir({ dir: parent, prefix }));
  }

  /** A new directory (its real path) under `/tmp`. */
  async temp(prefix = "agent_sandbox_"): Promise<string> {
    return this.#keep(await Deno.makeTempDir({ prefix }));
  }

  async #keep(path: string): Promise<string> {
    const real = await Deno.realPath(path);
    this.#dirs.push(real);
    return real;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const dir of this.#dirs.reverse()) {
      // Placeholders are read-only: make everything writable again before removing it.
      await new Deno.Command("chmod", { args: ["-R", "u+rwx", dir], stderr: "null" }).output();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  }
}

/** A model that runs each command with `bash`, one per turn, then says it is done. */
export function commands(...lines: string[]): MockReply[] {
  return [
    ...lines.map((command) => ({ toolCalls: [{ name: "bash", arguments: { command } }] })),
    { text: "done" },
  ];
}

/** The outputs of the run's tool results, in order. */
export function outputs(run: SandboxRun): string[] {
  return run.events.filter((e) => e.type === "tool_result").map((e) => e.output as string);
}

/** The run's tool results, in order. */
export function results(run: SandboxRun): Event[] {
  return run.events.filter((e) => e.type === "tool_result");
}

/**
 * Runs the CLI headless (`--output stream-json --no-session`) against `server`, with a whole
 * environment of its own: `home` as HOME, the user settings in `config` (a new directory when
 * not given), a data directory under `scratch`, and `env` on top.
 */
export async function runSandboxed(
  scratch: Scratch,
  server: MockServer,
  args: string[],
  options: {
    home: string;
    config?: string;
    permissions?: string[];
    env?: Record<string, string>;
  },
): Promise<SandboxRun> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...(options.permissions ?? ["-A"]),
      MOD,
      "-m",
      "openai/test",
      "--output",
      "stream-json",
      "--no-session",
      ...args,
    ],
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: options.home,
      DENO_DIR: await denoDir(),
      OPENAI_API_KEY: "sk-sandbox-guard-test",
      OPENAI_BASE_URL: server.url,
      AGENT_CONFIG_DIR: options.config ?? await scratch.temp("agent_config_"),
      AGENT_DATA_DIR: await scratch.temp("agent_data_"),
      NO_COLOR: "1",
      ...options.env,
    },
    clearEnv: true,
    stdin: "null",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  return {
    code: output.code,
    stderr: new TextDecoder().decode(output.stderr),
    events: stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line)),
  };
}

/** Runs git in `cwd` with a fixed identity; its output, or throws with what it said. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  const output = await new Deno.Command("git", {
    args: ["-c", "user.name=Ada", "-c", "user.email=ada@example.com", ...args],
    cwd,
    stdin: "null",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  if (!output.success) {
    throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(output.stderr)}`);
  }
  return text;
}

/** Whether `path` exists (a dangling link counts). */
export async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

/** Every path under `dir`, relative, sorted, with `/` after directories (not inside `.git/objects`). */
export async function tree(dir: string, under = ""): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(join(dir, under))) {
    const path = under ? `${under}/${entry.name}` : entry.name;
    if (entry.isDirectory) {
      found.push(`${path}/`);
      if (!path.endsWith(".git/objects")) found.push(...await tree(dir, path));
    } else {
      found.push(path);
    }
  }
  return found.sort();
}

export { startMockOpenAIServer };
