/**
 * OpenRouter's `reasoning_details`: the reasoning of Anthropic, Gemini and OpenAI models behind
 * OpenRouter, in pieces (`reasoning.text` with its `signature`, `reasoning.summary`,
 * `reasoning.encrypted` with its `data`), each with an `id`, a `format` and an `index`. The
 * model needs them back, whole and unchanged, on the next turn's assistant message; a stream
 * sends each piece in deltas that share its `index`.
 *
 * @module
 */

/** One entry of `reasoning_details`, as the server sent it. */
export type ReasoningDetail = Record<string, unknown>;

/** Collects the `reasoning_details` deltas of one answer; see {@link reasoningDetails}. */
export interface ReasoningDetails {
  /** Merges one delta's details in; gives the reasoning text they show. */
  push(details: unknown): string;
  /** The details so far, one entry per piece. */
  readonly list: ReasoningDetail[];
}

/**
 * A collector of the `reasoning_details` deltas of one answer. Deltas of one piece (the same
 * `index`, or without an index the same type right after it) are merged: their `text`,
 * `summary` and `data` joined, a `signature` kept when it comes, the other fields kept as they
 * first came. Entries that are not objects are left out.
 *
 * @example
 * ```ts
 * import { reasoningDetails } from "./reasoning_details.ts";
 * const details = reasoningDetails();
 * details.push([{ type: "reasoning.text", text: "Let me ", index: 0, format: "anthropic-claude-v1" }]);
 * const shown = details.push([{ type: "reasoning.text", text: "think.", signature: "sig", index: 0 }]);
 * if (shown !== "think." || details.list.length !== 1) throw new Error("unexpected");
 * if (details.list[0].text !== "Let me think." || details.list[0].signature !== "sig") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function reasoningDetails(): ReasoningDetails {
  const list: ReasoningDetail[] = [];
  const push = (details: unknown): string => {
    if (!Array.isArray(details)) return "";
    let shown = "";
    for (const detail of details) {
      if (detail === null || typeof detail !== "object" || Array.isArray(detail)) continue;
      const piece = detail as ReasoningDetail;
      shown += _string(piece.text) || _string(piece.summary);
      const same = _pieceOf(list, piece);
      if (same) _merge(same, piece);
      else list.push({ ...piece });
    }
    return shown;
  };
  return { push, list };
}

/** The entry `piece` continues: the one of its index and type, or without an index the last. */
function _pieceOf(list: ReasoningDetail[], piece: ReasoningDetail): ReasoningDetail | undefined {
  if (typeof piece.index === "number") {
    return list.findLast((entry) => entry.index === piece.index && entry.type === piece.type);
  }
  const last = list.at(-1);
  return last && last.index === undefined && last.type === piece.type &&
      piece.type !== "reasoning.encrypted"
    ? last
    : undefined;
}

function _merge(entry: ReasoningDetail, piece: ReasoningDetail): void {
  for (const [key, value] of Object.entries(piece)) {
    if (value === null || value === undefined) continue;
    if (key === "text" || key === "summary" || key === "data") {
      entry[key] = _string(entry[key]) + _string(value);
    } else if (key === "signature") {
      if (value !== "") entry[key] = value;
    } else if (entry[key] === null || entry[key] === undefined) {
      entry[key] = value;
    }
  }
}

function _string(value: unknown): string {
  return typeof value === "string" ? value : "";
}
