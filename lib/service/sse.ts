/**
 * A run's events as server-sent events: `id:` is the event's sequence number (so a client that
 * comes back sends `Last-Event-ID` and misses nothing still kept), `data:` the event (a
 * `ServiceEvent`) as JSON. A comment every 15 s keeps proxies from closing a quiet stream; the
 * stream ends with the run.
 *
 * @module
 */

import type { ServiceNotice } from "./events.ts";
import type { ServiceRun } from "./run.ts";

/** How often a quiet stream gets a keep-alive comment. */
const _PING_MS = 15_000;

/**
 * The bytes a stream holds for a client that does not take them: past this, it stops taking
 * events, and takes them again (from the run's own log) once the client has read its part.
 */
const _HELD_BYTES = 1 << 20;

/**
 * The SSE response that streams `run` from the event after `after`; `onDisconnect` hears when
 * the client goes away before the run ends.
 *
 * A client that reads slower than the run goes holds at most about 1 MiB here: the stream then
 * stops listening, and listens again from the last event it sent once the client has read, the
 * run's log giving it what it missed (a notice says so when the log no longer keeps some of it).
 */
export function sseResponse(
  run: ServiceRun,
  after: number,
  headers: Record<string, string>,
  onDisconnect?: () => void,
): Response {
  const encoder = new TextEncoder();
  let last = after;
  let ended = false;
  let ping: ReturnType<typeof setInterval> | undefined;
  // Stops the current listening, while the stream listens.
  let listening: (() => void) | undefined;
  const stop = () => {
    clearInterval(ping);
    listening?.();
  };
  // Listens from the last event sent, until the client holds enough unread.
  const attach = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    let full = false;
    let unlisten: (() => void) | undefined;
    const hold = () => {
      full = true;
      unlisten?.();
      unlisten = listening = undefined;
    };
    const send = (text: string) => {
      controller.enqueue(encoder.encode(text));
      if ((controller.desiredSize ?? 0) <= 0) hold();
    };
    const off = run.listen(last, {
      event(seq, event) {
        if (full) return;
        last = seq;
        send(`id: ${seq}\ndata: ${JSON.stringify(event)}\n\n`);
      },
      gap(first) {
        const missed = first - 1 - Math.max(0, last);
        const note: ServiceNotice = {
          type: "notice",
          kind: "error",
          message: `${missed === 1 ? "1 event is" : `${missed} events are`} no longer kept; ` +
            `the stream goes on from event ${first}`,
        };
        last = first - 1;
        send(`data: ${JSON.stringify(note)}\n\n`);
      },
      end() {
        if (full) return;
        ended = true;
        stop();
        controller.close();
      },
    });
    if (full || ended) off();
    else {
      unlisten = off;
      listening = hold;
    }
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      ping = setInterval(() => {
        if ((controller.desiredSize ?? 0) > 0) controller.enqueue(encoder.encode(": ping\n\n"));
      }, _PING_MS);
      attach(controller);
    },
    pull(controller) {
      if (!ended && listening === undefined) attach(controller);
    },
    cancel() {
      stop();
      if (run.running) onDisconnect?.();
    },
  }, new ByteLengthQueuingStrategy({ highWaterMark: _HELD_BYTES }));
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
      ...headers,
    },
  });
}
