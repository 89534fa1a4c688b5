/**
 * The `npm:openai` client, loaded on first use and set up the one way the library wants it:
 * no retries of its own (the caller retries, with events), no env var read, no log.
 *
 * @module
 */

import type OpenAI from "openai";
import { type SdkClient, sdkClient } from "./sdk_client.ts";

/** Options of {@link openaiClient}. */
export interface OpenAIClientOptions {
  /** The API root including `/v1`. */
  baseURL: string;
  /** The API key. Local servers need none. */
  apiKey?: string;
  /** The longest wait for a response to start. */
  timeoutMs: number;
  /** Extra HTTP headers. */
  headers?: Record<string, string>;
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
}

/**
 * A function that loads `npm:openai` at its first call and makes the client then; later calls
 * share both.
 *
 * @example
 * ```ts
 * import { openaiClient } from "./openai_client.ts";
 * const connect = openaiClient({ baseURL: "http://127.0.0.1:11434/v1", timeoutMs: 60_000 });
 * const { sdk, client } = await connect();
 * if (!(client instanceof sdk.OpenAI) || client.maxRetries !== 0) throw new Error("unexpected");
 * ```
 */
export function openaiClient(
  options: OpenAIClientOptions,
): () => Promise<SdkClient<typeof import("openai"), OpenAI>> {
  return sdkClient(() => import("openai"), (sdk) =>
    new sdk.OpenAI({
      apiKey: options.apiKey || "none",
      baseURL: options.baseURL,
      maxRetries: 0,
      timeout: options.timeoutMs,
      defaultHeaders: options.headers,
      fetch: options.fetch,
      logLevel: "off",
      organization: null,
      project: null,
      webhookSecret: null,
    }));
}
