/**
 * The providers known by name: where each lives, which env var holds its key, and how it
 * differs from the others on the wire.
 *
 * @module
 */

import type { ChatRequestStyle } from "./openai_request.ts";
import type { ResponsesReasoning } from "./responses_request.ts";

/**
 * A wire protocol: OpenAI's Chat Completions (`openai`, which most servers speak), OpenAI's
 * Responses API (`openai-responses`), or Anthropic's Messages API (`anthropic`).
 */
export type ProviderApi = "openai" | "openai-responses" | "anthropic";

/** The wire protocols, by the name settings and `--api` use. */
export const PROVIDER_APIS: readonly ProviderApi[] = ["openai", "openai-responses", "anthropic"];

/** How to reach a provider. */
export interface ProviderPreset {
  /** The wire protocol. */
  api: ProviderApi;
  /** The wire protocol for a model at an API root, when it depends on them (default `api`). */
  apiFor?: (model: string, baseURL: string) => ProviderApi;
  /** The API root: with `/v1` for OpenAI-compatible servers, without for Anthropic. */
  baseURL: string;
  /** The env var that holds the key. */
  keyEnv?: string;
  /** The env var that overrides the base URL. */
  baseURLEnv?: string;
  /** A local server: no key needed, nothing to pay. */
  local?: boolean;
  /** Extra HTTP headers. */
  headers?: Record<string, string>;
  /** Over the Responses API: the provider's models reason, with this effort and summary. */
  reasoning?: ResponsesReasoning;
  /** The server's request habits, or a function of the model and the API root that gives them. */
  style?: ChatRequestStyle | ((model: string, baseURL: string) => ChatRequestStyle);
}

// OpenAI itself wants max_completion_tokens, and the "developer" role for its reasoning models;
// the other servers reached as openai/… with another base URL keep the common dialect.
const openaiStyle = (model: string, baseURL: string): ChatRequestStyle =>
  baseURL !== "https://api.openai.com/v1" ? {} : {
    maxTokensParam: "max_completion_tokens",
    systemRole: /^(o\d|gpt-5)/.test(model) ? "developer" : "system",
  };

