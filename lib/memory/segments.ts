/**
 * How a run loop is cut into segments for the memory: one per user message, reasoning text, tool
 * call, tool result and response, long texts cut further into overlapping chunks.
 *
 * @module
 */

import type { Iteration, RunLoop, Segment, SegmentType } from "./types.ts";

/** The longest chunk, in characters (UTF-16 code units). */
export const CHUNK_SIZE = 1500;

/** How many characters of a chunk's end the next chunk repeats (about; it starts at a word). */
export const CHUNK_OVERLAP = 150;

/**
 * The most of one text (a message, a tool's input or result) kept in memory, in characters: a
 * longer one keeps its first three quarters and last quarter of this, with a note of how much
 * was left out between. Memory is for recalling what happened, not a copy of every output; a
 * 10 MB tool result would otherwise cost thousands of segments and seconds of indexing.
 */
export const MAX_ARCHIVED_TEXT = 64 * 1024;

/** Options of {@link chunkText}. */
export interface ChunkOptions {
  /** The longest chunk (default {@link CHUNK_SIZE}). */
  size?: number;
  /** The overlap between chunks (default {@link CHUNK_OVERLAP}; less than half of `size`). */
  overlap?: number;
}

/**
 * Cuts a text into chunks of at most `size` characters, each ending on the best boundary in its
 * second half: a blank line, else a line end, else a sentence end, else a space, else anywhere
 * (never inside a surrogate pair). Each chunk after the first starts about `overlap` characters
 * before the previous one ended, at a word. A text that fits is returned whole.
 *
 * @example
 * ```ts
 * import { chunkText } from "./segments.ts";
 * const text = "First paragraph here.\n\nSecond paragraph, a little longer.";
 * const chunks = chunkText(text, { size: 40, overlap: 0 });
 * if (chunks.length !== 2 || chunks[0] !== "First paragraph here.") throw new Error("unexpected");
 * ```
 */
export function chunkText(text: string, options: ChunkOptions = {}): string[] {
  const size = options.size ?? CHUNK_SIZE;
  const overlap = options.overlap ?? CHUNK_OVERLAP;
  if (!Number.isInteger(size) || size < 2) throw new RangeError(`Bad chunk size ${size}`);
  if (!Number.isInteger(overlap) || overlap < 0 || overlap * 2 >= size) {
    throw new RangeError(`Bad chunk overlap ${overlap}: use 0 to less than half the size`);
  }
  if (text.length <= size) return [text];
  const chunks: string[] = [];
  let start = 0;
  while (start < text.length) {
    if (text.length - start <= size) {
      chunks.push(text.slice(start));
      break;
    }
    const end = _breakAt(text, start, start + size);
    chunks.push(text.slice(start, end).trimEnd());
    let next = Math.max(end - overlap, start + 1);
    if (overlap > 0) {
      // Start the overlap at a word: after the first space in it, if there is one.
      const space = text.slice(next, end).search(/\s/);
      next = space >= 0 ? next + space : end;
    }
    while (next < text.length && /\s/.test(text[next])) next++;
    start = next;
  }
  return chunks;
}

