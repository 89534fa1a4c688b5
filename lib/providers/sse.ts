/**
 * Server-sent events from a response body, with an idle timeout: a stream that goes silent
 * (not even a keep-alive comment) for too long is an error, not a hang.
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
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => queue.push(event) });
  const decoder = new TextDecoder();
  const reader = body.getReader();
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
  try {
    while (true) {
      last = performance.now();
      reading = true;
      const { done, value } = await reader.read();
      reading = false;
      if (stalled) throw stalled;
      if (done) {
        ended = true;
        parser.feed(`${decoder.decode()}\n\n`);
      } else {
        parser.feed(decoder.decode(value, { stream: true }));
      }
      for (let i = 0; i < queue.length; i++) yield queue[i];
      queue.length = 0;
      if (done) return;
    }
  } finally {
    clearTimeout(timer);
    if (!ended) reader.cancel().catch(() => {});
    reader.releaseLock();
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
