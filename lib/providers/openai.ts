/**
 * The OpenAI-compatible provider: Chat Completions through `npm:openai`, streamed. Works with
 * OpenAI and with the servers that speak its API (DeepSeek, Ollama, vLLM, llama.cpp, LM Studio,
 * OpenRouter, Groq, …), whatever their streaming habits.
 *
 * @module
 */

import type { APIError } from "openai";
import { ProviderError } from "../errors.ts";
import type { Model, ModelEvent, ModelRequest } from "../model.ts";
import { callSite, type ProviderModelOptions } from "./model_options.ts";
import { chunkReader } from "./openai_chunks.ts";
import { streamError } from "./openai_finish.ts";
import { openaiClient } from "./openai_client.ts";
import { chatOrigin, chatRequest, type ChatRequestStyle } from "./openai_request.ts";
import { sdkError, type SdkErrorReading, sdkResponse } from "./sdk_errors.ts";
import { eventJson, readSse } from "./sse.ts";

/** OpenAI's own API. */
export const OPENAI_BASE_URL = "https://api.openai.com/v1";

/**
 * Options of {@link openaiModel}; `provider` defaults to `openai`, `keyEnv` to
 * `OPENAI_API_KEY`.
 */
export interface OpenAIModelOptions extends ProviderModelOptions, ChatRequestStyle {
  /** The model id at the server, e.g. `gpt-4.1-mini`. */
  model: string;
  /** The API root including `/v1` (default OpenAI's). */
  baseURL?: string;
}

/**
 * A model served over the OpenAI Chat Completions API.
 *
 * @example
 * ```ts
 * import { openaiModel } from "./openai.ts";
 * const model = openaiModel({ model: "llama3.2", baseURL: "http://127.0.0.1:11434/v1" });
 * if (model.provider !== "openai" || model.id !== "llama3.2") throw new Error("unexpected");
 * ```
 */
export function openaiModel(options: OpenAIModelOptions): Model {
  const where = callSite(options, {
    provider: "openai",
    baseURL: OPENAI_BASE_URL,
    keyEnv: "OPENAI_API_KEY",
  });
  const { provider, baseURL } = where;
  const style: ChatRequestStyle = {
    maxTokensParam: baseURL === OPENAI_BASE_URL ? "max_completion_tokens" : "max_tokens",
    ...options,
  };
  const origin = chatOrigin(provider, options.model);
  const idleTimeoutMs = options.idleTimeoutMs ?? 300_000;
  const connect = openaiClient({
    apiKey: options.apiKey,
    baseURL,
    timeoutMs: options.timeoutMs ?? 600_000,
    headers: options.headers,
    fetch: options.fetch,
  });
  // Start loading the SDK now: the first request needs it, and loading overlaps the set-up.
  connect().catch(() => {});

  return {
    provider,
    id: options.model,
    info: options.info,
    async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
      const { sdk, client } = await connect();
      const failures = { reading: _reading(sdk, provider), where, signal: request.signal };
      const response = await sdkResponse(
        () =>
          client.chat.completions.create(
            chatRequest(options.model, request, { ...style, origin }),
            {
              signal: request.signal,
            },
          ),
        failures,
      );
      const reader = chunkReader(provider, { origin });
      let chunks = 0;
      let done = false;
      try {
        if ((response.headers.get("content-type") ?? "").includes("application/json")) {
          // The server ignored `stream: true` and sent the whole answer (or an error) at once.
          const body = await response.json();
          if (body?.error) throw streamError(provider, body.error);
          chunks = 1;
          done = true;
          yield* reader.read(body);
        } else {
          for await (const event of readSse(response.body, { idleTimeoutMs, provider })) {
            const data = event.data.trim();
            if (data === "[DONE]") {
              done = true;
              break;
            }
            const chunk = eventJson(data);
            if (event.event === "error") {
              throw streamError(provider, (chunk as { error?: unknown })?.error ?? chunk ?? data);
            }
            if (chunk === undefined) continue; // a ping or other non-JSON line
            chunks++;
            yield* reader.read(chunk);
          }
        }
      } catch (error) {
        throw sdkError(error, failures);
      }
      if (chunks === 0) {
        throw new ProviderError(`${provider} sent an empty stream`, { retryable: true });
      }
      const end = reader.end();
      if (!end.finished && !done) {
        throw new ProviderError(`${provider} cut the stream before the answer finished`, {
          retryable: true,
        });
      }
      yield* end.events;
    },
  };
}

/** How the OpenAI SDK's errors read: a JSON error's message and code, else the body as it came. */
function _reading(sdk: typeof import("openai"), provider: string): SdkErrorReading<APIError> {
  const message = (error: APIError) => {
    const body = error.error as { message?: unknown } | undefined;
    return typeof body?.message === "string" ? body.message : undefined;
  };
  return {
    APIConnectionError: sdk.APIConnectionError,
    APIError: sdk.APIError,
    failure: (error) => ({
      message: message(error) ?? error.message,
      // Without a JSON error, the SDK's message is the status and the body as it came.
      body: message(error) === undefined ? error.message : undefined,
      code: typeof error.code === "string" ? error.code : undefined,
    }),
    streamError: (error) => streamError(provider, error.error ?? error.message),
  };
}
