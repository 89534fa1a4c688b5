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
 * The SSE response that streams `run` from the event after `after`; `onDisconnect` hears when
 * the client goes away before the run ends.
 */
export function sseResponse(
  run: ServiceRun,
  after: number,
  headers: Record<string, string>,
  onDisconnect?: () => void,
): Response {
  const encoder = new TextEncoder();
  let stop = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true;
      const ping = setInterval(() => controller.enqueue(encoder.encode(": ping\n\n")), _PING_MS);
      const unlisten = run.listen(after, {
        event(seq, event) {
          controller.enqueue(encoder.encode(`id: ${seq}\ndata: ${JSON.stringify(event)}\n\n`));
        },
        gap(first) {
          const missed = first - 1 - Math.max(0, after);
          const note: ServiceNotice = {
            type: "notice",
            kind: "error",
            message: `${missed === 1 ? "1 event is" : `${missed} events are`} no longer kept; ` +
              `the stream goes on from event ${first}`,
          };
          controller.enqueue(encoder.encode(`data: ${JSON.stringify(note)}\n\n`));
        },
        end() {
          open = false;
          stop();
          controller.close();
        },
      });
      stop = () => {
        clearInterval(ping);
        unlisten();
      };
      if (!open) stop();
    },
    cancel() {
      stop();
      if (run.running) onDisconnect?.();
    },
  });
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
      ...headers,
    },
  });
}
