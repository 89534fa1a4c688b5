/**
 * Reasoning that a Chat Completions server streams in pieces the model needs back, whole and
 * unchanged, on the next turn's assistant message:
 *
 * - OpenRouter's `reasoning_details`, for Anthropic, Gemini and OpenAI models behind it:
 *   `reasoning.text` with its `signature`, `reasoning.summary`, `reasoning.encrypted` with its
 *   `data`, each with an `id`, a `format` and an `index` that its deltas share;
 * - a LiteLLM proxy's `thinking_blocks`, for Claude: `thinking` with its `signature`, and
 *   `redacted_thinking` with its `data`.
 *
 * @module
 */

/** One piece, as the server sent it. */
export type ReasoningPiece = Record<string, unknown>;

/** Collects the pieces of one answer; see {@link reasoningPieces}. */
export interface ReasoningPieces {
  /** Merges one delta's pieces in; gives the reasoning text they show. */
  push(pieces: unknown): string;
  /** The pieces so far, one entry each. */
  readonly list: ReasoningPiece[];
}

/**
 * A collector of the reasoning pieces of one answer. Deltas of one piece are merged: those of
 * the same `index` and type, or without an index those of the same type that follow a piece
 * not yet signed. Their `text`, `summary`, `thinking` and `data` are joined, a `signature` is
 * kept when it comes, the other fields stay as they first came. Entries that are not objects
 * are left out.
 *
 * @example
 * ```ts
 * import { reasoningPieces } from "./reasoning_pieces.ts";
 * const details = reasoningPieces();
 * details.push([{ type: "reasoning.text", text: "Let me ", index: 0, format: "anthropic-claude-v1" }]);
 * const shown = details.push([{ type: "reasoning.text", text: "think.", signature: "sig", index: 0 }]);
 * if (shown !== "think." || details.list.length !== 1) throw new Error("unexpected");
 * if (details.list[0].text !== "Let me think." || details.list[0].signature !== "sig") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function reasoningPieces(): ReasoningPieces {
  const list: ReasoningPiece[] = [];
  const push = (pieces: unknown): string => {
    if (!Array.isArray(pieces)) return "";
    let shown = "";
    for (const item of pieces) {
      if (item === null || typeof item !== "object" || Array.isArray(item)) continue;
      const piece = item as ReasoningPiece;
      shown += _string(piece.text) || _string(piece.summary) || _string(piece.thinking);
      const same = _pieceOf(list, piece);
      if (same) _merge(same, piece);
      else list.push({ ...piece });
    }
    return shown;
  };
  return { push, list };
}

/** Pieces that come whole, one per delta: never merged without an index. */
const _WHOLE = new Set(["reasoning.encrypted", "redacted_thinking"]);

/** The entry `piece` continues, if any. */
function _pieceOf(list: ReasoningPiece[], piece: ReasoningPiece): ReasoningPiece | undefined {
  if (typeof piece.index === "number") {
    return list.findLast((entry) => entry.index === piece.index && entry.type === piece.type);
  }
  const last = list.at(-1);
  const open = last !== undefined && last.index === undefined && last.type === piece.type &&
    !_WHOLE.has(String(piece.type)) && !_string(last.signature);
  return open ? last : undefined;
}

function _merge(entry: ReasoningPiece, piece: ReasoningPiece): void {
  for (const [key, value] of Object.entries(piece)) {
    if (value === null || value === undefined) continue;
    if (key === "text" || key === "summary" || key === "thinking" || key === "data") {
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
