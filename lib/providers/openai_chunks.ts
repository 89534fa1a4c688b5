/**
 * Reads Chat Completions stream chunks into model events, coping with how real
 * OpenAI-compatible servers stream: tool-call deltas without `index` or with the same index for
 * every call, missing or repeated ids and names, arguments sent whole, cumulatively, or as a
 * JSON object, `finish_reason: "stop"` after tool calls, reasoning under several field names
 * or inline as `<think>` tags, OpenRouter's `reasoning_details` and LiteLLM's `thinking_blocks`
 * (see `reasoning_pieces.ts`), a refusal in place of the
 * answer, Perplexity's cited sources, usage in any chunk (or in the choice), and errors inside
 * the stream.
 *
 * @module
 */

import { ProviderError } from "../errors.ts";
import type { ToolCallPart } from "../messages.ts";
import type { ModelEvent } from "../model.ts";
import { type JsonProgress, jsonProgress } from "./json_progress.ts";
import { mapFinishReason, mapUsage, streamError } from "./openai_finish.ts";
import { reasoningPieces } from "./reasoning_pieces.ts";
import { toolCallOf } from "./tool_call.ts";
import { type ContentPiece, thinkTagSplitter } from "./think_tags.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

interface _Slot {
  id: string;
  name: string;
  args: string;
  /** Whether `args` is complete JSON, known without parsing it at every piece. */
  json: JsonProgress;
  extra?: Record<string, unknown>;
}

/** What the reader gives back once the stream has ended. */
export interface ChunkReaderEnd {
  /** The complete tool calls and the `finish` event. */
  events: ModelEvent[];
  /** Whether a `finish_reason` arrived at all. */
  finished: boolean;
}

/** Options of {@link chunkReader}. */
export interface ChunkReaderOptions {
  /**
   * Who the answer's provider data is from, e.g. `openai-chat:openrouter:anthropic/claude-sonnet-4`:
   * the `origin` of the reasoning that carries OpenRouter's `reasoning_details`, and of a tool
   * call that carries its own fields (Gemini's `extra_content`).
   */
  origin?: string;
}

/**
 * A reader of one streamed answer: `read()` each parsed chunk (yielding text and reasoning as
 * it comes), then `end()` for the complete tool calls and the finish. What the reasoning needs
 * back ends it, as a `reasoning_end` event before the answer's text or calls: OpenRouter's
 * `reasoning_details` and a LiteLLM proxy's `thinking_blocks`, merged per piece (pieces that
 * come later, such as a late signature, are merged into the same lists), and
 * `field: "reasoning_content"` for reasoning that came so.
 *
 * @example
 * ```ts
 * import { chunkReader } from "./openai_chunks.ts";
 * const reader = chunkReader("test");
 * reader.read({ choices: [{ delta: { tool_calls: [{ function: { name: "ls", arguments: { path: "." } } }] } }] });
 * reader.read({ choices: [{ delta: {}, finish_reason: "stop" }] });
 * const [call, finish] = reader.end().events;
 * if (call.type !== "tool_call" || finish.type !== "finish") throw new Error("unexpected");
 * ```
 */