/**
 * Whether `model` is one of OpenAI's reasoning models (the o-series, gpt-5 and later, the codex
 * models), which keep their reasoning across turns only through the Responses API.
 *
 * @example
 * ```ts
 * import { isOpenAIReasoningModel } from "./presets.ts";
 * if (!isOpenAIReasoningModel("gpt-5.1-codex") || isOpenAIReasoningModel("gpt-4.1")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function isOpenAIReasoningModel(model: string): boolean {
  return /^(o\d|gpt-([5-9]|\d\d)|codex)/.test(model);
}

// OpenAI's own API serves its reasoning models over Responses; a server reached as openai/…
// at another root speaks Chat Completions unless the settings or --api say otherwise.
const openaiApi = (model: string, baseURL: string): ProviderApi =>
  baseURL === "https://api.openai.com/v1" && isOpenAIReasoningModel(model)
    ? "openai-responses"
    : "openai";

/** The built-in providers, by the name used in `provider/model`. */
export const PRESETS: Readonly<Record<string, ProviderPreset>> = {
  openai: {
    api: "openai",
    baseURL: "https://api.openai.com/v1",
    keyEnv: "OPENAI_API_KEY",
    baseURLEnv: "OPENAI_BASE_URL",
    apiFor: openaiApi,
    style: openaiStyle,
  },
  anthropic: {
    api: "anthropic",
    baseURL: "https://api.anthropic.com",
    keyEnv: "ANTHROPIC_API_KEY",
    baseURLEnv: "ANTHROPIC_BASE_URL",
  },
  deepseek: {
    api: "openai",
    baseURL: "https://api.deepseek.com/v1",
    keyEnv: "DEEPSEEK_API_KEY",
    baseURLEnv: "DEEPSEEK_BASE_URL",
  },
  openrouter: {
    api: "openai",
    baseURL: "https://openrouter.ai/api/v1",
    keyEnv: "OPENROUTER_API_KEY",
    baseURLEnv: "OPENROUTER_BASE_URL",
    headers: { "HTTP-Referer": "https://jsr.io/@x/agent", "X-Title": "@x/agent" },
  },
  groq: {
    api: "openai",
    baseURL: "https://api.groq.com/openai/v1",
    keyEnv: "GROQ_API_KEY",
    baseURLEnv: "GROQ_BASE_URL",
    style: { maxTokensParam: "max_completion_tokens" },
  },
  mistral: {
    api: "openai",
    baseURL: "https://api.mistral.ai/v1",
    keyEnv: "MISTRAL_API_KEY",
    baseURLEnv: "MISTRAL_BASE_URL",
    // Mistral refuses stream_options (422) and wants 9-character alphanumeric tool call ids.
    style: { includeUsage: false, toolCallIds: "alnum9" },
  },
  together: {
    api: "openai",
    baseURL: "https://api.together.xyz/v1",
    keyEnv: "TOGETHER_API_KEY",
    baseURLEnv: "TOGETHER_BASE_URL",
  },
  xai: {
    api: "openai",
    baseURL: "https://api.x.ai/v1",
    keyEnv: "XAI_API_KEY",
    baseURLEnv: "XAI_BASE_URL",
  },
  gemini: {
    api: "openai",
    baseURL: "https://generativelanguage.googleapis.com/v1beta/openai",
    keyEnv: "GEMINI_API_KEY",
    baseURLEnv: "GEMINI_BASE_URL",
  },
  ollama: {
    api: "openai",
    baseURL: "http://127.0.0.1:11434/v1",
    baseURLEnv: "OLLAMA_BASE_URL",
    keyEnv: "OLLAMA_API_KEY",
    local: true,
  },
  lmstudio: {
    api: "openai",
    baseURL: "http://127.0.0.1:1234/v1",
    baseURLEnv: "LMSTUDIO_BASE_URL",
    keyEnv: "LMSTUDIO_API_KEY",
    local: true,
  },
  vllm: {
    api: "openai",
    baseURL: "http://127.0.0.1:8000/v1",
    baseURLEnv: "VLLM_BASE_URL",
    keyEnv: "VLLM_API_KEY",
    local: true,
  },
  llamacpp: {
    api: "openai",
    baseURL: "http://127.0.0.1:8080/v1",
    baseURLEnv: "LLAMACPP_BASE_URL",
    keyEnv: "LLAMACPP_API_KEY",
    local: true,
  },
};

/**
 * The wire protocol of `preset` for `model` at `baseURL`.
 *
 * @example
 * ```ts
 * import { apiOf, PRESETS } from "./presets.ts";
 * const openai = PRESETS.openai;
 * if (apiOf(openai, "gpt-5", openai.baseURL) !== "openai-responses") throw new Error("unexpected");
 * if (apiOf(openai, "gpt-5", "http://127.0.0.1:8000/v1") !== "openai") throw new Error("unexpected");
 * ```
 */
export function apiOf(preset: ProviderPreset, model: string, baseURL: string): ProviderApi {
  return preset.apiFor?.(model, baseURL) ?? preset.api;
}

/**
 * The request habits of `preset` for `model` at `baseURL`.
 *
 * @example
 * ```ts
 * import { PRESETS, styleOf } from "./presets.ts";
 * const openai = PRESETS.openai;
 * if (styleOf(openai, "o3", openai.baseURL).systemRole !== "developer") throw new Error("unexpected");
 * if (styleOf(openai, "o3", "http://127.0.0.1:8000/v1").systemRole) throw new Error("unexpected");
 * if (styleOf(PRESETS.mistral, "x", "").includeUsage !== false) throw new Error("unexpected");
 * ```
 */
export function styleOf(preset: ProviderPreset, model: string, baseURL: string): ChatRequestStyle {
  return typeof preset.style === "function" ? preset.style(model, baseURL) : preset.style ?? {};
}
