/**
 * The providers known by name: where each lives, which env var holds its key, and how it
 * differs from the others on the wire.
 *
 * @module
 */

import type { ChatRequestStyle } from "./openai_request.ts";

/** How to reach a provider. */
export interface ProviderPreset {
  /** The wire protocol: OpenAI Chat Completions, or Anthropic Messages. */
  api: "openai" | "anthropic";
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

/** The built-in providers, by the name used in `provider/model`. */
export const PRESETS: Readonly<Record<string, ProviderPreset>> = {
  openai: {
    api: "openai",
    baseURL: "https://api.openai.com/v1",
    keyEnv: "OPENAI_API_KEY",
    baseURLEnv: "OPENAI_BASE_URL",
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
