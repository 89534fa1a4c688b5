/**
 * The options every provider's model takes besides its id and base URL (the key and where it
 * comes from, the name the provider goes by, extra headers, how long to wait, the fetch), and
 * where they send the model's calls.
 *
 * @module
 */

import { ConfigError } from "../errors.ts";
import type { ModelInfo } from "../model.ts";

/**
 * What the options of `openaiModel` and `anthropicModel` share. Each provider names its own
 * defaults for `provider` and `keyEnv` (`openai` and `OPENAI_API_KEY`, `anthropic` and
 * `ANTHROPIC_API_KEY`).
 *
 * @example
 * ```ts
 * import type { ProviderModelOptions } from "./model_options.ts";
 * const options: ProviderModelOptions = { apiKey: "sk-test", timeoutMs: 30_000 };
 * if (options.provider !== undefined) throw new Error("unexpected");
 * ```
 */
export interface ProviderModelOptions {
  /** The API key. A server other than the provider's own may need none. */
  apiKey?: string;
  /** The provider's name in events and errors (default the provider's own). */
  provider?: string;
  /** The env var the key comes from, named in credential errors. */
  keyEnv?: string;
  /** Extra HTTP headers (e.g. `anthropic-beta`). */
  headers?: Record<string, string>;
  /** The model's limits and prices, reported as `model.info`. */
  info?: ModelInfo;
  /** The longest wait for the response to start (default 10 minutes). */
  timeoutMs?: number;
  /** The longest silence inside a stream before it counts as stalled (default 5 minutes). */
  idleTimeoutMs?: number;
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
}

/** Where a model's calls go: named in the errors and their advice. */
export interface CallSite {
  /** The provider's name. */
  provider: string;
  /** The env var the key comes from. */
  keyEnv: string;
  /** The model asked for. */
  model: string;
  /** The API root called, without a trailing slash. */
  baseURL: string;
}

/** A provider's own name, API root and key env var: what its model's options default to. */
export interface ProviderDefaults {
  /** The provider's name. */
  provider: string;
  /** The provider's own API root. */
  baseURL: string;
  /** The env var of the provider's key. */
  keyEnv: string;
}

/**
 * Where a model's calls go, its options over the provider's defaults. A call to the provider's
 * own API without a key is refused at once: a {@link ConfigError} that names the env var.
 *
 * @example
 * ```ts
 * import { callSite } from "./model_options.ts";
 * const defaults = { provider: "openai", baseURL: "https://api.openai.com/v1", keyEnv: "OPENAI_API_KEY" };
 * const where = callSite({ model: "llama3.2", baseURL: "http://127.0.0.1:11434/v1/" }, defaults);
 * if (where.baseURL !== "http://127.0.0.1:11434/v1" || where.provider !== "openai") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function callSite(
  options: ProviderModelOptions & { model: string; baseURL?: string },
  defaults: ProviderDefaults,
): CallSite {
  const provider = options.provider ?? defaults.provider;
  const baseURL = (options.baseURL ?? defaults.baseURL).replace(/\/+$/, "");
  const keyEnv = options.keyEnv ?? defaults.keyEnv;
  if (!options.apiKey && baseURL === defaults.baseURL) {
    throw new ConfigError(`No API key for ${provider}: set ${keyEnv}`);
  }
  return { provider, keyEnv, model: options.model, baseURL };
}
