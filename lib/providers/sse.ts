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
  let ended = false;
  try {
    while (true) {
      const { done, value } = await _read(reader, options);
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
    if (!ended) reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

function _read(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  { idleTimeoutMs, provider }: ReadSseOptions,
): Promise<ReadableStreamReadResult<Uint8Array>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(
        new ProviderError(`${provider} sent nothing for ${idleTimeoutMs} ms; the stream stalled`, {
          retryable: true,
        }),
      );
    }, idleTimeoutMs);
    reader.read().then(resolve, reject).finally(() => clearTimeout(timer));
  });
}
