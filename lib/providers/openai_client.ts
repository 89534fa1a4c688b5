/**
 * The `npm:openai` client, loaded on first use and set up the one way the library wants it:
 * no retries of its own (the caller retries, with events), no env var read, no log.
 *
 * @module
 */

import type OpenAI from "openai";
import type { APIError } from "openai";
import type { AgentError } from "../errors.ts";
import { loadLazy } from "../lazy/load.ts";
import { type CallSite, callSite, type ProviderModelOptions } from "./model_options.ts";
import { type SdkClient, sdkClient } from "./sdk_client.ts";
import type { SdkErrorReading } from "./sdk_errors.ts";

/** OpenAI's own API. */
export const OPENAI_BASE_URL = "https://api.openai.com/v1";

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
 * share both. Models of one configuration (base URL, key, timeout, headers) share one client,
 * and its connections: one per provider configuration, not one per model or run. A `fetch` of
 * the caller's gets a client of its own.
 *
 * @example
 * ```ts
 * import { openaiClient } from "./openai_client.ts";
 * const connect = openaiClient({ baseURL: "http://127.0.0.1:11434/v1", timeoutMs: 60_000 });
 * const { sdk, client } = await connect();
 * if (!(client instanceof sdk.OpenAI) || client.maxRetries !== 0) throw new Error("unexpected");
 * const again = openaiClient({ baseURL: "http://127.0.0.1:11434/v1", timeoutMs: 60_000 });
 * if ((await again()).client !== client) throw new Error("one client per configuration");
 * ```
 */
export function openaiClient(
  options: OpenAIClientOptions,
): () => Promise<SdkClient<typeof import("openai"), OpenAI>> {
  if (options.fetch) return _connect(options);
  const key = JSON.stringify([
    options.baseURL,
    options.apiKey ?? "",
    options.timeoutMs,
    options.headers ?? {},
  ]);
  const known = _clients.get(key);
  if (known) return known;
  const made = _connect(options);
  const connect = () =>
    made().catch((error) => {
      // A client that could not be made is not kept for the next model.
      if (_clients.get(key) === connect) _clients.delete(key);
      throw error;
    });
  _clients.set(key, connect);
  if (_clients.size > _MAX_CLIENTS) _clients.delete(_clients.keys().next().value!);
  return connect;
}

/** The clients made, by configuration, oldest first. */
const _clients = new Map<string, () => Promise<SdkClient<typeof import("openai"), OpenAI>>>();

/** Configurations whose client is kept at most. */
const _MAX_CLIENTS = 32;

/** Loads the SDK at the first call, and makes the client for `options`. */
function _connect(
  options: OpenAIClientOptions,
): () => Promise<SdkClient<typeof import("openai"), OpenAI>> {
  return sdkClient(() => loadLazy("openai_sdk"), (sdk) =>
    new (_client(sdk))({
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

/** The client class made from the loaded SDK (see {@link _client}). */
let _Client: typeof OpenAI | undefined;

/**
 * The SDK's client class, sending a JSON body as `JSON.stringify` writes it. Its `create`
 * methods ask to watch the body being written (to learn `stream` from it, for the parsed
 * result), which makes `JSON.stringify` call back for every key and value of the conversation:
 * the costliest part of a request's set-up, for a result the library never asks for (it reads
 * the raw response). The request sent is the same, byte for byte.
 */
function _client(sdk: typeof import("openai")): typeof OpenAI {
  return _Client ??= class extends sdk.OpenAI {
    override buildRequest(
      ...[options, extra]: Parameters<OpenAI["buildRequest"]>
    ): ReturnType<OpenAI["buildRequest"]> {
      const metadata = options.__metadata;
      if (!metadata?.streamFromBody) return super.buildRequest(options, extra);
      const { streamFromBody: _, ...rest } = metadata;
      return super.buildRequest({ ...options, __metadata: rest }, extra);
    }
  };
}

/** What a model over either OpenAI API sets up once: where its calls go, and its client. */
export interface OpenAIConnection {
  /** Where the calls go. */
  where: CallSite;
  /** The SDK and the client, loaded at the first call (and already loading). */
  connect: () => Promise<SdkClient<typeof import("openai"), OpenAI>>;
  /** The longest silence inside a stream. */
  idleTimeoutMs: number;
}

/**
 * The connection of a model over an OpenAI API, its options over OpenAI's defaults (provider
 * `openai`, key from `OPENAI_API_KEY`). The SDK starts loading at once: the first request needs
 * it, and loading overlaps the rest of the set-up.
 *
 * @example
 * ```ts
 * import { openaiConnection } from "./openai_client.ts";
 * const { where, idleTimeoutMs } = openaiConnection({ model: "qwen3", baseURL: "http://127.0.0.1:11434/v1" });
 * if (where.provider !== "openai" || idleTimeoutMs !== 300_000) throw new Error("unexpected");
 * ```
 */
export function openaiConnection(
  options: ProviderModelOptions & { model: string; baseURL?: string },
): OpenAIConnection {
  const where = callSite(options, {
    provider: "openai",
    baseURL: OPENAI_BASE_URL,
    keyEnv: "OPENAI_API_KEY",
  });
  const connect = openaiClient({
    apiKey: options.apiKey,
    baseURL: where.baseURL,
    timeoutMs: options.timeoutMs ?? 600_000,
    headers: options.headers,
    fetch: options.fetch,
  });
  connect().catch(() => {});
  return { where, connect, idleTimeoutMs: options.idleTimeoutMs ?? 300_000 };
}

/**
 * How the OpenAI SDK's errors read: a JSON error's message and code, else the body as it came;
 * an `error` event in a stream, which the SDK relays without status, as `streamError` says.
 *
 * @example
 * ```ts
 * import { openaiErrorReading } from "./openai_client.ts";
 * import { ProviderError } from "../errors.ts";
 * const sdk = await import("openai");
 * const reading = openaiErrorReading(sdk, (error) => new ProviderError(error.message));
 * const error = new sdk.APIError(400, { message: "bad tool" }, undefined, new Headers());
 * if (reading.failure(error).message !== "bad tool") throw new Error("unexpected");
 * ```
 */
export function openaiErrorReading(
  sdk: typeof import("openai"),
  streamError: (error: APIError) => AgentError,
): SdkErrorReading<APIError> {
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
    streamError,
  };
}
