/**
 * A run's events with their secrets redacted, for the service to send. An event is redacted
 * whole; the deltas of the answer and of the reasoning are held back from where a secret may
 * have begun (the word still going, a private key block not yet ended, the start of a known
 * secret) until it is whole, so that a key streamed in pieces is never sent in pieces. Past the
 * most that is held back (64 Ki characters of one word), what is let go still stops where a
 * known secret, a key-shaped token or the password of a URL may have begun.
 *
 * @module
 */

import type { AgentEvent } from "../events.ts";
import { redactValue } from "../secrets/redact.ts";
import type { ServiceEvent } from "./events.ts";

/**
 * Redacts the events of one run, in order. `E` is the union the run streams: the core's
 * {@link AgentEvent}, a run loop's events, or the service's; its deltas are the core's.
 */
export interface EventRedactor<E extends { type: string } = ServiceEvent> {
  /** What to send for `event`: the delta text it lets go, or what was held back and itself. */
  push(event: E): E[];
  /** What is still held back, as deltas (when the run ends). */
  flush(): E[];
}

/** A delta of the answer or the reasoning, as the core streams it. */
type _Delta = Extract<AgentEvent, { type: _DeltaType }>;

type _DeltaType = "text_delta" | "reasoning_delta";

/** The most delta text held back, in characters, however unfinished what it holds. */
const _MAX_HELD = 65_536;

/** Where the last word of a text starts: a secret may still be going on there. */
const _LAST_WORD = /[^\s"'`<>()[\]{},;]*$/;

/** The most of a key-shaped token held back past {@link _MAX_HELD}, in characters. */
const _MAX_TOKEN = 4_096;

/** The characters of the end of a text that may be the start of a key-shaped token. */
const _TOKEN_TAIL = /[A-Za-z0-9_.\-]*$/;

/** The end of a text that may be the user and the start of the password of a URL. */
const _URL_TAIL = /:\/\/[^\s/:@"\\]{0,256}(?::[^\s/@"\\]{0,256})?$/;

/**
 * An {@link EventRedactor} over `redact`. When `redact` lists its secrets (a `Redactor` does),
 * the start of one that holds spaces or quotes is held back too.
 *
 * @example
 * ```ts
 * import { eventRedactor } from "./redacted_events.ts";
 * import { secretRedactor } from "../secrets/redact.ts";
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
export function eventRedactor<E extends { type: string } = ServiceEvent>(
  redact: ((text: string) => string) & { readonly secrets?: readonly string[] },
): EventRedactor<E | _Delta> {
  // Known secrets that a word boundary may cut: their start must be held back as such.
  const secrets = redact.secrets ?? [];
  const spaced = secrets.filter((secret) => _LAST_WORD.exec(secret)!.index > 0);
  const held: Record<_DeltaType, string> = { text_delta: "", reasoning_delta: "" };

  const release = (type: _DeltaType, end: number): _Delta[] => {
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
      if (!_isDelta(event)) return [...flush(), redactValue(event, redact)];
      const other = event.type === "text_delta" ? "reasoning_delta" : "text_delta";
      const sent = release(other, held[other].length);
      held[event.type] += event.text;
      return [...sent, ...release(event.type, _safeEnd(held[event.type], spaced, secrets))];
    },
    flush,
  };
}

function _isDelta(event: { type: string }): event is _Delta {
  return event.type === "text_delta" || event.type === "reasoning_delta";
}

/**
 * How much of `text` can be redacted and sent now: up to where a secret may have begun. Past
 * {@link _MAX_HELD}, the most that is not the start of a secret.
 */
function _safeEnd(
  text: string,
  spaced: readonly string[],
  secrets: readonly string[],
): number {
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
  return text.length - end > _MAX_HELD ? _pendingStart(text, secrets) : end;
}

/**
 * Where a secret may have begun that `text` has not ended: the start of a known secret, of a
 * key-shaped token (at most {@link _MAX_TOKEN} characters back), or of the password of a URL;
 * never inside a known secret that is whole. The length of `text` when none is going on.
 */
function _pendingStart(text: string, secrets: readonly string[]): number {
  let start = text.length - _TOKEN_TAIL.exec(text.slice(-_MAX_TOKEN))![0].length;
  const url = _URL_TAIL.exec(text.slice(-520));
  if (url) start = Math.min(start, text.length - url[0].length);
  for (const secret of secrets) {
    for (let length = Math.min(secret.length - 1, text.length); length > 0; length--) {
      if (text.endsWith(secret.slice(0, length))) {
        start = Math.min(start, text.length - length);
        break;
      }
    }
  }
  // Sent up to there, a known secret that goes on past it would be sent in two pieces.
  for (let moved = true; moved;) {
    moved = false;
    for (const secret of secrets) {
      const at = text.lastIndexOf(secret, start - 1);
      if (at >= 0 && at < start && at + secret.length > start) {
        start = at;
        moved = true;
      }
    }
  }
  return start;
}
