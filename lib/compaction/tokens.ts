/**
 * Token counts of requests. The counter is an estimate of `o200k_base` (`token_estimate.ts`):
 * linear in the text whatever it holds, within about 10% of the exact count on code, prose,
 * JSON and CJK, and with nothing to download or load. An exact tokenizer module can be given
 * instead ({@link loadTokenCounter}); long runs without spaces are then counted in pieces, so
 * that it stays linear too. Counts are cached per message, so a long history is counted once,
 * never once per turn; a long text is counted in slices with pauses between them
 * ({@link countTokensInSlices}), so that other work (another run, Ctrl+C) goes on meanwhile.
 *
 * @module
 */

import { yieldToEvents } from "../async.ts";
import type { Message } from "../messages.ts";
import type { ToolDefinition } from "../model.ts";
import { estimateTokens, SLICE_CHARS, textSlices } from "./token_estimate.ts";

/** Counts the tokens of texts. */
export interface TokenCounter {
  /** `o200k_estimate`, `exact` (a tokenizer module's), or `chars/4`. */
  readonly name: string;
  /** The tokens of a text. */
  count(text: string): number;
}

/** Tokens added per message for its framing (role, separators). */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/** Tokens added per tool call and per tool result for its framing (id, name, JSON). */
export const TOOL_CALL_OVERHEAD_TOKENS = 10;

/**
 * The counter compaction uses: an estimate of `o200k_base`, linear in the text.
 *
 * @example
 * ```ts
 * import { ESTIMATE_COUNTER } from "./tokens.ts";
 * if (ESTIMATE_COUNTER.count("Hello world") !== 2) throw new Error("unexpected");
 * ```
 */
export const ESTIMATE_COUNTER: TokenCounter = { name: "o200k_estimate", count: estimateTokens };

/**
 * The crudest counter: a token per four characters, rounded up.
 *
 * @example
 * ```ts
 * import { HEURISTIC_COUNTER } from "./tokens.ts";
 * if (HEURISTIC_COUNTER.count("12345678") !== 2) throw new Error("unexpected");
 * ```
 */
export const HEURISTIC_COUNTER: TokenCounter = {
  name: "chars/4",
  count: (text) => Math.ceil(text.length / 4),
};

/** What {@link loadTokenCounter} needs of a tokenizer module. */
export interface TokenizerModule {
  /** Counts the tokens of a text. */
  countTokens(text: string, options: { disallowedSpecial: Set<string> }): number;
}

/**
 * A token counter. Without `importer`, the {@link ESTIMATE_COUNTER}. With one, the exact count
 * of the tokenizer it imports (e.g. `gpt-tokenizer/encoding/o200k_base`), kept linear: a run of
 * letters, punctuation or whitespace longer than {@link EXACT_RUN_CHARS} is counted in pieces
 * of that length (byte-pair merging is quadratic in a run's length), which adds at most a token
 * per piece. Never rejects: when the import fails, the estimate is given.
 *
 * @example
 * ```ts
 * import { loadTokenCounter } from "./tokens.ts";
 * const counter = await loadTokenCounter();
 * if (counter.name !== "o200k_estimate") throw new Error("unexpected");
 * const fallback = await loadTokenCounter(() => Promise.reject(new Error("offline")));
 * if (fallback.name !== "o200k_estimate") throw new Error("unexpected");
 * const exact = await loadTokenCounter(() => Promise.resolve({ countTokens: (t) => t.length }));
 * if (exact.name !== "exact" || exact.count("x".repeat(1_000)) !== 1_000) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export async function loadTokenCounter(
  importer?: () => Promise<TokenizerModule>,
): Promise<TokenCounter> {
  if (!importer) return ESTIMATE_COUNTER;
  try {
    const tokenizer = await importer();
    // Special-token text (`<|endoftext|>`) in a conversation is plain text to count.
    const options = { disallowedSpecial: new Set<string>() };
    return {
      name: "exact",
      count(text) {
        let tokens = 0;
        for (const piece of _boundedRuns(text)) tokens += tokenizer.countTokens(piece, options);
        return tokens;
      },
    };
  } catch {
    return ESTIMATE_COUNTER;
  }
}

/** The longest run an exact tokenizer is given whole (see {@link loadTokenCounter}). */
export const EXACT_RUN_CHARS = 128;

