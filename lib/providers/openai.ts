/**
 * The OpenAI-compatible provider: Chat Completions through `npm:openai`, streamed. Works with
 * OpenAI and with the servers that speak its API (DeepSeek, Ollama, vLLM, llama.cpp, LM Studio,
 * OpenRouter, Groq, …), whatever their streaming habits.
 *
 * @module
 */

import type OpenAI from "openai";
import { AgentError, ConfigError, ProviderError } from "../errors.ts";
import type { Model, ModelEvent, ModelInfo, ModelRequest } from "../model.ts";
import { httpError, isConnectionLoss, unreachable } from "./http_errors.ts";
import { chunkReader, streamError } from "./openai_chunks.ts";
import { chatRequest, type ChatRequestStyle } from "./openai_request.ts";
import { readSse } from "./sse.ts";

/** OpenAI's own API. */
export const OPENAI_BASE_URL = "https://api.openai.com/v1";

/** Options of {@link openaiModel}. */
export interface OpenAIModelOptions extends ChatRequestStyle {
  /** The model id at the server, e.g. `gpt-4.1-mini`. */
  model: string;
  /** The API key. Local servers need none. */
  apiKey?: string;
  /** The API root including `/v1` (default OpenAI's). */
  baseURL?: string;
  /** The provider's name in events and errors (default `openai`). */
  provider?: string;
  /** The env var the key comes from, named in credential errors (default `OPENAI_API_KEY`). */
  keyEnv?: string;
  /** Extra HTTP headers. */
  headers?: Record<string, string>;
  /** The longest wait for the response to start (default 10 minutes). */
  timeoutMs?: number;
  /** The longest silence inside a stream before it counts as stalled (default 5 minutes). */
  idleTimeoutMs?: number;
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
  /** The model's limits and prices, reported as `model.info`. */
  info?: ModelInfo;
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
  const provider = options.provider ?? "openai";
  const baseURL = (options.baseURL ?? OPENAI_BASE_URL).replace(/\/+$/, "");
  const keyEnv = options.keyEnv ?? "OPENAI_API_KEY";
  if (!options.apiKey && baseURL === OPENAI_BASE_URL) {
    throw new ConfigError(`No API key for ${provider}: set ${keyEnv}`);
  }
  const style: ChatRequestStyle = {
    maxTokensParam: baseURL === OPENAI_BASE_URL ? "max_completion_tokens" : "max_tokens",
    ...options,
  };
  const idleTimeoutMs = options.idleTimeoutMs ?? 300_000;
  let client: Promise<{ sdk: typeof import("openai"); client: OpenAI }> | undefined;
  const connect = () =>
    client ??= import("openai").then((sdk) => ({
      sdk,
      client: new sdk.OpenAI({
        apiKey: options.apiKey || "none",
        baseURL,
        maxRetries: 0, // the agent loop retries, with events
        timeout: options.timeoutMs ?? 600_000,
        defaultHeaders: options.headers,
        fetch: options.fetch,
        logLevel: "off",
        organization: null,
        project: null,
        webhookSecret: null,
      }),
    }));
  // Start loading the SDK now: the first request needs it, and loading overlaps the set-up.
  connect().catch(() => {});

  return {
    provider,
    id: options.model,
    info: options.info,
    async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
      const { sdk, client } = await connect();
      const fail = (error: unknown) =>
        _providerError(
          error,
          sdk,
          { provider, keyEnv, model: options.model, baseURL },
          request.signal,
        );
      let response: Response;
      try {
        response = await client.chat.completions
          .create(chatRequest(options.model, request, style), { signal: request.signal })
          .asResponse();
      } catch (error) {
        throw fail(error);
      }
      const reader = chunkReader(provider);
      let chunks = 0;
      let done = false;
      try {
        if (!response.body) {
          throw new ProviderError(`${provider} sent no body`, { retryable: true });
        }
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
            const chunk = _json(data);
            if (event.event === "error") {
              throw streamError(provider, (chunk as { error?: unknown })?.error ?? chunk ?? data);
            }
            if (chunk === undefined) continue; // a ping or other non-JSON line
            chunks++;
            yield* reader.read(chunk);
          }
        }
      } catch (error) {
        throw fail(error);
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

function _json(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

interface _Where {
  provider: string;
  keyEnv: string;
  model: string;
  baseURL: string;
}

/** The library error for whatever the SDK or the network threw. */
function _providerError(
  error: unknown,
  sdk: typeof import("openai"),
  where: _Where,
  signal: AbortSignal | undefined,
): unknown {
  if (error instanceof AgentError || signal?.aborted) return error;
  const { provider } = where;
  if (error instanceof sdk.APIConnectionError) return unreachable(provider, where.baseURL, error);
  if (error instanceof sdk.APIError) {
    const body = error.error as { message?: unknown } | undefined;
    const message = typeof body?.message === "string" ? body.message : error.message;
    const code = typeof error.code === "string" ? error.code : undefined;
    if (error.status === undefined) return streamError(provider, error.error ?? message);
    return httpError({
      provider,
      status: error.status,
      message,
      // Without a JSON error, the SDK's message is the status and the body as it came.
      body: typeof body?.message === "string" ? undefined : error.message,
      code,
      headers: error.headers,
      keyEnv: where.keyEnv,
      model: where.model,
      cause: error,
    });
  }
  if (isConnectionLoss(error)) {
    return new ProviderError(`The connection to ${provider} failed: ${(error as Error).message}`, {
      retryable: true,
      cause: error,
    });
  }
  return error;
}
