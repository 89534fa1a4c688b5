/**
 * The CLI as a user runs it, for the tests that start it as a child process.
 *
 * @module
 */

import { fileURLToPath } from "node:url";

/** The CLI's entry point (the package's main module). */
export const CLI_ENTRY: string = fileURLToPath(new URL("../mod.ts", import.meta.url));

/** Where a CLI run runs: its data and configuration directories, and more. */
export interface CliPlace {
  /** `AGENT_DATA_DIR`. */
  data: string;
  /** `AGENT_CONFIG_DIR`. */
  config: string;
  /** The working directory (default: the test's). */
  cwd?: string;
  /** The OpenAI-compatible server's base URL (default: a port nothing listens on). */
  url?: string;
  /** The module run (default {@link CLI_ENTRY}). */
  entry?: string;
}

/** What a CLI run left: its exit code and its output. */
export interface CliOutput {
  /** The exit code. */
  code: number;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
}

/**
 * `agent …args` in a child process, with all permissions, stdin closed, no colours, and an
 * OpenAI key: its exit code and output.
 */
export function runCli(args: string[], where: CliPlace): Promise<CliOutput> {
  return outputOf(
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", where.entry ?? CLI_ENTRY, ...args],
      ...(where.cwd === undefined ? {} : { cwd: where.cwd }),
      env: {
        AGENT_DATA_DIR: where.data,
        AGENT_CONFIG_DIR: where.config,
        NO_COLOR: "1",
        OPENAI_API_KEY: "k",
        OPENAI_BASE_URL: where.url ?? "http://127.0.0.1:9/v1",
      },
      stdin: "null",
    }),
  );
}

/** Runs `command` to its end: its exit code and its output as text. */
export async function outputOf(command: Deno.Command): Promise<CliOutput> {
  const output = await command.output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}
