/**
 * The options every provider's model takes besides its id and base URL: the key and where it
 * comes from, the name the provider goes by, extra headers, how long to wait, and the fetch.
 *
 * @module
 */

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
