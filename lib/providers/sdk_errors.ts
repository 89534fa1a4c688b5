/**
 * The library error for whatever a provider's npm SDK (`openai`, `@anthropic-ai/sdk`) or the
 * network threw. Both SDKs throw the same two kinds: one for a connection that failed, one for
 * the API's answer (an HTTP status, or none for an `error` event in a stream). Each provider
 * says how its own API's answer reads; the rest is decided here, once.
 *
 * @module
 */

import { AgentError, ProviderError } from "../errors.ts";
import { httpError, isConnectionLoss, unreachable } from "./http_errors.ts";
import type { CallSite } from "./model_options.ts";

/** The SDK's error for the API's answer. */
export interface SdkApiError extends Error {
  /** The HTTP status; none for an `error` event in a stream. */
  readonly status: number | undefined;
  /** The response headers. */
  readonly headers: Headers | undefined;
}

/** What the provider reads in an API error that has an HTTP status. */
export interface SdkApiFailure {
  /** The provider's message. */
  message: string;
  /** The body as it came, when it was not a JSON error. */
  body?: string;
  /** The provider's error code or type. */
  code?: string;
}

/** How a provider's SDK reports failures: its error classes, and how its API's errors read. */
export interface SdkErrorReading<E extends SdkApiError> {
  /** The SDK's class for a connection that failed (checked first: it is an API error too). */
  APIConnectionError: abstract new (...args: never[]) => Error;
  /** The SDK's class for the API's answer. */
  APIError: abstract new (...args: never[]) => E;
  /** The message, body and code of an API error with an HTTP status. */
  failure(error: E): SdkApiFailure;
  /** The library error for an `error` event in a stream, which the SDK relays without status. */
  streamError(error: E): AgentError;
}

/** Options of {@link sdkError}. */
export interface SdkErrorOptions<E extends SdkApiError> {
  /** How the SDK's errors read. */
  reading: SdkErrorReading<E>;
  /** Where the call went. */
  where: CallSite;
  /** The caller's signal: once it aborted, the error goes through as it is. */
  signal?: AbortSignal;
  /** The path called under the API root, named when the server has no such page. */
  path?: string;
  /** What else to check when the server has no such page (404). */
  notFound?: string;
}

/**
 * The library error for what an SDK call threw: the library's own errors and those of an
 * aborted call go through as they are; an unreachable server, an HTTP failure, an `error`
 * event and a lost connection become a {@link ProviderError} (or a `ConfigError` for
 * rejected credentials); anything else goes through.
 *
 * @example
 * ```ts
 * import { ProviderError } from "../errors.ts";
 * import { sdkError } from "./sdk_errors.ts";
 * class APIConnectionError extends Error {}
 * class APIError extends Error {
 *   constructor(readonly status: number | undefined, readonly headers: Headers | undefined) {
 *     super(`${status} slow down`);
 *   }
 * }
 * const error = sdkError(new APIError(429, new Headers()), {
 *   reading: {
 *     APIConnectionError,
 *     APIError,
 *     failure: () => ({ message: "slow down" }),
 *     streamError: (error) => new ProviderError(error.message),
 *   },
 *   where: { provider: "openai", keyEnv: "OPENAI_API_KEY", model: "gpt-4.1", baseURL: "" },
 * });
 * if (!(error instanceof ProviderError) || !error.retryable) throw new Error("unexpected");
 * ```
 */
export function sdkError<E extends SdkApiError>(
  error: unknown,
  options: SdkErrorOptions<E>,
): unknown {
  const { reading, where } = options;
  if (error instanceof AgentError || options.signal?.aborted) return error;
  const { provider } = where;
  if (error instanceof reading.APIConnectionError) {
    return unreachable(provider, where.baseURL, error);
  }
  if (error instanceof reading.APIError) {
    if (error.status === undefined) return reading.streamError(error);
    return httpError({
      provider,
      status: error.status,
      ...reading.failure(error),
      headers: error.headers,
      keyEnv: where.keyEnv,
      model: where.model,
      url: options.path === undefined ? undefined : `${where.baseURL}${options.path}`,
      notFound: options.notFound,
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

/** A response with a body to read. */
export type ResponseWithBody = Response & { body: ReadableStream<Uint8Array> };

/**
 * The response to a request sent through an SDK, unread: a request the SDK could not send or
 * the server refused, and a response without a body, are the library's errors
 * ({@link sdkError}).
 *
 * @example
 * ```ts
 * import { ProviderError } from "../errors.ts";
 * import { sdkResponse } from "./sdk_errors.ts";
 * const options = {
 *   reading: {
 *     APIConnectionError: class extends Error {},
 *     APIError: class extends Error {
 *       status = undefined;
 *       headers = undefined;
 *     },
 *     failure: () => ({ message: "" }),
 *     streamError: () => new ProviderError(""),
 *   },
 *   where: { provider: "test", keyEnv: "TEST_API_KEY", model: "m", baseURL: "" },
 * };
 * const response = await sdkResponse(() => ({ asResponse: async () => new Response("data: {}") }), options);
 * if (await response.text() !== "data: {}") throw new Error("unexpected");
 * const empty = await sdkResponse(() => ({ asResponse: async () => new Response(null) }), options)
 *   .catch((error) => error);
 * if (!(empty instanceof ProviderError) || !empty.retryable) throw new Error("unexpected");
 * ```
 */
export async function sdkResponse<E extends SdkApiError>(
  send: () => { asResponse(): Promise<Response> },
  options: SdkErrorOptions<E>,
): Promise<ResponseWithBody> {
  let response: Response;
  try {
    response = await send().asResponse();
  } catch (error) {
    throw sdkError(error, options);
  }
  if (!response.body) {
    throw new ProviderError(`${options.where.provider} sent no body`, { retryable: true });
  }
  return response as ResponseWithBody;
}
