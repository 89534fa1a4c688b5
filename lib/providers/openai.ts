/**
 * The OpenAI-compatible provider: Chat Completions through `npm:openai`, streamed. Works with
 * OpenAI and with the servers that speak its API (DeepSeek, Ollama, vLLM, llama.cpp, LM Studio,
 * OpenRouter, Groq, …), whatever their streaming habits.
 *
 * @module
 */

import { ProviderError } from "../errors.ts";
import type { Model, ModelEvent, ModelRequest } from "../model.ts";
import type { ProviderModelOptions } from "./model_options.ts";
import { chunkReader } from "./openai_chunks.ts";
import { streamError } from "./openai_finish.ts";
import { OPENAI_BASE_URL, openaiConnection, openaiErrorReading } from "./openai_client.ts";
import { chatOrigin, chatRequest, type ChatRequestStyle } from "./openai_request.ts";
import { sdkError, sdkResponse } from "./sdk_errors.ts";
import { eventJson, readSseBatches } from "./sse.ts";

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
  const { where, connect, idleTimeoutMs } = openaiConnection(options);
  const { provider, baseURL } = where;
  const style: ChatRequestStyle = {
    maxTokensParam: baseURL === OPENAI_BASE_URL ? "max_completion_tokens" : "max_tokens",
    ...options,
  };
  const origin = chatOrigin(provider, options.model);

  return {
    provider,
    id: options.model,
    info: options.info,
    async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
      const { sdk, client } = await connect();
      const reading = openaiErrorReading(
        sdk,
        (error) => streamError(provider, error.error ?? error.message),
      );
      const failures = {
        reading,
        where,
        signal: request.signal,
        path: "/chat/completions",
        notFound:
          "and that the server speaks Chat Completions (or choose its API: openai-responses)",
      };
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
          for (const event of reader.read(body)) yield event;
        } else {
          // The events of each piece of the body are read here, in one go, to keep the steps
          // per token few: a long answer streams tens of thousands of them.
          const sse = readSseBatches(response.body, { idleTimeoutMs, provider });
          reading: for await (const batch of sse) {
            for (const event of batch) {
              const data = event.data.trim();
              if (data === "[DONE]") {
                done = true;
                break reading;
              }
              const chunk = eventJson(data);
              if (event.event === "error") {
                throw streamError(provider, (chunk as { error?: unknown })?.error ?? chunk ?? data);
              }
              if (chunk === undefined) continue; // a ping or other non-JSON line
              chunks++;
              const events = reader.read(chunk);
              for (let i = 0; i < events.length; i++) yield events[i];
            }
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
      for (const event of end.events) yield event;
    },
  };
}
