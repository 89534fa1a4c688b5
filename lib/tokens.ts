/**
 * Token counts of requests. A real tokenizer (`o200k_base`, from `gpt-tokenizer`) is loaded on
 * first need, since importing it costs more than a CLI wants to pay at start-up; when it cannot
 * be loaded, characters / 4 stands in. Counts are cached per message, so a long history is
 * tokenized once, never once per turn.
 *
 * @module
 */

import type { Message } from "./messages.ts";
import type { ToolDefinition } from "./model.ts";

/** Counts the tokens of texts. */
export interface TokenCounter {
  /** `o200k_base`, or `chars/4` when the tokenizer could not be loaded. */
  readonly name: string;
  /** The tokens of a text. */
  count(text: string): number;
}

/** Tokens added per message for its framing (role, separators). */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/** Tokens added per tool call and per tool result for its framing (id, name, JSON). */
export const TOOL_CALL_OVERHEAD_TOKENS = 10;

/**
 * The fallback counter: a token per four characters, rounded up.
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

let _default: Promise<TokenCounter> | undefined;
let _loaded: TokenCounter | undefined;

/**
 * The token counter, loading the tokenizer on the first call (later calls share it). Never
 * rejects: when the tokenizer cannot be imported, the {@link HEURISTIC_COUNTER} is given.
 * `importer` replaces the import (not cached), e.g. to test the fallback.
 *
 * @example
 * ```ts
 * import { loadTokenCounter } from "./tokens.ts";
 * const counter = await loadTokenCounter();
 * if (counter.name !== "o200k_base" || counter.count("Hello world") !== 2) {
 *   throw new Error("unexpected");
 * }
 * const fallback = await loadTokenCounter(() => Promise.reject(new Error("offline")));
 * if (fallback.name !== "chars/4") throw new Error("unexpected");
 * ```
 */
export function loadTokenCounter(
  importer?: () => Promise<TokenizerModule>,
): Promise<TokenCounter> {
  if (importer) return _load(importer);
  return _default ??= _load(() => import("gpt-tokenizer/encoding/o200k_base")).then((counter) =>
    _loaded = counter
  );
}

/**
 * The token counter if {@link loadTokenCounter} already loaded it, without waiting.
 *
 * @example
 * ```ts
 * import { loadedTokenCounter, loadTokenCounter } from "./tokens.ts";
 * await loadTokenCounter();
 * if (loadedTokenCounter()?.name !== "o200k_base") throw new Error("unexpected");
 * ```
 */
export function loadedTokenCounter(): TokenCounter | undefined {
  return _loaded;
}

async function _load(importer: () => Promise<TokenizerModule>): Promise<TokenCounter> {
  try {
    const tokenizer = await importer();
    // Special-token text (`<|endoftext|>`) in a conversation is plain text to count.
    const options = { disallowedSpecial: new Set<string>() };
    return { name: "o200k_base", count: (text) => tokenizer.countTokens(text, options) };
  } catch {
    return HEURISTIC_COUNTER;
  }
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
  let cache = _tokens.get(counter);
  if (!cache) _tokens.set(counter, cache = new WeakMap());
  let tokens = cache.get(message);
  if (tokens === undefined) {
    tokens = _countMessage(message, counter);
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
  let cache = _tokens.get(counter);
  if (!cache) _tokens.set(counter, cache = new WeakMap());
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

function _countMessage(message: Message, counter: TokenCounter): number {
  let tokens = MESSAGE_OVERHEAD_TOKENS;
  if (message.role === "tool") tokens += TOOL_CALL_OVERHEAD_TOKENS;
  if (message.role === "assistant") {
    for (const part of message.content) {
      if (part.type === "tool_call") tokens += TOOL_CALL_OVERHEAD_TOKENS;
    }
  }
  for (const piece of _pieces(message)) tokens += counter.count(piece);
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