/** Where a chunk from `start` should end, at most at `limit`. */
function _breakAt(text: string, start: number, limit: number): number {
  const floor = start + Math.floor((limit - start) / 2);
  const window = text.slice(floor, limit);
  for (const boundary of [/\n[ \t]*\n/g, /\n/g, /[.!?…][)"'\]]*\s/g, /\s/g]) {
    let last = -1;
    for (const match of window.matchAll(boundary)) last = match.index + match[0].length;
    if (last > 0) return floor + last;
  }
  const code = text.charCodeAt(limit - 1);
  return code >= 0xd800 && code <= 0xdbff ? limit - 1 : limit;
}

/**
 * The segments of a run loop, in order through its iterations: the user message, each reasoning
 * text, each tool call followed by its result (so that reading around a call shows what it
 * returned), results left without a call, then the response. Empty texts are skipped; the goal
 * stands for the first user message when the first iteration has none. A tool call reads
 * `name {"compact":"json"}`, a result `name: output` (`name (error): output` when it failed),
 * and every chunk of a long one keeps that prefix. Anchors count segments from 0 through the
 * whole run loop; the response is dated at the iteration's end, the rest at its start.
 *
 * @example
 * ```ts
 * import { segmentRunLoop } from "./segments.ts";
 * const segments = segmentRunLoop({
 *   id: "r1", goal: "List files", status: "completed", createdAt: "2025-01-01T00:00:00Z",
 *   iterations: [{
 *     index: 0, userMessage: "List files", reasoning: [], response: "Two files.",
 *     toolCalls: [{ id: "c1", name: "ls", input: { path: "." } }],
 *     toolResults: [{ id: "c1", name: "ls", output: "a.ts\nb.ts", isError: false }],
 *     startedAt: "2025-01-01T00:00:00Z", endedAt: "2025-01-01T00:00:05Z",
 *   }],
 * });
 * const texts = segments.map((segment) => `${segment.anchor.type}: ${segment.text}`);
 * const expected = ['user: List files', 'tool_call: ls {"path":"."}', "tool_result: ls: a.ts\nb.ts",
 *   "response: Two files."];
 * if (texts.join("|") !== expected.join("|")) throw new Error("unexpected");
 * ```
 */
export function segmentRunLoop(loop: RunLoop, options: ChunkOptions = {}): Segment[] {
  _check(loop);
  const segments: Segment[] = [];
  for (const [position, iteration] of loop.iterations.entries()) {
    const add = (type: SegmentType, text: string, prefix = "", timestamp = iteration.startedAt) => {
      if (!text.trim()) return;
      for (const chunk of chunkText(_bounded(text), options)) {
        segments.push({
          anchor: {
            runLoopId: loop.id,
            iteration: iteration.index ?? position,
            segment: segments.length,
            type,
            timestamp,
          },
          text: prefix + chunk,
        });
      }
    };
    const user = iteration.userMessage ?? (position === 0 ? loop.goal : undefined);
    if (user) add("user", user);
    for (const text of iteration.reasoning) add("reasoning", text);
    for (const [call, result] of _pairs(iteration)) {
      if (call) add("tool_call", _json(call.input), `${call.name} `);
      if (result) {
        add("tool_result", result.output, `${result.name}${result.isError ? " (error)" : ""}: `);
      }
    }
    add("response", iteration.response, "", iteration.endedAt ?? iteration.startedAt);
  }
  return segments;
}

type _Call = Iteration["toolCalls"][number];
type _Result = Iteration["toolResults"][number];

/** Each call with its result (by id, else by position), then the results no call claimed. */
function _pairs(iteration: Iteration): Array<[_Call | undefined, _Result | undefined]> {
  const { toolCalls: calls, toolResults: results } = iteration;
  const callIds = new Set(calls.map((call) => call.id));
  const taken = new Set<number>();
  const pairs: Array<[_Call | undefined, _Result | undefined]> = [];
  for (const [i, call] of calls.entries()) {
    let at = results.findIndex((result, k) => !taken.has(k) && result.id === call.id);
    if (at < 0 && i < results.length && !taken.has(i) && !callIds.has(results[i].id)) at = i;
    if (at >= 0) taken.add(at);
    pairs.push([call, at >= 0 ? results[at] : undefined]);
  }
  for (const [k, result] of results.entries()) if (!taken.has(k)) pairs.push([undefined, result]);
  return pairs;
}

/** At most {@link MAX_ARCHIVED_TEXT} characters of a text: its head and tail, never a half pair. */
function _bounded(text: string): string {
  if (text.length <= MAX_ARCHIVED_TEXT) return text;
  const note = (left: number) => `\n[… ${left} characters left out …]\n`;
  let head = Math.floor(MAX_ARCHIVED_TEXT * 0.75);
  let tail = text.length - (MAX_ARCHIVED_TEXT - head);
  if (_lowSurrogate(text.charCodeAt(head))) head--;
  if (_lowSurrogate(text.charCodeAt(tail))) tail++;
  return text.slice(0, head) + note(tail - head) + text.slice(tail);
}

function _lowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function _json(value: unknown): string {
  try {
    return JSON.stringify(value ?? {}) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A `TypeError` for what is not a run loop. */
function _check(loop: RunLoop): void {
  if (!loop || typeof loop !== "object") throw new TypeError("Not a run loop");
  if (typeof loop.id !== "string" || !loop.id) throw new TypeError("A run loop needs an id");
  if (typeof loop.status !== "string" || typeof loop.createdAt !== "string") {
    throw new TypeError(`Run loop ${loop.id} needs a status and createdAt`);
  }
  if (!Array.isArray(loop.iterations)) {
    throw new TypeError(`Run loop ${loop.id} needs an iterations array`);
  }
  for (const [i, it] of loop.iterations.entries()) {
    const arrays = [it?.reasoning, it?.toolCalls, it?.toolResults];
    if (typeof it?.startedAt !== "string" || !arrays.every(Array.isArray)) {
      throw new TypeError(
        `Iteration ${i} of run loop ${loop.id} needs startedAt, reasoning, toolCalls, toolResults`,
      );
    }
  }
}
