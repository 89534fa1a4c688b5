/**
 * The native Anthropic provider: the Messages API through `npm:@anthropic-ai/sdk`, streamed,
 * with extended thinking kept and sent back with its signatures, and prompt caching.
 *
 * @module
 */

import type Anthropic from "@anthropic-ai/sdk";
import type { APIError } from "@anthropic-ai/sdk";
import { ConfigError } from "../errors.ts";
import { loadLazy } from "../lazy/load.ts";
import type { Model, ModelEvent, ModelRequest } from "../model.ts";
import { anthropicEventReader, anthropicStreamError } from "./anthropic_events.ts";
import { messagesRequest, type MessagesRequestStyle } from "./anthropic_request.ts";
import { type CallSite, callSite, type ProviderModelOptions } from "./model_options.ts";
import { sdkClient } from "./sdk_client.ts";
import { sdkError, type SdkErrorReading, sdkResponse } from "./sdk_errors.ts";
import { eventJson, readSse } from "./sse.ts";

/** Anthropic's own API root (without `/v1`, like `ANTHROPIC_BASE_URL`). */
export const ANTHROPIC_BASE_URL = "https://api.anthropic.com";

/**
 * Options of {@link anthropicModel}; `provider` defaults to `anthropic`, `keyEnv` to
 * `ANTHROPIC_API_KEY`.
 */
export interface AnthropicModelOptions extends ProviderModelOptions {
  /** The model id, e.g. `claude-sonnet-4-5`. */
  model: string;
  /** The API root without `/v1` (default Anthropic's), like `ANTHROPIC_BASE_URL`. */
  baseURL?: string;
  /** `max_tokens` when the request sets no limit (default `info.maxOutputTokens`, else 8192). */
  maxOutputTokens?: number;
  /** Extended thinking with a budget of tokens (at least 1,024); `max_tokens` is kept above it. */
  thinking?: { budgetTokens: number };
  /** Mark prompt-cache breakpoints on the system prompt, tools and conversation (default true). */
  cache?: boolean;
}

/**
 * A Claude model served over the Anthropic Messages API. The key goes out both as the SDK's
 * `Authorization: Bearer` and as `x-api-key`, which Anthropic-compatible servers and gateways
 * read. Sampling parameters (`temperature`) are not sent: the SDK's API version refuses them.
 *
 * @example
 * ```ts
 * import { anthropicModel } from "./anthropic.ts";
 * const model = anthropicModel({ model: "claude-sonnet-4-5", apiKey: "sk-ant-test" });
 * if (model.provider !== "anthropic" || model.id !== "claude-sonnet-4-5") throw new Error("unexpected");
 * ```
 */
export function anthropicModel(options: AnthropicModelOptions): Model {
  const where = callSite(options, {
    provider: "anthropic",
    baseURL: ANTHROPIC_BASE_URL,
    keyEnv: "ANTHROPIC_API_KEY",
  });
  const { provider } = where;
  const style: MessagesRequestStyle = {
    provider,
    maxOutputTokens: options.maxOutputTokens,
    info: options.info,
    thinking: options.thinking,
    cache: options.cache,
  };
  const idleTimeoutMs = options.idleTimeoutMs ?? 300_000;
  const connect = sdkClient(
    () => loadLazy("anthropic_sdk"),
    (sdk) => _client(sdk, options, where),
  );
  // Start loading the SDK now: the first request needs it, and loading overlaps the set-up.
  connect().catch(() => {});

  return {
    provider,
    id: options.model,
    info: options.info,
    async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
      const { sdk, client } = await connect();
      const failures = {
        reading: _reading(sdk, where),
        where,
        signal: request.signal,
        path: "/v1/messages",
        // The SDK adds /v1 itself: a root given with it is called at /v1/v1/messages.
        notFound: where.baseURL.endsWith("/v1")
          ? "which for Anthropic's API ends before /v1"
          : "and that the server speaks Anthropic's Messages API",
      };
      // Sent with the client's own `post`, as `messages.create()` sends it, but without the
      // warnings `create()` writes to the console about deprecated models (the library never
      // writes to the user's terminal); the headers `create()` adds are for fields not used here.
      const response = await sdkResponse(
        () =>
          client.post("/v1/messages", {
            body: messagesRequest(options.model, request, style),
            stream: true,
            signal: request.signal,
          }),
        failures,
      );
      const reader = anthropicEventReader(provider);
      try {
        // Read the SSE body here rather than through the SDK's Stream, so that every byte,
        // `ping` events included, keeps the stream from counting as stalled.
        for await (const event of readSse(response.body, { idleTimeoutMs, provider })) {
          if (event.event === "ping") continue;
          const data = eventJson(event.data);
          if (event.event === "error") {
            const body = data as { error?: unknown } | undefined;
            throw anthropicStreamError(provider, body?.error ?? body ?? event.data, where.keyEnv);
          }
          if (data !== undefined) yield* reader.read(data);
        }
      } catch (error) {
        throw sdkError(error, failures);
      }
      if (request.signal?.aborted) return;
      yield* reader.end();
    },
  };
}

/** The SDK client: no retries of its own, the key and base URL given, no env var read but one. */
function _client(
  sdk: typeof import("@anthropic-ai/sdk"),
  options: AnthropicModelOptions,
  where: CallSite,
): Anthropic {
  // Without a key, send no credential at all rather than a placeholder.
  const auth: Record<string, string | null> = options.apiKey
    ? { "x-api-key": options.apiKey }
    : { authorization: null };
  try {
    return new sdk.Anthropic({
      apiKey: options.apiKey || "none",
      baseURL: where.baseURL,
      maxRetries: 0, // the agent loop retries, with events
      timeout: options.timeoutMs ?? 600_000,
      defaultHeaders: { ...auth, ...options.headers },
      fetch: options.fetch,
      logLevel: "off",
      webhookKey: null,
      openTelemetry: false,
    });
  } catch (error) {
    // The SDK always reads ANTHROPIC_CUSTOM_HEADERS; without env access Deno refuses.
    if (error instanceof Deno.errors.NotCapable) {
      throw new ConfigError(
        `The Anthropic SDK reads the env var ANTHROPIC_CUSTOM_HEADERS: allow it with ` +
          `--allow-env=ANTHROPIC_CUSTOM_HEADERS (or --allow-env). ${error.message}`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** How the Anthropic SDK's errors read: the API's message and error type, else the body as it came. */
function _reading(
  sdk: typeof import("@anthropic-ai/sdk"),
  where: CallSite,
): SdkErrorReading<APIError> {
  return {
    APIConnectionError: sdk.APIConnectionError,
    APIError: sdk.APIError,
    failure: (error) => ({
      message: error.apiMessage ?? error.message,
      // Without a JSON error, the SDK's message is the status and the body as it came.
      body: error.apiMessage === null ? error.message : undefined,
      code: error.type ?? undefined,
    }),
    streamError: (error) => {
      // No HTTP status: an `error` event, as the SDK relays it.
      const body = error.error as { error?: unknown } | undefined;
      return anthropicStreamError(
        where.provider,
        body?.error ?? body ?? error.message,
        where.keyEnv,
      );
    },
  };
}
