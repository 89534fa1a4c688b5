/**
 * Turns a `provider/model` string into a {@link Model}: the provider from the presets or the
 * user's own, the key and base URL from the options or the provider's env vars, and the
 * model's metadata from the table or the settings.
 *
 * @module
 */

import { ConfigError } from "../errors.ts";
import type { Model, ModelInfo, Pricing } from "../model.ts";
import { anthropicModel } from "./anthropic.ts";
import { lookupModelInfo, lookupThinking } from "./models.ts";
import { openaiModel } from "./openai.ts";
import type { ChatRequestStyle } from "./openai_request.ts";
import { openaiResponsesModel } from "./openai_responses.ts";
import type { ResponsesReasoning } from "./responses_request.ts";
import {
  apiOf,
  isOpenAIReasoningModel,
  PRESETS,
  type ProviderApi,
  type ProviderPreset,
  styleOf,
} from "./presets.ts";

/** A provider the user defines (in the user settings file). */
export interface ProviderConfig extends ChatRequestStyle {
  /** The wire protocol (default `openai`, Chat Completions). */
  api?: ProviderApi;
  /** The API root: with `/v1` for OpenAI-compatible servers, without for Anthropic. */
  baseURL: string;
  /** The env var that holds the key; without one, no key is sent. */
  apiKeyEnv?: string;
  /** Extra HTTP headers. */
  headers?: Record<string, string>;
  /** A local server: its models cost nothing. */
  local?: boolean;
  /** Over the Responses API: its models reason, with this effort and summary. */
  reasoning?: ResponsesReasoning;
}

/** Metadata that replaces or completes what the table knows of a model. */
export interface ModelOverride {
  /** The context window in tokens. */
  contextWindow?: number;
  /** The most output tokens per answer. */
  maxOutputTokens?: number;
  /** Prices per million tokens. */
  pricing?: Pricing;
  /** The wire protocol to reach the model with, over its provider's. */
  api?: ProviderApi;
  /**
   * Over the Responses API: the model reasons, with this effort and summary (OpenAI's own
   * reasoning models do without saying so).
   */
  reasoning?: ResponsesReasoning;
}

/** Where a model's connection settings come from. */
export interface ResolveModelOptions {
  /** The API root; for OpenAI-compatible providers it includes `/v1` (like `OPENAI_BASE_URL`). */
  baseURL?: string;
  /** The API key (default from the provider's env var). */
  apiKey?: string;
  /** Reads an environment variable (default `Deno.env.get`, or nothing without `--allow-env`). */
  env?: (name: string) => string | undefined;
  /** The user's own providers, by name; a name of a preset replaces it. */
  providers?: Readonly<Record<string, ProviderConfig>>;
  /** Metadata overrides, by `provider/model`. */
  models?: Readonly<Record<string, ModelOverride>>;
  /**
   * Extended thinking with this many tokens, for the models that take a budget (Claude models
   * on Anthropic's API); the others leave it out ({@link thinkingBudgetNote} says why).
   */
  thinkingBudget?: number;
  /** The fetch the provider's SDK uses (default the global one), e.g. to go through a proxy. */
  fetch?: typeof fetch;
  /** The wire protocol, over the model's override and its provider's own choice. */
  api?: ProviderApi;
}

/** The names of the built-in providers. */
export const PROVIDER_NAMES: readonly string[] = Object.keys(PRESETS);

/**
 * The model named by `spec` (`provider/model`), or `spec` itself when it is already a model.
 *
 * @example
 * ```ts
 * import { resolveModel } from "./resolve.ts";
 * const model = resolveModel("openai/gpt-4.1-mini", { apiKey: "sk-test" });
 * if (model.provider !== "openai" || model.info?.contextWindow !== 1_047_576) throw new Error("unexpected");
 * const local = resolveModel("ollama/qwen3", { env: () => undefined });
 * if (local.info?.pricing?.input !== 0) throw new Error("unexpected");
 * ```
 */
export function resolveModel(spec: string | Model, options: ResolveModelOptions = {}): Model {
  if (typeof spec !== "string") return spec;
  const { provider: name, model } = parseModelSpec(spec, options.providers);
  const preset = _preset(name, options.providers);
  const env = options.env ?? readEnv;
  const apiKey = options.apiKey || (preset.keyEnv ? env(preset.keyEnv) : undefined) || undefined;
  const baseURL = _baseURL(preset, options, env);
  if (!apiKey && !preset.local && preset.keyEnv && baseURL === preset.baseURL) {
    throw new MissingKeyError(_missingKey(name, preset.keyEnv));
  }
  const common = {
    model,
    apiKey,
    baseURL,
    provider: name,
    keyEnv: preset.keyEnv,
    headers: preset.headers,
    info: _info(name, model, preset, options.models?.[spec]),
    fetch: options.fetch,
  };
  const override = options.models?.[spec];
  const api = options.api ?? override?.api ?? apiOf(preset, model, baseURL);
  if (api === "anthropic") {
    return anthropicModel({
      ...common,
      thinking: options.thinkingBudget && lookupThinking("anthropic", model) === "budget"
        ? { budgetTokens: options.thinkingBudget }
        : undefined,
    });
  }
  const style = styleOf(preset, model, baseURL);
  if (api === "openai-responses") {
    return openaiResponsesModel({
      ...common,
      // A reasoning model's encrypted reasoning goes back with each turn, and its summaries are
      // what the user sees of its thinking.
      reasoning: override?.reasoning ?? preset.reasoning ??
        (isOpenAIReasoningModel(model) ? { summary: "auto" } : undefined),
      extraBody: style.extraBody,
    });
  }
  return openaiModel({ ...style, ...common });
}

