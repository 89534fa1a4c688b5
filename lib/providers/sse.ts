/**
 * Server-sent events from a response body, with an idle timeout: a stream that goes silent
 * (not even a keep-alive comment) for too long is an error, not a hang.
 *
 * A body from `fetch` is read into one buffer of the reader's own, over and over ("bring your
 * own buffer"): its default reader gives each piece of the body in a buffer of 64 KiB of its
 * own, zeroed first, and a server that streams one small event per piece (most do, one per
 * token) then costs a large allocation, and the garbage collections that follow, per token.
 *
 * @module
 */

import { createParser, type EventSourceMessage } from "eventsource-parser";
import { ProviderError } from "../errors.ts";

/** Options of {@link readSse}. */
export interface ReadSseOptions {
  /** The longest silence allowed between two pieces of the body. */
  idleTimeoutMs: number;
  /** Names the provider in errors. */
  provider: string;
}

/**
 * Yields the events of an SSE body. An event still open when the body ends is delivered, as
 * some servers omit the last blank line.
 *
 * @example
 * ```ts
 * import { readSse } from "./sse.ts";
 * const body = new Response(": ping\n\ndata: {\"a\":1}\n\ndata: [DONE]").body!;
 * const data = [];
 * for await (const event of readSse(body, { idleTimeoutMs: 1_000, provider: "test" })) {
 *   data.push(event.data);
 * }
 * if (data.join() !== '{"a":1},[DONE]') throw new Error("unexpected");
 * ```
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  options: ReadSseOptions,
): AsyncGenerator<EventSourceMessage> {
  const sse = _sseReading(body, options);
  try {
    while (true) {
      const events = sse.events(await sse.read());
      for (let i = 0; i < events.length; i++) yield events[i];
      if (sse.ended) return;
    }
  } finally {
    sse.close();
  }
}

/**
 * Yields the events of an SSE body as {@link readSse} does, in batches: the events each piece
 * of the body completed, together (never an empty batch). A reader that handles each event
 * without waiting saves a step per event.
 *
 * @example
 * ```ts
 * import { readSseBatches } from "./sse.ts";
 * const body = new Response("data: 1\n\ndata: 2\n\n").body!;
 * const batches = [];
 * for await (const events of readSseBatches(body, { idleTimeoutMs: 1_000, provider: "test" })) {
 *   batches.push(events.map((event) => event.data).join());
 * }
 * if (batches.join("|") !== "1,2") throw new Error(batches.join("|"));
 * ```
 */
export async function* readSseBatches(
  body: ReadableStream<Uint8Array>,
  options: ReadSseOptions,
): AsyncGenerator<EventSourceMessage[]> {
  const sse = _sseReading(body, options);
  try {
    while (true) {
      const events = sse.events(await sse.read());
      if (events.length > 0) yield events;
      if (sse.ended) return;
    }
  } finally {
    sse.close();
  }
}

/**
 * An event's data read as JSON, or `undefined` when it is not JSON (a keep-alive, a stray line).
 *
 * @example
 * ```ts
 * import { eventJson } from "./sse.ts";
 * const data = eventJson('{"a":1}') as { a: number };
 * if (data.a !== 1 || eventJson("[DONE") !== undefined) throw new Error("unexpected");
 * ```
 */
export function eventJson(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

/** How much of the body one read takes at most: the size `fetch`'s own reader uses. */
const _CHUNK = 65_536;

/**
 * The buffers of streams that ended, for the next ones: a model call then allocates none (with
 * many calls at once, the garbage of one 64 KiB buffer per call is what fills the memory).
 */
const _buffers: ArrayBuffer[] = [];

/** Buffers kept at most (4 MiB). */
const _MAX_BUFFERS = 64;

/** One SSE body being read: a piece at a time, each piece parsed into the events it completes. */
interface _SseReading {
  /** Reads the next piece of the body. */
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** The events a piece completes (a fresh list each time); throws when the stream stalled. */
  events(piece: ReadableStreamReadResult<Uint8Array>): EventSourceMessage[];
  /** Whether the body has ended. */
  readonly ended: boolean;
  /** Stops the watchdog, and the body when it has not ended. */
  close(): void;
}

function _sseReading(body: ReadableStream<Uint8Array>, options: ReadSseOptions): _SseReading {
  let queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => queue.push(event) });
  const decoder = new TextDecoder();
  // A byte stream (a `fetch` body) is read into one buffer, handed over to the stream at each
  // read and handed back with what it read; another stream gives its pieces as they come.
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // not a byte stream
  }
  const given = byob ? undefined : body.getReader();
  const reader = byob ?? given!;
  let buffer = byob ? _buffers.pop() ?? new ArrayBuffer(_CHUNK) : undefined;
  // One watchdog per stream, re-armed for what is left of the silence allowed.
  const { idleTimeoutMs, provider } = options;
  let last = performance.now();
  let reading = false;
  let stalled: ProviderError | undefined;
  const watchdog = () => {
    // Only silence counts: not the time the consumer takes between two reads.
    const idle = reading ? performance.now() - last : 0;
    if (idle < idleTimeoutMs) {
      timer = setTimeout(watchdog, idleTimeoutMs - idle);
      return;
    }
    stalled = new ProviderError(
      `${provider} sent nothing for ${idleTimeoutMs} ms; the stream stalled`,
      { retryable: true },
    );
    reader.cancel(stalled).catch(() => {});
  };
  let timer = setTimeout(watchdog, idleTimeoutMs);
  let ended = false;
  return {
    read() {
      last = performance.now();
      reading = true;
      return byob
        ? byob.read(new Uint8Array(buffer!)) as Promise<ReadableStreamReadResult<Uint8Array>>
        : given!.read();
    },
    events({ done, value }) {
      reading = false;
      // The buffer comes back with what was read, and at the end with nothing in it.
      if (byob && value) buffer = value.buffer as ArrayBuffer;
      if (stalled) throw stalled;
      if (done) {
        ended = true;
        parser.feed(`${decoder.decode()}\n\n`);
      } else {
        parser.feed(decoder.decode(value, { stream: true }));
      }
      const events = queue;
      if (events.length > 0) queue = [];
      return events;
    },
    get ended() {
      return ended;
    },
    close() {
      clearTimeout(timer);
      if (!ended) reader.cancel().catch(() => {});
      reader.releaseLock();
      // Kept for the next stream, unless it is still handed over to a read cut short.
      if (buffer?.byteLength === _CHUNK && _buffers.length < _MAX_BUFFERS) _buffers.push(buffer);
      buffer = undefined;
    },
  };
}