const _LONG_RUN = new RegExp(
  String.raw`[\p{L}\p{M}]{${EXACT_RUN_CHARS}}|[^\s\p{L}\p{N}]{${EXACT_RUN_CHARS}}|` +
    String.raw`\p{N}{${EXACT_RUN_CHARS}}|\s{${EXACT_RUN_CHARS}}`,
  "gu",
);

/** `text` in pieces where no run of one kind is longer than {@link EXACT_RUN_CHARS}. */
function* _boundedRuns(text: string): Generator<string> {
  for (const slice of textSlices(text, SLICE_CHARS)) {
    const long = new RegExp(_LONG_RUN);
    let from = 0;
    for (const match of slice.matchAll(long)) {
      if (match.index > from) yield slice.slice(from, match.index);
      yield match[0];
      from = match.index + match[0].length;
    }
    if (from < slice.length || slice.length === 0) yield from === 0 ? slice : slice.slice(from);
  }
}

/** Characters counted at once by {@link countTokensInSlices} (a few milliseconds' work). */
export const COUNT_SLICE_CHARS = 131_072;

/**
 * The tokens of a text, counted in slices of {@link COUNT_SLICE_CHARS} with a pause for other
 * tasks between them, so that counting a huge text never holds the event loop for long.
 * Rejects with the signal's reason when it aborts.
 *
 * @example
 * ```ts
 * import { countTokensInSlices, ESTIMATE_COUNTER } from "./tokens.ts";
 * const tokens = await countTokensInSlices("word ".repeat(100_000), ESTIMATE_COUNTER);
 * if (tokens < 90_000 || tokens > 110_000) throw new Error("unexpected");
 * ```
 */
export async function countTokensInSlices(
  text: string,
  counter: TokenCounter,
  signal?: AbortSignal,
): Promise<number> {
  signal?.throwIfAborted();
  if (text.length <= COUNT_SLICE_CHARS) return counter.count(text);
  let tokens = 0;
  for (const slice of textSlices(text, COUNT_SLICE_CHARS)) {
    tokens += counter.count(slice);
    await yieldToEvents();
    signal?.throwIfAborted();
  }
  return tokens;
}

const _tokens = new WeakMap<TokenCounter, WeakMap<object, number>>();
const _chars = new WeakMap<Message, number>();

/**
 * The tokens of a message, framing included; cached per message and counter, so the same
 * message object is tokenized once.
 *
 * @example
 * ```ts
 * import { HEURISTIC_COUNTER, messageTokens } from "./tokens.ts";
 * const tokens = messageTokens({ role: "user", content: "12345678" }, HEURISTIC_COUNTER);
 * if (tokens !== 2 + 4) throw new Error("unexpected");
 * ```
 */
export function messageTokens(message: Message, counter: TokenCounter): number {
  const cache = _cache(counter);
  let tokens = cache.get(message);
  if (tokens === undefined) {
    tokens = _countMessage(message, counter);
    cache.set(message, tokens);
  }
  return tokens;
}

/**
 * The tokens of a message like {@link messageTokens}, counted in slices when it is long
 * ({@link countTokensInSlices}); cached the same way. Rejects with the signal's reason when it
 * aborts.
 *
 * @example
 * ```ts
 * import { ESTIMATE_COUNTER, messageTokens, messageTokensInSlices } from "./tokens.ts";
 * const message = { role: "user" as const, content: "x".repeat(1_000_000) };
 * const tokens = await messageTokensInSlices(message, ESTIMATE_COUNTER);
 * if (tokens !== messageTokens(message, ESTIMATE_COUNTER)) throw new Error("unexpected");
 * ```
 */
export async function messageTokensInSlices(
  message: Message,
  counter: TokenCounter,
  signal?: AbortSignal,
): Promise<number> {
  const cache = _cache(counter);
  let tokens = cache.get(message);
  if (tokens === undefined) {
    if (messageChars(message) <= COUNT_SLICE_CHARS) return messageTokens(message, counter);
    tokens = _framing(message);
    for (const piece of _pieces(message)) {
      tokens += await countTokensInSlices(piece, counter, signal);
    }
    cache.set(message, tokens);
  }
  return tokens;
}