/**
 * Splits `provider/model`, refusing a spec without a provider or with an unknown one.
 *
 * @example
 * ```ts
 * import { parseModelSpec } from "./resolve.ts";
 * const { provider, model } = parseModelSpec("openrouter/anthropic/claude-sonnet-4.5");
 * if (provider !== "openrouter" || model !== "anthropic/claude-sonnet-4.5") throw new Error("unexpected");
 * ```
 */
export function parseModelSpec(
  spec: string,
  providers: Readonly<Record<string, ProviderConfig>> = {},
): { provider: string; model: string } {
  const slash = spec.indexOf("/");
  if (slash <= 0 || slash === spec.length - 1) {
    throw new ConfigError(
      `Model "${spec}" names no provider: write provider/model, e.g. openai/gpt-4.1-mini`,
    );
  }
  const provider = spec.slice(0, slash);
  if (!Object.hasOwn(PRESETS, provider) && !Object.hasOwn(providers, provider)) {
    const known = [...new Set([...PROVIDER_NAMES, ...Object.keys(providers)])];
    throw new ConfigError(
      `Unknown provider "${provider}" in "${spec}". Known providers: ${known.join(", ")}. ` +
        `Add your own under "providers" in the settings file.`,
    );
  }
  return { provider, model: spec.slice(slash + 1) };
}

/**
 * Why a thinking budget does not apply to the model named by `spec`, reached as `options` say
 * (its API chosen as {@link resolveModel} chooses it), naming the model and what takes one;
 * `undefined` when the model takes a budget.
 *
 * @example
 * ```ts
 * import { thinkingBudgetNote } from "./resolve.ts";
 * if (thinkingBudgetNote("anthropic/claude-sonnet-4-5") !== undefined) throw new Error("unexpected");
 * if (!thinkingBudgetNote("openai/gpt-4.1-mini")?.startsWith("openai/gpt-4.1-mini takes no")) {
 *   throw new Error("unexpected");
 * }
 * if (!thinkingBudgetNote("openai/o3")?.includes("reasons on its own")) throw new Error("unexpected");
 * if (thinkingBudgetNote("openai/claude-sonnet-4-5", { api: "anthropic" }) !== undefined) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function thinkingBudgetNote(
  spec: string,
  options: ResolveModelOptions = {},
): string | undefined {
  const { provider, model } = parseModelSpec(spec, options.providers);
  const preset = _preset(provider, options.providers);
  const api = options.api ?? options.models?.[spec]?.api ??
    apiOf(preset, model, _baseURL(preset, options, options.env ?? readEnv));
  const family = api === "anthropic" ? "anthropic" : "openai";
  const budgeted = `models on Anthropic's API take one (anthropic/claude-…, or a provider of ` +
    `your settings with "api": "anthropic")`;
  switch (lookupThinking(family, model)) {
    case "budget":
      return undefined;
    case "own":
      return `${spec} reasons on its own, with no thinking budget to set; ${budgeted}`;
    case "none":
      return api === "anthropic"
        ? `${spec} has no extended thinking; Claude 3.7 Sonnet and later models have it`
        : `${spec} takes no thinking budget; ${budgeted}`;
  }
}

/**
 * Reads an environment variable, or gives `undefined` when Deno does not already grant access
 * to it. It never makes Deno ask.
 *
 * @example
 * ```ts
 * import { readEnv } from "./resolve.ts";
 * const home = readEnv("HOME");
 * if (home !== undefined && typeof home !== "string") throw new Error("unexpected");
 * ```
 */
export function readEnv(name: string): string | undefined {
  try {
    if (Deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") {
      return undefined;
    }
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/** Why a key's env var gave nothing, and what to do. */
/** A provider that needs an API key has none: the message says which variable to set. */
export class MissingKeyError extends ConfigError {}

function _missingKey(provider: string, keyEnv: string): string {
  const granted = Deno.permissions.querySync({ name: "env", variable: keyEnv }).state === "granted";
  return granted
    ? `No API key for ${provider}: set ${keyEnv}`
    : `No API key for ${provider}: Deno does not grant reading ${keyEnv}; run with ` +
      `--allow-env=${keyEnv} (or --allow-env)`;
}

/** The API root a model is reached at, without a trailing slash. */
function _baseURL(
  preset: ProviderPreset,
  options: ResolveModelOptions,
  env: (name: string) => string | undefined,
): string {
  const root = options.baseURL || (preset.baseURLEnv ? env(preset.baseURLEnv) : undefined) ||
    preset.baseURL;
  return root.replace(/\/+$/, "");
}

function _preset(
  name: string,
  providers: Readonly<Record<string, ProviderConfig>> | undefined,
): ProviderPreset {
  const own = providers && Object.hasOwn(providers, name) ? providers[name] : undefined;
  if (!own) return PRESETS[name];
  const { api = "openai", baseURL, apiKeyEnv, headers, local, reasoning, ...style } = own;
  return { api, baseURL, keyEnv: apiKeyEnv, headers, local, reasoning, style };
}

function _info(
  provider: string,
  model: string,
  preset: ProviderPreset,
  override: ModelOverride | undefined,
): ModelInfo {
  const known = lookupModelInfo(provider, model, preset.local === true);
  if (!override) return known;
  return {
    contextWindow: override.contextWindow ?? known.contextWindow,
    maxOutputTokens: override.maxOutputTokens ?? known.maxOutputTokens,
    pricing: override.pricing ?? known.pricing,
  };
}
