/**
 * Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama, vLLM,
 * llama.cpp, LM Studio, …) through `npm:openai`, loaded on first use.
 *
 * @module
 */

import type OpenAI from "openai";
import { rootCause } from "../providers/http_errors.ts";
import { openaiClient } from "../providers/openai_client.ts";
import { MemoryError } from "./errors.ts";

/** Where embeddings come from. */
export interface EmbeddingsOptions {
  /** The API root including `/v1`, e.g. `http://127.0.0.1:11434/v1`. */
  baseURL: string;
  /** The API key. Local servers need none. */
  apiKey?: string;
  /** The embedding model at the server, e.g. `text-embedding-3-small`. */
  model: string;
  /** The vectors' dimension, for models that can shorten them (sent as `dimensions`). */
  dimensions?: number;
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
  /** The most texts per request (default 128). */
  batchSize?: number;
  /** The longest wait for one request (default 60 s). */
  timeoutMs?: number;
}

/** Turns texts into vectors. */
export interface Embedder {
  /** Names the vector space (model and dimension): vectors of different keys are not compared. */
  readonly key: string;
  /** One vector per text, in order. Throws a {@link MemoryError} (`embeddings`) on failure. */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

/** The most characters per request, whatever the batch size: about 100,000 tokens. */
const _MAX_BATCH_CHARS = 400_000;

/**
 * An {@link Embedder} for an OpenAI-compatible server. Texts are sent in batches, one request
 * at a time; the SDK does not retry (a failed embedding is retried later by the memory).
 *
 * @example
 * ```ts
 * import { openaiEmbedder } from "./embeddings.ts";
 * import { startMockEmbeddingsServer } from "../testing/mock_embeddings_server.ts";
 * await using server = startMockEmbeddingsServer({ dimensions: 8 });
 * const embedder = openaiEmbedder({ baseURL: server.url, model: "mock-embed" });
 * const [a, b] = await embedder.embed(["sqlite lock", "sqlite lock"]);
 * if (a.length !== 8 || a.join() !== b.join() || embedder.key !== "mock-embed") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function openaiEmbedder(options: EmbeddingsOptions): Embedder {
  const baseURL = options.baseURL.replace(/\/+$/, "");
  const batchSize = options.batchSize ?? 128;
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new RangeError(`Bad embeddings batchSize ${batchSize}: use a positive integer`);
  }
  if (!options.model) throw new TypeError("Embeddings need a model name");
  const connect = openaiClient({
    apiKey: options.apiKey,
    baseURL,
    timeoutMs: options.timeoutMs ?? 60_000,
    fetch: options.fetch,
  });
  const where = `${baseURL} (${options.model})`;

  const request = async (texts: string[], signal?: AbortSignal): Promise<Float32Array[]> => {
    const { sdk, client } = await connect();
    let response: OpenAI.CreateEmbeddingResponse;
    try {
      response = await client.embeddings.create({
        model: options.model,
        input: texts,
        ...(options.dimensions ? { dimensions: options.dimensions } : {}),
      }, { signal });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new MemoryError(`Embeddings failed at ${where}: ${_describe(error, sdk)}`, {
        reason: "embeddings",
        cause: error,
      });
    }
    const vectors: Float32Array[] = new Array(texts.length);
    for (const [i, item] of (response.data ?? []).entries()) {
      const at = typeof item.index === "number" ? item.index : i;
      if (at >= 0 && at < texts.length) vectors[at] = Float32Array.from(item.embedding);
    }
    for (let i = 0; i < texts.length; i++) {
      if (!vectors[i]?.length) {
        throw new MemoryError(
          `Embeddings failed at ${where}: no vector for input ${i} of ${texts.length}`,
          { reason: "embeddings" },
        );
      }
    }
    return vectors;
  };

  return {
    key: options.dimensions ? `${options.model}@${options.dimensions}` : options.model,
    async embed(texts, signal) {
      const vectors: Float32Array[] = [];
      for (let start = 0; start < texts.length;) {
        let end = start;
        for (let chars = 0; end < texts.length && end - start < batchSize; end++) {
          chars += texts[end].length;
          if (chars > _MAX_BATCH_CHARS && end > start) break;
        }
        vectors.push(...await request(texts.slice(start, end), signal));
        start = end;
      }
      return vectors;
    },
  };
}

function _describe(error: unknown, sdk: typeof import("openai")): string {
  if (error instanceof sdk.APIConnectionError) return `could not connect: ${rootCause(error)}`;
  if (error instanceof sdk.APIError && error.status !== undefined) {
    const body = error.error as { message?: unknown } | undefined;
    const message = typeof body?.message === "string" ? body.message : error.message;
    return `HTTP ${error.status}: ${message}`;
  }
  return error instanceof Error ? error.message : String(error);
}
