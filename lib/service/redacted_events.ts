/**
 * A run's events with their secrets redacted, for the service to send. An event is redacted
 * whole; the deltas of the answer and of the reasoning are held back from where a secret may
 * have begun (the word still going, a private key block not yet ended, the start of a known
 * secret) until it is whole, so that a key streamed in pieces is never sent in pieces.
 *
 * @module
 */

import type { AgentEvent } from "../events.ts";
import { redactValue } from "../session/redact.ts";

/** Redacts the events of one run, in order. */
export interface EventRedactor {
  /** What to send for `event`: the delta text it lets go, or what was held back and itself. */
  push(event: AgentEvent): AgentEvent[];
  /** What is still held back, as deltas (when the run ends). */
  flush(): AgentEvent[];
}

type _DeltaType = "text_delta" | "reasoning_delta";

/** The most delta text held back, in characters, however unfinished what it holds. */
const _MAX_HELD = 65_536;

/** Where the last word of a text starts: a secret may still be going on there. */
const _LAST_WORD = /[^\s"'`<>()[\]{},;]*$/;

/**
 * An {@link EventRedactor} over `redact`. When `redact` lists its secrets (a `Redactor` does),
 * the start of one that holds spaces or quotes is held back too.
 *
 * @example
 * ```ts
 * import { eventRedactor } from "./redacted_events.ts";
 * import { secretRedactor } from "../session/redact.ts";
 * const events = eventRedactor(secretRedactor(["corp-secret-1"]));
 * const sent = [
 *   ...events.push({ type: "text_delta", text: "The key is corp-sec" }),
 *   ...events.push({ type: "text_delta", text: "ret-1, done." }),
 *   ...events.flush(),
 * ];
 * const text = sent.map((event) => event.type === "text_delta" ? event.text : "").join("");
 * if (text !== "The key is [redacted], done.") throw new Error(text);
 * ```
 */
export function eventRedactor(
  redact: ((text: string) => string) & { readonly secrets?: readonly string[] },
): EventRedactor {
  // Known secrets that a word boundary may cut: their start must be held back as such.
  const spaced = (redact.secrets ?? []).filter((secret) => _LAST_WORD.exec(secret)!.index > 0);
  const held: Record<_DeltaType, string> = { text_delta: "", reasoning_delta: "" };

  const release = (type: _DeltaType, end: number): AgentEvent[] => {
    const text = held[type].slice(0, end);
    held[type] = held[type].slice(end);
    return text ? [{ type, text: redact(text) }] : [];
  };
  const flush = () => [
    ...release("text_delta", held.text_delta.length),
    ...release("reasoning_delta", held.reasoning_delta.length),
  ];
  return {
    push(event) {
      if (event.type !== "text_delta" && event.type !== "reasoning_delta") {
        return [...flush(), redactValue(event, redact)];
      }
      const other = event.type === "text_delta" ? "reasoning_delta" : "text_delta";
      const sent = release(other, held[other].length);
      held[event.type] += event.text;
      return [...sent, ...release(event.type, _safeEnd(held[event.type], spaced))];
    },
    flush,
  };
}

/** How much of `text` can be redacted and sent now: up to where a secret may have begun. */
function _safeEnd(text: string, spaced: readonly string[]): number {
  let end = _LAST_WORD.exec(text)!.index;
  const begin = text.lastIndexOf("-----BEGIN");
  if (begin >= 0 && !text.includes("-----END", begin)) end = Math.min(end, begin);
  for (const secret of spaced) {
    for (let length = Math.min(secret.length - 1, text.length); length > 0; length--) {
      if (text.endsWith(secret.slice(0, length))) {
        end = Math.min(end, text.length - length);
        break;
      }
    }
  }
  return text.length - end > _MAX_HELD ? text.length : end;
}
