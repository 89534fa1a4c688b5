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
 * A server decides how many pieces come and how large they are, so the collector finds the
 * piece a delta continues in constant time and keeps only so much: past its limits it keeps
 * nothing of the answer's pieces (the reasoning text they show still streams), and the next
 * turn goes without them rather than a conversation made too heavy to send.
 *
 * @module
 */

/** One piece, as the server sent it. */
export type ReasoningPiece = Record<string, unknown>;

/** Collects the pieces of one answer; see {@link reasoningPieces}. */
export interface ReasoningPieces {
  /** Merges one delta's pieces in; gives the reasoning text they show. */
  push(pieces: unknown): string;
  /** The pieces so far, one entry each; emptied for good once the limits are passed. */
  readonly list: ReasoningPiece[];
  /** Whether the pieces passed the limits, so that none are kept. */
  readonly dropped: boolean;
}

/** Limits of {@link reasoningPieces}. */
export interface ReasoningPiecesOptions {
  /** The most pieces kept (default {@link MAX_REASONING_PIECES}). */
  maxPieces?: number;
  /**
   * The most characters kept, counted as the pieces' JSON (default
   * {@link MAX_REASONING_CHARS}).
   */
  maxChars?: number;
}

/** The most reasoning pieces one answer keeps: far more than a real answer sends. */
export const MAX_REASONING_PIECES = 10_000;

/** The most characters of reasoning pieces one answer keeps (about 8 MB). */
export const MAX_REASONING_CHARS = 8_000_000;

/**
 * A collector of the reasoning pieces of one answer. Deltas of one piece are merged: those of
 * the same `index` and type, or without an index those of the same type that follow a piece
 * not yet signed. Their `text`, `summary`, `thinking` and `data` are joined, a `signature` is
 * kept when it comes, the other fields stay as they first came. Entries that are not objects
 * are left out. Past `maxPieces` pieces or `maxChars` characters the list is emptied and stays
 * empty: the answer's pieces are not kept at all, since a part of them is of no use.
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
 *
 * const few = reasoningPieces({ maxPieces: 2 });
 * few.push([{ type: "reasoning.text", text: "a", index: 0 }, { type: "reasoning.text", text: "b", index: 1 }]);
 * if (few.push([{ type: "reasoning.text", text: "c", index: 2 }]) !== "c" || few.list.length !== 0) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function reasoningPieces(options: ReasoningPiecesOptions = {}): ReasoningPieces {
  const maxPieces = options.maxPieces ?? MAX_REASONING_PIECES;
  const maxChars = options.maxChars ?? MAX_REASONING_CHARS;
  const list: ReasoningPiece[] = [];
  // The latest entry of each type and index, for the deltas that continue it.
  const indexed = new Map<unknown, Map<number, ReasoningPiece>>();
  let chars = 0;
  let dropped = false;

  const keep = (piece: ReasoningPiece): void => {
    const same = _pieceOf(list, indexed, piece);
    if (same) {
      chars += _merge(same, piece);
    } else {
      const entry = { ...piece };
      list.push(entry);
      chars += _size(entry);
      if (typeof piece.index === "number") {
        let byIndex = indexed.get(piece.type);
        if (!byIndex) indexed.set(piece.type, byIndex = new Map());
        byIndex.set(piece.index, entry);
      }
    }
    if (list.length > maxPieces || chars > maxChars) {
      dropped = true;
      list.length = 0;
      indexed.clear();
    }
  };

  const push = (pieces: unknown): string => {
    if (!Array.isArray(pieces)) return "";
    let shown = "";
    for (const item of pieces) {
      if (item === null || typeof item !== "object" || Array.isArray(item)) continue;
      const piece = item as ReasoningPiece;
      shown += _string(piece.text) || _string(piece.summary) || _string(piece.thinking);
      if (!dropped) keep(piece);
    }
    return shown;
  };
  return {
    push,
    list,
    get dropped() {
      return dropped;
    },
  };
}

/** Pieces that come whole, one per delta: never merged without an index. */
const _WHOLE = new Set(["reasoning.encrypted", "redacted_thinking"]);

/** The entry `piece` continues, if any. */
function _pieceOf(
  list: ReasoningPiece[],
  indexed: Map<unknown, Map<number, ReasoningPiece>>,
  piece: ReasoningPiece,
): ReasoningPiece | undefined {
  if (typeof piece.index === "number") return indexed.get(piece.type)?.get(piece.index);
  const last = list.at(-1);
  const open = last !== undefined && last.index === undefined && last.type === piece.type &&
    !_WHOLE.has(String(piece.type)) && !_string(last.signature);
  return open ? last : undefined;
}

/** Merges `piece` into `entry`; gives the characters it added, about. */
function _merge(entry: ReasoningPiece, piece: ReasoningPiece): number {
  let added = 0;
  for (const [key, value] of Object.entries(piece)) {
    if (value === null || value === undefined) continue;
    if (key === "text" || key === "summary" || key === "thinking" || key === "data") {
      const more = _string(value);
      entry[key] = _string(entry[key]) + more;
      added += more.length;
    } else if (key === "signature") {
      if (value !== "") {
        entry[key] = value;
        added += _size(value);
      }
    } else if (entry[key] === null || entry[key] === undefined) {
      entry[key] = value;
      added += key.length + _size(value);
    }
  }
  return added;
}

/** The length of `value` as JSON (what it weighs in a session and a request). */
function _size(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return Infinity; // neither JSON nor sendable: not kept
  }
}

function _string(value: unknown): string {
  return typeof value === "string" ? value : "";
}
