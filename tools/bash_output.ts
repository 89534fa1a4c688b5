/**
 * The output of a shell command, read as it comes and kept to its head and tail, so that any
 * amount of output fits, and the result that says how the command ended.
 *
 * @module
 */

import type { ToolOutput } from "../lib/tool.ts";
import { counted } from "./counted.ts";

/** What {@link _collect} gives. */
export interface _Collector {
  /** Waits up to `drainMs` for the end of the output, then stops reading and gives the text. */
  finish(drainMs: number): Promise<string>;
}

/** Reads a stream keeping only its first and last bytes, so any amount of output fits. */
export function _collect(stream: ReadableStream<Uint8Array>, maxChars: number): _Collector {
  const headCap = Math.ceil(maxChars / 2);
  const tailCap = maxChars - headCap;
  const head = new Uint8Array(headCap);
  let headLength = 0;
  const tail: Uint8Array[] = [];
  let tailLength = 0;
  let total = 0;
  const reader = stream.getReader();
  const reading = (async () => {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return;
      total += value.length;
      let chunk = value;
      if (headLength < headCap) {
        const take = Math.min(headCap - headLength, chunk.length);
        head.set(chunk.subarray(0, take), headLength);
        headLength += take;
        chunk = chunk.subarray(take);
      }
      if (chunk.length === 0 || tailCap === 0) continue;
      tail.push(chunk.slice());
      tailLength += chunk.length;
      while (tail.length > 1 && tailLength - tail[0].length >= tailCap) {
        tailLength -= tail.shift()!.length;
      }
    }
  })().catch(() => {});
  return {
    async finish(drainMs) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const drained = await Promise.race([
        reading.then(() => true),
        new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), drainMs)),
      ]);
      clearTimeout(timer);
      // A process outside the group may still hold the pipe: stop waiting for its end.
      if (!drained) await reader.cancel().catch(() => {});
      await reading;
      const rest = _concat(tail, tailLength);
      const kept = rest.subarray(Math.max(0, rest.length - tailCap));
      return _joinEnds(head.subarray(0, headLength), kept, total);
    },
  };
}

/** Keeps the first and last bytes of a whole output, as {@link _collect} does of a stream. */
export function _keepEnds(text: string, maxChars: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= maxChars) return text;
  const headCap = Math.ceil(maxChars / 2);
  const kept = bytes.subarray(Math.max(headCap, bytes.length - (maxChars - headCap)));
  return _joinEnds(bytes.subarray(0, headCap), kept, bytes.length);
}

/** The head and the tail of an output of `total` bytes, and how much was cut between them. */
function _joinEnds(head: Uint8Array, kept: Uint8Array, total: number): string {
  const cut = total - head.length - kept.length;
  if (cut <= 0) return new TextDecoder().decode(_concat([head, kept]));
  // Decode each side on its own, dropping a character split by the cut.
  const start = new TextDecoder().decode(head, { stream: true });
  let skip = 0;
  while (skip < 3 && skip < kept.length && (kept[skip] & 0xc0) === 0x80) skip++;
  const end = new TextDecoder().decode(kept.subarray(skip));
  return `${start}\n\n[… ${counted(cut + skip, "byte")} of output cut …]\n\n${end}`;
}

/** How a command ended, as {@link _ended} words it. */
export interface _Ending {
  /** Why the call stopped the command, if it did. */
  killed?: "timeout" | "cancel";
  /** The exit code, null when a signal ended the command (or it is not known). */
  code: number | null;
  /** The signal that ended the command, if one did. */
  signal: string | null;
  /** The timeout the call had, in milliseconds. */
  timeoutMs: number;
  /** How long the call took, in milliseconds. */
  durationMs: number;
  /** Whether the command ran in the sandbox. */
  sandboxed: boolean;
}

/**
 * The tool's result: the output, then a footer that says how the command ended (`[exit code
 * N]`, `[killed by SIGNAL]`, `[killed: timed out after …]`, `[killed: cancelled]`), a one-line
 * display for people, and metadata.
 */
export function _ended(text: string, command: string, ending: _Ending): ToolOutput {
  const { killed, code, signal, durationMs } = ending;
  const timedOut = killed === "timeout";
  let footer: string;
  if (timedOut) footer = `[killed: timed out after ${_seconds(ending.timeoutMs)}]`;
  else if (killed === "cancel") footer = "[killed: cancelled]";
  else if (signal !== null) footer = `[killed by ${signal}]`;
  else footer = `[exit code ${code ?? "unknown"}]`;
  const isError = killed !== undefined || signal !== null || code !== 0;
  const firstLine = command.trim().split("\n")[0];
  const shown = firstLine.length > 60 ? `${firstLine.slice(0, 59)}…` : firstLine;
  const outcome = footer.slice(1, -1);
  return {
    output: text === "" ? footer : `${text}${text.endsWith("\n") ? "" : "\n"}${footer}`,
    isError,
    display: `$ ${shown}  (${outcome}, ${(durationMs / 1000).toFixed(1)} s)`,
    metadata: {
      exitCode: killed === undefined ? code : null,
      timedOut,
      durationMs,
      sandboxed: ending.sandboxed,
    },
  };
}

/** A duration in seconds, e.g. `2 s` or `0.3 s`. */
export function _seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

function _concat(chunks: readonly Uint8Array[], length?: number): Uint8Array {
  const out = new Uint8Array(length ?? chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}
