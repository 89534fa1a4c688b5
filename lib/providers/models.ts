/**
 * What is known about common models: context window, output limit, and list prices in US
 * dollars per million tokens. Unknown models get safe defaults; settings can override both.
 *
 * @module
 */

import type { ModelInfo } from "../model.ts";

type _Row = [
  contextWindow: number,
  maxOutput: number,
  input: number,
  output: number,
  cacheRead?: number,
  cacheWrite?: number,
];

// Model ids match exactly or as a prefix (dated versions: "claude-sonnet-4-5-20250929").
const TABLE: Record<string, Record<string, _Row>> = {
  openai: {
    "gpt-5": [400_000, 128_000, 1.25, 10, 0.125],
    "gpt-5-mini": [400_000, 128_000, 0.25, 2, 0.025],
    "gpt-5-nano": [400_000, 128_000, 0.05, 0.4, 0.005],
    "gpt-4.1": [1_047_576, 32_768, 2, 8, 0.5],
    "gpt-4.1-mini": [1_047_576, 32_768, 0.4, 1.6, 0.1],
    "gpt-4.1-nano": [1_047_576, 32_768, 0.1, 0.4, 0.025],
    "gpt-4o": [128_000, 16_384, 2.5, 10, 1.25],
    "gpt-4o-mini": [128_000, 16_384, 0.15, 0.6, 0.075],
    "o3": [200_000, 100_000, 2, 8, 0.5],
    "o3-mini": [200_000, 100_000, 1.1, 4.4, 0.55],
    "o4-mini": [200_000, 100_000, 1.1, 4.4, 0.275],
  },
  anthropic: {
    "claude-opus-4-5": [200_000, 64_000, 5, 25, 0.5, 6.25],
    "claude-opus-4-1": [200_000, 32_000, 15, 75, 1.5, 18.75],
    "claude-opus-4": [200_000, 32_000, 15, 75, 1.5, 18.75],
    "claude-sonnet-4-5": [200_000, 64_000, 3, 15, 0.3, 3.75],
    "claude-sonnet-4": [200_000, 64_000, 3, 15, 0.3, 3.75],
    "claude-3-7-sonnet": [200_000, 64_000, 3, 15, 0.3, 3.75],
    "claude-haiku-4-5": [200_000, 64_000, 1, 5, 0.1, 1.25],
    "claude-3-5-haiku": [200_000, 8_192, 0.8, 4, 0.08, 1],
  },
  deepseek: {
    "deepseek-chat": [128_000, 8_192, 0.28, 0.42, 0.028],
    "deepseek-reasoner": [128_000, 64_000, 0.28, 0.42, 0.028],
  },
  groq: {
    "llama-3.3-70b-versatile": [131_072, 32_768, 0.59, 0.79],
    "llama-3.1-8b-instant": [131_072, 131_072, 0.05, 0.08],
    "openai/gpt-oss-120b": [131_072, 65_536, 0.15, 0.75],
    "openai/gpt-oss-20b": [131_072, 65_536, 0.1, 0.5],
    "moonshotai/kimi-k2-instruct": [131_072, 16_384, 1, 3],
  },
  mistral: {
    "mistral-large-latest": [128_000, 32_768, 2, 6],
    "mistral-medium-latest": [128_000, 32_768, 0.4, 2],
    "mistral-small-latest": [128_000, 32_768, 0.1, 0.3],
    "codestral-latest": [256_000, 32_768, 0.3, 0.9],
    "devstral-medium-latest": [128_000, 32_768, 0.4, 2],
  },
  together: {
    "meta-llama/Llama-3.3-70B-Instruct-Turbo": [131_072, 8_192, 0.88, 0.88],
    "deepseek-ai/DeepSeek-V3": [131_072, 8_192, 1.25, 1.25],
    "Qwen/Qwen2.5-Coder-32B-Instruct": [32_768, 8_192, 0.8, 0.8],
  },
  xai: {
    "grok-4": [256_000, 64_000, 3, 15, 0.75],
    "grok-code-fast-1": [256_000, 10_000, 0.2, 1.5, 0.02],
    "grok-3-mini": [131_072, 16_384, 0.3, 0.5, 0.075],
    "grok-3": [131_072, 16_384, 3, 15, 0.75],
  },
  gemini: {
    "gemini-2.5-pro": [1_048_576, 65_536, 1.25, 10, 0.31],
    "gemini-2.5-flash-lite": [1_048_576, 65_536, 0.1, 0.4, 0.025],
    "gemini-2.5-flash": [1_048_576, 65_536, 0.3, 2.5, 0.075],
    "gemini-2.0-flash": [1_048_576, 8_192, 0.1, 0.4, 0.025],
  },
};

/** What an unknown model at a remote provider is assumed to be: prices unknown. */
export const UNKNOWN_REMOTE_MODEL: ModelInfo = { contextWindow: 128_000, maxOutputTokens: 8_192 };

/** What an unknown model on a local server is assumed to be: small, and free. */
export const UNKNOWN_LOCAL_MODEL: ModelInfo = {
  contextWindow: 32_768,
  maxOutputTokens: 8_192,
  pricing: { input: 0, output: 0 },
};

/**
 * The metadata of `model` at `provider`: from the table (exact id, or the longest known
 * prefix; for aggregators such as OpenRouter, `vendor/model` is looked up at the vendor), or
 * the defaults for a local or a remote provider.
 *
 * @example
 * ```ts
 * import { lookupModelInfo } from "./models.ts";
 * const info = lookupModelInfo("anthropic", "claude-sonnet-4-5-20250929", false);
 * if (info.contextWindow !== 200_000 || info.pricing?.cacheWrite !== 3.75) throw new Error("unexpected");
 * const routed = lookupModelInfo("openrouter", "anthropic/claude-sonnet-4.5", false);
 * if (routed.pricing?.output !== 15) throw new Error("unexpected");
 * ```
 */
export function lookupModelInfo(provider: string, model: string, local: boolean): ModelInfo {
  const row = _find(TABLE[provider], model) ?? _viaVendor(model);
  if (!row) return local ? UNKNOWN_LOCAL_MODEL : UNKNOWN_REMOTE_MODEL;
  const [contextWindow, maxOutputTokens, input, output, cacheRead, cacheWrite] = row;
  const pricing = {
    input,
    output,
    ...(cacheRead !== undefined && { cacheRead }),
    ...(cacheWrite !== undefined && { cacheWrite }),
  };
  return { contextWindow, maxOutputTokens, pricing: local ? { input: 0, output: 0 } : pricing };
}

function _find(table: Record<string, _Row> | undefined, model: string): _Row | undefined {
  if (!table) return undefined;
  if (table[model]) return table[model];
  let best: string | undefined;
  for (const key of Object.keys(table)) {
    if (model.startsWith(`${key}-`) && (best === undefined || key.length > best.length)) best = key;
  }
  return best === undefined ? undefined : table[best];
}

/** `vendor/model` as aggregators name it ("anthropic/claude-sonnet-4.5"), at the vendor. */
function _viaVendor(model: string): _Row | undefined {
  const slash = model.indexOf("/");
  if (slash < 0) return undefined;
  const vendor = model.slice(0, slash) === "google" ? "gemini" : model.slice(0, slash);
  const id = model.slice(slash + 1).replace(/:.*$/, "");
  return _find(TABLE[vendor], id) ?? _find(TABLE[vendor], id.replaceAll(".", "-"));
}
