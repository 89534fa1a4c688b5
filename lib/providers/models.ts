/**
 * What is known about common models: context window, output limit, and list prices in US
 * dollars per million tokens. Unknown models get safe defaults; settings can override both.
 *
 * @module
 */

import type { ModelInfo, Pricing } from "../model.ts";

type _Row = [
  contextWindow: number,
  maxOutput: number,
  input: number,
  output: number,
  cacheRead?: number,
  cacheWrite?: number,
];

// Model ids match exactly or as a prefix (dated versions: "claude-sonnet-4-5-20250929").
// Prices are list prices checked 2026-11; where a price is tiered, the row holds the base tier
// and LONG_REQUESTS the steps up.
const TABLE: Record<string, Record<string, _Row>> = {
  // developers.openai.com/api/docs/pricing and /models/<id>. Prompts over 272K input tokens
  // cost 2x input and 1.5x output on the 1.05M-window models (LONG_REQUESTS); cache writes are
  // not reported.
  openai: {
    "gpt-6.2-astra": [1_050_000, 128_000, 8, 40, 0.4],
    "gpt-6.2-sol": [1_050_000, 128_000, 2, 10, 0.1],
    "gpt-6.1-sol": [1_050_000, 128_000, 2, 10, 0.1],
    "gpt-6.1-terra": [1_050_000, 128_000, 1, 5, 0.05],
    "gpt-6-astra": [1_050_000, 128_000, 10, 50, 1],
    "gpt-6-sol": [1_050_000, 128_000, 2, 10, 0.2],
    "gpt-6-luna": [1_050_000, 128_000, 0.1, 0.5, 0.01],
    "gpt-5.6-sol": [1_050_000, 128_000, 4, 20, 0.4], // promotional; list $5 / $30 / $0.50
    "gpt-5.6-terra": [1_050_000, 128_000, 2, 12, 0.2],
    "gpt-5.6-luna": [1_050_000, 128_000, 0.2, 1.2, 0.02],
    "gpt-5.5": [1_050_000, 128_000, 5, 30, 0.5],
    "gpt-5.5-pro": [1_050_000, 128_000, 30, 180],
    "gpt-5.4": [1_050_000, 128_000, 2.5, 15, 0.25],
    "gpt-5.4-mini": [400_000, 128_000, 0.75, 4.5, 0.075],
    "gpt-5.4-nano": [400_000, 128_000, 0.2, 1.25, 0.02],
    "gpt-5.2": [400_000, 128_000, 1.75, 14, 0.175],
    "gpt-5.2-pro": [400_000, 128_000, 21, 168],
    "gpt-5.1": [400_000, 128_000, 1.25, 10, 0.125],
    "gpt-5.1-codex-mini": [400_000, 128_000, 0.25, 2],
    "gpt-5": [400_000, 128_000, 1.25, 10, 0.125], // also gpt-5-codex
    "gpt-5-pro": [400_000, 272_000, 15, 120],
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
  // platform.claude.com/docs/en/about-claude/pricing and /docs/en/models/<model>/overview.
  anthropic: {
    "claude-fable-5-2": [1_000_000, 128_000, 8, 40, 0.2, 10],
    "claude-mythos-5-2": [1_000_000, 128_000, 8, 40, 0.2, 10],
    "claude-fable-5-1": [1_000_000, 128_000, 10, 50, 0.25, 12.5],
    "claude-mythos-5-1": [1_000_000, 128_000, 10, 50, 0.25, 12.5],
    "claude-fable-5": [1_000_000, 128_000, 10, 50, 1, 12.5],
    "claude-mythos-5": [1_000_000, 128_000, 10, 50, 1, 12.5],
    "claude-opus-5-5": [1_000_000, 128_000, 4, 20, 0.2, 5],
    "claude-opus-5": [1_000_000, 128_000, 5, 25, 0.5, 6.25],
    "claude-opus-4-8": [1_000_000, 128_000, 5, 25, 0.5, 6.25],
    "claude-opus-4-7": [1_000_000, 128_000, 5, 25, 0.5, 6.25],
    "claude-opus-4-6": [1_000_000, 128_000, 5, 25, 0.5, 6.25],
    "claude-opus-4-5": [200_000, 64_000, 5, 25, 0.5, 6.25],
    "claude-opus-4-1": [200_000, 32_000, 15, 75, 1.5, 18.75],
    "claude-opus-4": [200_000, 32_000, 15, 75, 1.5, 18.75],
    "claude-sonnet-5-5": [1_000_000, 128_000, 2, 10, 0.1, 2.5], // cache reads cut 2026-10-07
    "claude-sonnet-5": [1_000_000, 128_000, 2, 10, 0.2, 2.5],
    "claude-sonnet-4-6": [1_000_000, 128_000, 3, 15, 0.3, 3.75],
    "claude-sonnet-4-5": [200_000, 64_000, 3, 15, 0.3, 3.75],
    "claude-sonnet-4": [200_000, 64_000, 3, 15, 0.3, 3.75],
    "claude-3-7-sonnet": [200_000, 64_000, 3, 15, 0.3, 3.75],
    // Prompts over 100K tokens (cache included) cost 5x on every token of the request.
    "claude-haiku-5-5": [1_000_000, 128_000, 0.1, 0.5, 0.01, 0.125],
    "claude-haiku-4-5": [200_000, 64_000, 1, 5, 0.1, 1.25],
    "claude-3-5-haiku": [200_000, 8_192, 0.8, 4, 0.08, 1],
  },
  // api-docs.deepseek.com/quick_start/pricing: peak rates; off-peak (outside 01:00-04:00 and
  // 06:00-10:00 UTC on weekdays) is half. deepseek-v4-flash is served by deepseek-flash.
  deepseek: {
    "deepseek-flash": [1_000_000, 384_000, 0.3, 1.2, 0.006],
    "deepseek-v4-flash": [1_000_000, 384_000, 0.3, 1.2, 0.006],
    "deepseek-v4-pro": [1_000_000, 384_000, 1.32, 3.96, 0.044],
  },
  // console.groq.com/docs/models, groq.com/pricing.
  groq: {
    "llama-3.3-70b-versatile": [131_072, 32_768, 0.59, 0.79],
    "llama-3.1-8b-instant": [131_072, 131_072, 0.05, 0.08],
    "openai/gpt-oss-120b": [131_072, 65_536, 0.15, 0.6, 0.075],
    "openai/gpt-oss-20b": [131_072, 65_536, 0.075, 0.3],
    "moonshotai/kimi-k2-instruct": [131_072, 16_384, 1, 3],
  },
  // mistral.ai/pricing#api-pricing, docs.mistral.ai/models.
  mistral: {
    "mistral-large-latest": [262_144, 32_768, 0.5, 1.5],
    "mistral-medium-latest": [262_144, 256_000, 1.5, 7.5],
    "mistral-small-latest": [128_000, 32_768, 0.1, 0.3],
    "codestral-latest": [256_000, 32_768, 0.3, 0.9],
    "devstral-latest": [262_144, 32_768, 0.4, 2],
    "devstral-medium-latest": [128_000, 32_768, 0.4, 2],
  },
  // together.ai/pricing, docs.together.ai/docs/serverless/models.
  together: {
    "deepseek-ai/DeepSeek-V4-Pro": [512_000, 384_000, 2.1, 4.4, 0.2],
    "moonshotai/Kimi-K2.6": [262_144, 131_000, 1.2, 4.5, 0.2],
    "zai-org/GLM-5.2": [262_144, 164_000, 1.4, 4.4, 0.26],
    "meta-llama/Llama-3.3-70B-Instruct-Turbo": [131_072, 8_192, 0.88, 0.88],
    "deepseek-ai/DeepSeek-V3": [131_072, 131_072, 1.25, 1.25],
  },
  // docs.x.ai/developers/pricing and /developers/<model>. No output limit beyond the window;
  // every rate doubles past 200K input tokens on grok-4.5 and later.
  xai: {
    "grok-4.7": [500_000, 500_000, 2, 6, 0.5],
    "grok-4.6": [500_000, 500_000, 2, 6, 0.5],
    "grok-4.5": [500_000, 500_000, 2, 6, 0.5],
    "grok-4.3": [1_000_000, 1_000_000, 1.25, 2.5, 0.2],
    "grok-4.20": [2_000_000, 2_000_000, 1.25, 2.5, 0.2],
    "grok-3-mini": [131_072, 16_384, 0.3, 0.5, 0.075],
  },
  // ai.google.dev/gemini-api/docs/pricing. Pro prompts over 200K tokens cost more.
  gemini: {
    "gemini-3.8-flash": [1_000_000, 65_536, 0.75, 3.75, 0.075], // $1.50 / $7.50 from 2027
    "gemini-3.5-flash": [1_048_576, 65_536, 1.5, 9, 0.15],
    "gemini-3.1-pro-preview": [1_048_576, 65_536, 2, 12, 0.2],
    "gemini-3.1-flash-lite": [1_048_576, 65_536, 0.25, 1.5, 0.025],
    "gemini-2.5-pro": [1_048_576, 65_536, 1.25, 10, 0.125],
    "gemini-2.5-flash-lite": [1_048_576, 65_536, 0.1, 0.4, 0.01],
    "gemini-2.5-flash": [1_048_576, 65_536, 0.3, 2.5, 0.03],
  },
};

/** A step up of every price past a request size: cache prices follow the input's. */
interface _LongRequests {
  /** The input tokens of one request past which the step applies. */
  above: number;
  /** What the input (and cache) prices are multiplied by. */
  input: number;
  /** What the output price is multiplied by. */
  output: number;
  /** The table's keys of the models it applies to. */
  models: readonly string[];
}

// Long-request tiers as each provider's pricing page above states them. Anthropic's 1M-context
// beta on Sonnet 4 and 4.5 charges $6 / $22.50 past 200K input tokens (cache x2 too).
const LONG_REQUESTS: Record<string, readonly _LongRequests[]> = {
  openai: [{
    above: 272_000,
    input: 2,
    output: 1.5,
    models: [
      "gpt-6.2-astra",
      "gpt-6.2-sol",
      "gpt-6.1-sol",
      "gpt-6.1-terra",
      "gpt-6-astra",
      "gpt-6-sol",
      "gpt-6-luna",
      "gpt-5.6-sol",
      "gpt-5.6-terra",
      "gpt-5.6-luna",
      "gpt-5.5",
      "gpt-5.5-pro",
      "gpt-5.4",
    ],
  }],
  anthropic: [
    { above: 200_000, input: 2, output: 1.5, models: ["claude-sonnet-4-5", "claude-sonnet-4"] },
    { above: 100_000, input: 5, output: 5, models: ["claude-haiku-5-5"] },
  ],
  xai: [{ above: 200_000, input: 2, output: 2, models: ["grok-4.7", "grok-4.6", "grok-4.5"] }],
  gemini: [{
    above: 200_000,
    input: 2,
    output: 1.5,
    models: ["gemini-3.1-pro-preview", "gemini-2.5-pro"],
  }],
};

/**
 * How a model thinks before it answers: within a budget of tokens the request sets (`budget`:
 * Anthropic's extended thinking), on its own with no budget to set (`own`: OpenAI's reasoning
 * models), or not in a way a request can ask for (`none`).
 */
export type ThinkingSupport = "budget" | "own" | "none";

/**
 * How `model`, reached through the `api` wire protocol, thinks. On Anthropic's API every Claude
 * model from 3.7 Sonnet on takes a budget; the OpenAI-compatible API has no budget to set, and
 * OpenAI's reasoning models (also as aggregators name them, `openai/o3`) think on their own.
 *
 * @example
 * ```ts
 * import { lookupThinking } from "./models.ts";
 * if (lookupThinking("anthropic", "claude-sonnet-4-5") !== "budget") throw new Error("unexpected");
 * if (lookupThinking("anthropic", "claude-3-5-haiku-latest") !== "none") throw new Error("unexpected");
 * if (lookupThinking("openai", "o4-mini") !== "own") throw new Error("unexpected");
 * if (lookupThinking("openai", "gpt-4.1-mini") !== "none") throw new Error("unexpected");
 * ```
 */
export function lookupThinking(api: "openai" | "anthropic", model: string): ThinkingSupport {
  if (api === "anthropic") {
    return /^claude-(instant|[12]\b|3-(?!7))/.test(model) ? "none" : "budget";
  }
  return /^(openai\/)?(o\d|gpt-oss|gpt-[5-9]|gpt-\d\d)/.test(model) ? "own" : "none";
}

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
 * prefix; for aggregators such as OpenRouter, `vendor/model` is looked up at the vendor), with
 * the prices of long requests where the provider charges more for them, or the defaults for a
 * local or a remote provider.
 *
 * @example
 * ```ts
 * import { lookupModelInfo } from "./models.ts";
 * const info = lookupModelInfo("anthropic", "claude-sonnet-4-5-20250929", false);
 * if (info.contextWindow !== 200_000 || info.pricing?.cacheWrite !== 3.75) throw new Error("unexpected");
 * const routed = lookupModelInfo("openrouter", "anthropic/claude-sonnet-4.5", false);
 * if (routed.pricing?.output !== 15) throw new Error("unexpected");
 * // Past 200K input tokens a request to Gemini 2.5 Pro costs more.
 * const long = lookupModelInfo("gemini", "gemini-2.5-pro", false).pricing?.tiers?.[0];
 * if (long?.above !== 200_000 || long.input !== 2.5 || long.output !== 15) throw new Error();
 * ```
 */
