/**
 * Standard input as a headless run reads it: the prompt itself, or what is piped beside a prompt
 * argument. A caller that starts the agent and leaves stdin open (a socket, or a pipe it never
 * writes to nor closes) does not make it wait forever.
 *
 * @module
 */

import { fstatSync } from "node:fs";
import { UsageError } from "./args.ts";

/**
 * How long a piped stdin may stay silent when a prompt argument was given, before the run goes on
 * without it.
 */
export const STDIN_WAIT_MS = 2_000;

/** The most stdin may give: far more than a model reads, far less than fills the memory. */
export const MAX_STDIN_BYTES: number = 4 * 1024 * 1024;

/**
 * Reads the process's stdin: all of it, or (`optional`, beside a prompt argument) only a pipe, a
 * socket or a file, leaving one that gives nothing for {@link STDIN_WAIT_MS} alone and saying so
 * through `warn`. Gives `undefined` for a terminal. More than {@link MAX_STDIN_BYTES} is a
 * {@link UsageError}.
 */
export async function readStdin(
  optional: boolean,
  warn: (text: string) => void,
): Promise<string | undefined> {
  if (Deno.stdin.isTerminal()) return undefined;
  // Beside a prompt argument: what a caller pipes, not a device; a caller may leave it open.
  const kind = optional ? fstatSync(0) : undefined;
  if (kind && !kind.isFIFO() && !kind.isSocket() && !kind.isFile()) return undefined;
  const reader = Deno.stdin.readable.getReader();
  let first = reader.read();
  if (optional) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const silent = new Promise<"silent">((resolve) => {
      timer = setTimeout(() => resolve("silent"), STDIN_WAIT_MS);
    });
    const step = await Promise.race([first, silent]);
    clearTimeout(timer);
    if (step === "silent") {
      warn(
        `agent: stdin gave nothing in ${STDIN_WAIT_MS / 1000} s: going on with the prompt ` +
          `alone (start the agent with < /dev/null when nothing is piped)\n`,
      );
      return undefined;
    }
    first = Promise.resolve(step);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let step = await first; !step.done; step = await reader.read()) {
    size += step.value.length;
    if (size > MAX_STDIN_BYTES) {
      await reader.cancel().catch(() => {});
      throw new UsageError(
        `stdin gave more than ${MAX_STDIN_BYTES / 1024 / 1024} MiB, more than a model can ` +
          `read: write it to a file and name the file in the prompt`,
      );
    }
    chunks.push(step.value);
  }
  return await new Blob(chunks as BlobPart[]).text();
}