export function chunkReader(provider: string, options: ChunkReaderOptions = {}): {
  read(chunk: Json): ModelEvent[];
  end(): ChunkReaderEnd;
} {
  const slots: _Slot[] = [];
  const byIndex = new Map<number, _Slot>();
  const byId = new Map<string, _Slot>();
  const think = thinkTagSplitter();
  let finishReason: string | undefined;
  let usage: Json;
  let refused = false;
  let answered = false;
  let sources: string[] = [];
  // OpenRouter's reasoning_details and a LiteLLM proxy's thinking_blocks.
  const details = reasoningPieces();
  const blocks = reasoningPieces();
  let piecesSent = false;
  // Whether the server sends reasoning as `reasoning_content`, whether a block of it is open,
  // and whether a block was marked so.
  let contentField = false;
  let open = false;
  let marked = false;
  // The reasoning_end that says what the reasoning needs back, before text or calls: the
  // pieces (once: the lists are the answer's), and the field each block of reasoning came in
  // when that is `reasoning_content` (DeepSeek wants it back on the turns that call tools,
  // even when there was none).
  const endReasoning = (events: ModelEvent[], calls: boolean): void => {
    const extra: Record<string, unknown> = {};
    if (!piecesSent && (details.list.length > 0 || blocks.list.length > 0)) {
      if (details.list.length > 0) extra.reasoning_details = details.list;
      if (blocks.list.length > 0) extra.thinking_blocks = blocks.list;
      piecesSent = true;
    }
    if (open || (contentField && calls && !marked)) {
      extra.field = "reasoning_content";
      open = false;
      marked = true;
    }
    if (Object.keys(extra).length > 0) {
      events.push({ type: "reasoning_end", origin: options.origin, extra });
    }
  };

  const slotFor = (delta: Json): _Slot => {
    const id = _text(delta.id);
    const name = _text(delta.function?.name);
    const index = typeof delta.index === "number" ? delta.index : undefined;
    let slot = id ? byId.get(id) : undefined;
    if (!slot) {
      const candidate = index === undefined ? slots.at(-1) : byIndex.get(index);
      // A server may reuse an index (or send none) for the next call: a new id, or a name
      // with arguments or with `type: "function"` (the mark of a call's first delta) after
      // the current call's arguments are complete, starts a call.
      const startsNew = candidate !== undefined && (
        (id !== "" && candidate.id !== "" && candidate.id !== id) ||
        (id === "" && name !== "" && candidate.name !== "" &&
          candidate.json.complete(candidate.args) &&
          (delta.type === "function" || _text(delta.function?.arguments) !== ""))
      );
      slot = startsNew ? undefined : candidate;
    }
    if (!slot) {
      slot = { id: "", name: "", args: "", json: jsonProgress() };
      slots.push(slot);
    }
    if (index !== undefined) byIndex.set(index, slot);
    if (id && !slot.id) {
      slot.id = id;
      byId.set(id, slot);
    }
    if (name && !slot.name) slot.name = name;
    return slot;
  };

  const read = (chunk: Json): ModelEvent[] => {
    if (chunk === null || typeof chunk !== "object") return [];
    if (chunk.error || chunk.object === "error") throw streamError(provider, chunk.error ?? chunk);
    // Usage at the top (most), under x_groq (Groq), or in the choice (Moonshot).
    const reported = chunk.usage ?? chunk.x_groq?.usage ??
      (Array.isArray(chunk.choices) ? chunk.choices[0]?.usage : undefined);
    if (reported && typeof reported === "object") usage = reported;
    // Perplexity names the sources its answer cites as [1], [2]… beside the chunks.
    const cited = _sources(chunk);
    if (cited.length > 0) sources = cited;
    if (!Array.isArray(chunk.choices)) return [];
    const events: ModelEvent[] = [];
    for (const choice of chunk.choices) {
      if (!choice || (choice.index !== undefined && choice.index !== 0)) continue;
      const delta = choice.delta ?? choice.message ?? {};
      // The pieces come beside the same text as `reasoning` or `reasoning_content`: shown once.
      const shown = details.push(delta.reasoning_details) + blocks.push(delta.thinking_blocks);
      if (typeof delta.reasoning_content === "string") {
        contentField = true;
        if (delta.reasoning_content !== "") open = true;
      }
      const reasoning = _text(delta.reasoning_content) || _text(delta.reasoning) || shown;
      if (reasoning) events.push({ type: "reasoning_delta", text: reasoning });
      for (const piece of _content(delta.content, think)) {
        if (piece.kind === "text") {
          endReasoning(events, false);
          answered = true;
        }
        events.push({
          type: piece.kind === "text" ? "text_delta" : "reasoning_delta",
          text: piece.text,
        });
      }
      // A refusal (OpenAI) is the answer the model gives instead of one: shown as text.
      const refusal = _text(delta.refusal);
      if (refusal) {
        endReasoning(events, false);
        refused = true;
        events.push({ type: "text_delta", text: refusal });
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const part of delta.tool_calls) {
          if (!part || typeof part !== "object") continue;
          const slot = slotFor(part);
          _mergeArgs(slot, part.function?.arguments, _text(part.function?.name) !== "");
          if (part.extra_content && typeof part.extra_content === "object") {
            slot.extra = { extra_content: part.extra_content };
          }
        }
      }
      const reason = _text(choice.finish_reason);
      if (reason === "error") {
        throw new ProviderError(`${provider} reported an error in the stream`, { retryable: true });
      }
      if (reason) finishReason = reason;
    }
    return events;
  };

  const end = (): ChunkReaderEnd => {
    const events: ModelEvent[] = [];
    endReasoning(events, slots.some((slot) => slot.name !== ""));
    for (const piece of think.end()) {
      if (piece.kind === "text") answered = true;
      events.push({
        type: piece.kind === "text" ? "text_delta" : "reasoning_delta",
        text: piece.text,
      });
    }
    if (answered && sources.length > 0) {
      const list = sources.map((url, i) => `[${i + 1}] ${url}`).join("\n");
      events.push({ type: "text_delta", text: `\n\nSources:\n${list}` });
    }
    const seen = new Set<string>();
    for (const slot of slots) {
      if (!slot.name) continue;
      let id = slot.id;
      if (!id || seen.has(id)) id = `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
      seen.add(id);
      events.push({ type: "tool_call", call: _slotCall(id, slot, options.origin) });
    }
    const hasCalls = events.some((event) => event.type === "tool_call");
    events.push({
      type: "finish",
      reason: hasCalls ? "tool_calls" : refused ? "refusal" : mapFinishReason(finishReason),
      usage: mapUsage(usage),
    });
    return { events, finished: finishReason !== undefined };
  };

  return { read, end };
}

/** Merges an arguments delta into a slot, whatever the server's way of sending them. */
function _mergeArgs(slot: _Slot, incoming: unknown, named: boolean): void {
  if (incoming === null || incoming === undefined) return;
  if (typeof incoming === "object") {
    slot.args = JSON.stringify(incoming); // sent as an object: always whole
    slot.json = jsonProgress(slot.args);
    return;
  }
  const text = String(incoming);
  if (text === "") return;
  if (slot.args === "" || text.startsWith(slot.args)) {
    slot.args = text; // the first piece, or a server re-sending everything so far
    slot.json = jsonProgress(text);
  } else if (
    !named && text.trimStart().startsWith("{") && slot.args.trimEnd().endsWith("}") &&
    slot.json.complete(slot.args) && _isJson(text)
  ) {
    slot.args = text; // complete arguments sent again, corrected
    slot.json = jsonProgress(text);
  } else {
    slot.args += text;
    slot.json.push(text);
  }
}

function _content(content: unknown, think: ReturnType<typeof thinkTagSplitter>): ContentPiece[] {
  if (typeof content === "string") return content ? think.push(content) : [];
  if (!Array.isArray(content)) return [];
  // Content as parts (Mistral's reasoning models): text parts and thinking parts.
  const pieces: ContentPiece[] = [];
  for (const part of content) {
    if (part?.type === "text" && _text(part.text)) {
      for (const piece of think.push(part.text)) pieces.push(piece);
    }
    if (part?.type === "thinking") {
      const text = Array.isArray(part.thinking)
        ? part.thinking.map((inner: Json) => _text(inner?.text)).join("")
        : _text(part.thinking);
      if (text) pieces.push({ kind: "reasoning", text });
    }
  }
  return pieces;
}

/** The URLs of a chunk's `citations`, else of its `search_results`. */
function _sources(chunk: Json): string[] {
  const urls = (list: unknown, url: (item: Json) => unknown): string[] =>
    Array.isArray(list)
      ? list.map(url).filter((item): item is string => typeof item === "string" && item !== "")
      : [];
  const cited = urls(chunk.citations, (item) => item);
  return cited.length > 0 ? cited : urls(chunk.search_results, (item) => item?.url);
}

function _text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function _isJson(text: string): boolean {
  if (text.trim() === "") return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The call of a slot; its provider data (Gemini's `extra_content`) is marked as `origin`'s. */
function _slotCall(id: string, slot: _Slot, origin: string | undefined): ToolCallPart {
  const call = toolCallOf(id, slot.name, slot.args);
  if (slot.extra) {
    call.extra = slot.extra;
    if (origin !== undefined) call.origin = origin;
  }
  return call;
}