export function lookupModelInfo(provider: string, model: string, local: boolean): ModelInfo {
  const found = _find(provider, model) ?? _viaVendor(model);
  if (!found) return local ? UNKNOWN_LOCAL_MODEL : UNKNOWN_REMOTE_MODEL;
  const [contextWindow, maxOutputTokens, input, output, cacheRead, cacheWrite] = found.row;
  if (local) return { contextWindow, maxOutputTokens, pricing: { input: 0, output: 0 } };
  const base = { input, output, cacheRead, cacheWrite };
  const steps = (LONG_REQUESTS[found.vendor] ?? []).filter((step) =>
    step.models.includes(found.key)
  );
  const pricing: Pricing = _prices(base);
  if (steps.length > 0) {
    pricing.tiers = steps.map((step) => ({
      above: step.above,
      ..._prices({
        input: input * step.input,
        output: output * step.output,
        cacheRead: cacheRead === undefined ? undefined : cacheRead * step.input,
        cacheWrite: cacheWrite === undefined ? undefined : cacheWrite * step.input,
      }),
    })).sort((a, b) => a.above - b.above);
  }
  return { contextWindow, maxOutputTokens, pricing };
}

/** Prices without the cache prices that are unknown, to a millionth of a cent. */
function _prices(
  prices: { input: number; output: number; cacheRead?: number; cacheWrite?: number },
): Pricing {
  const round = (usd: number) => Math.round(usd * 1e8) / 1e8;
  const { input, output, cacheRead, cacheWrite } = prices;
  return {
    input: round(input),
    output: round(output),
    ...(cacheRead !== undefined && { cacheRead: round(cacheRead) }),
    ...(cacheWrite !== undefined && { cacheWrite: round(cacheWrite) }),
  };
}

/** The row of `model` at `vendor`, and the key it was found by (exact, or the longest prefix). */
function _find(
  vendor: string,
  model: string,
): { vendor: string; key: string; row: _Row } | undefined {
  const table = TABLE[vendor];
  if (!table) return undefined;
  if (table[model]) return { vendor, key: model, row: table[model] };
  let best: string | undefined;
  for (const key of Object.keys(table)) {
    if (model.startsWith(`${key}-`) && (best === undefined || key.length > best.length)) best = key;
  }
  return best === undefined ? undefined : { vendor, key: best, row: table[best] };
}

/** `vendor/model` as aggregators name it ("anthropic/claude-sonnet-4.5"), at the vendor. */
function _viaVendor(model: string): { vendor: string; key: string; row: _Row } | undefined {
  const slash = model.indexOf("/");
  if (slash < 0) return undefined;
  const vendor = model.slice(0, slash) === "google" ? "gemini" : model.slice(0, slash);
  const id = model.slice(slash + 1).replace(/:.*$/, "");
  return _find(vendor, id) ?? _find(vendor, id.replaceAll(".", "-"));
}