/**
 * The characters of a message as sent (texts, tool names, call arguments as JSON); cached. At
 * most two tokens per character is a safe bound, so this tells cheaply when a request surely
 * fits without loading the tokenizer.
 *
 * @example
 * ```ts
 * import { messageChars } from "./tokens.ts";
 * if (messageChars({ role: "user", content: "Hi" }) !== 2) throw new Error("unexpected");
 * ```
 */
export function messageChars(message: Message): number {
  let chars = _chars.get(message);
  if (chars === undefined) {
    chars = 0;
    for (const piece of _pieces(message)) chars += piece.length;
    _chars.set(message, chars);
  }
  return chars;
}

/**
 * The tokens of tool definitions as sent to the model; cached per array and counter.
 *
 * @example
 * ```ts
 * import { HEURISTIC_COUNTER, toolTokens } from "./tokens.ts";
 * const tokens = toolTokens([{ name: "ls", description: "Lists", inputSchema: {} }], HEURISTIC_COUNTER);
 * if (tokens < 10) throw new Error("unexpected");
 * ```
 */
export function toolTokens(tools: readonly ToolDefinition[], counter: TokenCounter): number {
  if (tools.length === 0) return 0;
  const cache = _cache(counter);
  let tokens = cache.get(tools);
  if (tokens === undefined) {
    tokens = counter.count(JSON.stringify(tools)) + tools.length * TOOL_CALL_OVERHEAD_TOKENS;
    cache.set(tools, tokens);
  }
  return tokens;
}

/** The parts of a request that take tokens. */
export interface TokenizedRequest {
  /** The system prompt. */
  system?: string;
  /** The messages. */
  messages: readonly Message[];
  /** The tool definitions (default none). */
  tools?: readonly ToolDefinition[];
}

/**
 * The tokens of a request: system prompt, messages and tool definitions, with the counter
 * given. Messages counted before are not tokenized again.
 *
 * @example
 * ```ts
 * import { loadTokenCounter, requestTokens } from "./tokens.ts";
 * const counter = await loadTokenCounter();
 * const tokens = requestTokens({ system: "Be brief.", messages: [{ role: "user", content: "Hi" }] }, counter);
 * if (tokens < 5 || tokens > 20) throw new Error("unexpected");
 * ```
 */
export function requestTokens(request: TokenizedRequest, counter: TokenCounter): number {
  let tokens = request.system ? counter.count(request.system) + MESSAGE_OVERHEAD_TOKENS : 0;
  tokens += toolTokens(request.tools ?? [], counter);
  for (const message of request.messages) tokens += messageTokens(message, counter);
  return tokens;
}

function _cache(counter: TokenCounter): WeakMap<object, number> {
  let cache = _tokens.get(counter);
  if (!cache) _tokens.set(counter, cache = new WeakMap());
  return cache;
}

function _countMessage(message: Message, counter: TokenCounter): number {
  let tokens = _framing(message);
  for (const piece of _pieces(message)) tokens += counter.count(piece);
  return tokens;
}

/** The tokens of a message's framing: per message, per tool call and per tool result. */
function _framing(message: Message): number {
  let tokens = MESSAGE_OVERHEAD_TOKENS;
  if (message.role === "tool") tokens += TOOL_CALL_OVERHEAD_TOKENS;
  if (message.role === "assistant") {
    for (const part of message.content) {
      if (part.type === "tool_call") tokens += TOOL_CALL_OVERHEAD_TOKENS;
    }
  }
  return tokens;
}

/** The texts of a message that reach the model. */
function _pieces(message: Message): string[] {
  switch (message.role) {
    case "user":
      return [message.content];
    case "tool":
      return [message.name, message.content];
    case "assistant":
      return message.content.map((part) =>
        part.type === "tool_call"
          ? part.name + (part.invalidInput ?? JSON.stringify(part.input ?? {}))
          : part.text
      );
  }
}
