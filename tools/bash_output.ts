/**
 * The output of a shell command, read as it comes and kept to its head and tail, so that any
 * amount of output fits.
 *
 * @module
 */

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
      const cut = total - headLength - kept.length;
      if (cut <= 0) return new TextDecoder().decode(_concat([head.subarray(0, headLength), kept]));
      // Decode each side on its own, dropping a character split by the cut.
      const start = new TextDecoder().decode(head.subarray(0, headLength), { stream: true });
      let skip = 0;
      while (skip < 3 && skip < kept.length && (kept[skip] & 0xc0) === 0x80) skip++;
      const end = new TextDecoder().decode(kept.subarray(skip));
      return `${start}\n\n[… ${counted(cut + skip, "byte")} of output cut …]\n\n${end}`;
    },
  };
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
