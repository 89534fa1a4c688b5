/**
 * The JSON body of `GET /v1/sessions/{id}`, written as the session is read: the header's fields,
 * `messages` one by one, then the current `model` and the last `compaction` (known only at the
 * end). Entries are read only as fast as the client takes the body, so a read holds about one
 * chunk of output and one entry, however large the session. Every value goes through the
 * redactor, as every JSON answer of the service does.
 *
 * @module
 */

import type { CompactionState } from "../compaction_state.ts";
import { redactValue } from "../secrets/redact.ts";
import type { SessionReader } from "../session/mod.ts";

/** Output gathered before it is handed on, in characters. */
const CHUNK_CHARS = 64 * 1024;

/** Options of {@link sessionBody}. */
export interface SessionBodyOptions {
  /** Replaces the secrets in a text (default: none). */
  redact?: (text: string) => string;
  /** Called once when the body ends: sent whole, failed, cancelled by the client, or stopped. */
  onEnd?: () => void;
  /** Stops the body where it is (the client gets it cut short), e.g. when the service stops. */
  signal?: AbortSignal;
}

/**
 * The session `reader` reads, as the stream of a JSON object: `{ ...header, messages, model,
 * compaction? }`, the same as the session loaded whole and written with `JSON.stringify`. The
 * reader is closed when the body ends.
 *
 * @example
 * ```ts
 * import { sessionBody } from "./session_body.ts";
 * import { readListedSession } from "./session_read.ts";
 * import { memorySessionStore } from "../session/mod.ts";
 * const store = memorySessionStore();
 * const writer = await store.create({ id: "s1", cwd: "/w", model: "a/b" });
 * const at = "2025-01-01T00:00:00Z";
 * await writer.append({ type: "message", message: { role: "user", content: "key sk-1" }, at });
 * await writer.append({ type: "model", model: "a/c", at });
 * await writer.close();
 * const redact = (text: string) => text.replaceAll("sk-1", "[redacted]");
 * const reader = await readListedSession(store, "/w", "s1");
 * const body = await new Response(sessionBody(reader, { redact })).json();
 * if (body.id !== "s1" || body.model !== "a/c" || body.messages[0].content !== "key [redacted]") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function sessionBody(
  reader: SessionReader,
  options: SessionBodyOptions = {},
): ReadableStream<Uint8Array> {
  const { redact } = options;
  const clean = <T>(value: T): T => redact ? redactValue(value, redact) : value;
  const encoder = new TextEncoder();
  const entries = reader[Symbol.asyncIterator]();
  const { model: first, ...header } = reader.header;
  let model = first;
  let compaction: CompactionState | undefined;
  let messages = 0;
  let started = false;
  let ended = false;
  let stop = () => {};
  const end = () => {
    if (ended) return;
    ended = true;
    options.signal?.removeEventListener("abort", stop);
    reader.close().catch(() => {});
    options.onEnd?.();
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      stop = () => {
        if (ended) return;
        end();
        controller.error(new Error("The service stopped sending the session"));
      };
      if (options.signal?.aborted) stop();
      else options.signal?.addEventListener("abort", stop, { once: true });
    },
    async pull(controller) {
      if (ended) return;
      try {
        let out = "";
        if (!started) {
          started = true;
          out = `${JSON.stringify(clean(header)).slice(0, -1)},"messages":[`;
        }
        while (out.length < CHUNK_CHARS) {
          const step = await entries.next();
          if (step.done) {
            out += `],"model":${JSON.stringify(clean(model))}` +
              (compaction ? `,"compaction":${JSON.stringify(clean(compaction))}` : "") + "}";
            controller.enqueue(encoder.encode(out));
            controller.close();
            end();
            return;
          }
          const entry = step.value;
          if (entry.type === "message") {
            out += (messages++ ? "," : "") + JSON.stringify(clean(entry.message));
          } else if (entry.type === "compaction") compaction = entry.state;
          else model = entry.model;
        }
        controller.enqueue(encoder.encode(out));
      } catch (error) {
        end();
        controller.error(error);
      }
    },
    async cancel() {
      end();
      await entries.return?.();
    },
  }, { highWaterMark: 0 });
}
