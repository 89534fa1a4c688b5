/**
 * Standard input as a headless run reads it: the prompt itself, or what is piped beside a prompt
 * argument. A caller that starts the agent and leaves stdin open (a socket, or a pipe it never
 * writes to nor closes) does not make it wait forever.
 *
 * @module
 */

import { fstatSync } from "node:fs";

/**
 * How long a piped stdin may stay silent when a prompt argument was given, before the run goes on
 * without it.
 */
export const STDIN_WAIT_MS = 2_000;

/**
 * Reads the process's stdin: all of it, or (`optional`, beside a prompt argument) only a pipe or
 * a file, leaving a pipe that gives nothing for {@link STDIN_WAIT_MS} alone and saying so through
 * `warn`. Gives `undefined` for a terminal.
 */
export async function readStdin(
  optional: boolean,
  warn: (text: string) => void,
): Promise<string | undefined> {
  if (Deno.stdin.isTerminal()) return undefined;
  if (!optional) return await new Response(Deno.stdin.readable).text();
  // Beside a prompt argument: a pipe or a file, never a socket a caller left open.
  const kind = fstatSync(0);
  if (!kind.isFIFO() && !kind.isFile()) return undefined;
  const reader = Deno.stdin.readable.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const silent = new Promise<"silent">((resolve) => {
    timer = setTimeout(() => resolve("silent"), STDIN_WAIT_MS);
  });
  const first = await Promise.race([reader.read(), silent]);
  clearTimeout(timer);
  if (first === "silent") {
    warn(
      `agent: stdin is a pipe that gave nothing in ${STDIN_WAIT_MS / 1000} s: going on with the ` +
        `prompt alone (start the agent with < /dev/null when nothing is piped)\n`,
    );
    return undefined;
  }
  const chunks: Uint8Array[] = [];
  for (let step = first; !step.done; step = await reader.read()) chunks.push(step.value);
  return await new Blob(chunks as BlobPart[]).text();
}
