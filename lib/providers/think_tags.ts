/**
 * Splits reasoning out of answer text for servers that put it inline as `<think>…</think>`
 * (reasoning models served without a reasoning parser). Tags may be split across chunks.
 *
 * @module
 */

const OPEN = "<think>";
const CLOSE = "</think>";

/** A piece of streamed content, routed to the answer or to the reasoning. */
export interface ContentPiece {
  /** Where it goes. */
  kind: "text" | "reasoning";
  /** The text. */
  text: string;
}

/**
 * A streaming splitter: only a `<think>` at the very start of the content (after whitespace)
 * opens reasoning, so answers that merely mention the tag are left alone.
 *
 * @example
 * ```ts
 * import { thinkTagSplitter } from "./think_tags.ts";
 * const split = thinkTagSplitter();
 * const pieces = ["<thi", "nk>plan</th", "ink>", "\n\n", "Hi"].flatMap((c) => split.push(c));
 * const text = pieces.filter((p) => p.kind === "text").map((p) => p.text).join("");
 * const reasoning = pieces.filter((p) => p.kind === "reasoning").map((p) => p.text).join("");
 * if (text !== "Hi" || reasoning !== "plan") throw new Error("unexpected");
 * ```
 */
export function thinkTagSplitter(): {
  push(chunk: string): ContentPiece[];
  end(): ContentPiece[];
} {
  let state: "start" | "thinking" | "after" | "text" = "start";
  let held = "";

  const push = (chunk: string): ContentPiece[] => {
    if (state === "after") {
      // The whitespace between the reasoning and the answer belongs to neither.
      chunk = chunk.replace(/^\s+/, "");
      if (!chunk) return [];
      state = "text";
    }
    if (state === "text") return [{ kind: "text", text: chunk }];
    held += chunk;
    if (state === "start") {
      const trimmed = held.trimStart();
      if (trimmed.length < OPEN.length && OPEN.startsWith(trimmed)) return [];
      if (!trimmed.startsWith(OPEN)) {
        state = "text";
        const text = held;
        held = "";
        return [{ kind: "text", text }];
      }
      state = "thinking";
      held = trimmed.slice(OPEN.length);
    }
    const close = held.indexOf(CLOSE);
    if (close >= 0) {
      const reasoning = held.slice(0, close);
      const rest = held.slice(close + CLOSE.length).replace(/^\s+/, "");
      state = rest ? "text" : "after";
      held = "";
      return _pieces(reasoning, rest);
    }
    // Hold back a tail that may be the start of the closing tag.
    let keep = 0;
    for (let n = Math.min(CLOSE.length - 1, held.length); n > 0; n--) {
      if (CLOSE.startsWith(held.slice(-n))) {
        keep = n;
        break;
      }
    }
    const reasoning = held.slice(0, held.length - keep);
    held = held.slice(held.length - keep);
    return reasoning ? [{ kind: "reasoning", text: reasoning }] : [];
  };

  const end = (): ContentPiece[] => {
    const rest = held;
    held = "";
    if (!rest) return [];
    return [{ kind: state === "thinking" ? "reasoning" : "text", text: rest }];
  };

  return { push, end };
}

function _pieces(reasoning: string, text: string): ContentPiece[] {
  const pieces: ContentPiece[] = [];
  if (reasoning) pieces.push({ kind: "reasoning", text: reasoning });
  if (text) pieces.push({ kind: "text", text });
  return pieces;
}
