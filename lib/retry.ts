/**
 * When and how long to wait before trying a failed model call again.
 *
 * @module
 */

import { ProviderError } from "./errors.ts";

/** How failed model calls are retried. */
export interface RetryOptions {
  /** Retries after the first attempt (default 5; 0 disables retrying). */
  maxRetries?: number;
  /** The first backoff delay (default 1,000 ms); it doubles with each retry. */
  initialDelayMs?: number;
  /** The longest backoff delay (default 30,000 ms). */
  maxDelayMs?: number;
  /** The longest wait a provider's `retry-after` may ask for (default 60,000 ms). */
  maxRetryAfterMs?: number;
}

/** The defaults of {@link RetryOptions}. */
export const RETRY_DEFAULTS: Required<RetryOptions> = {
  maxRetries: 5,
  initialDelayMs: 1_000,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 60_000,
};

/**
 * Whether a failed model call may be tried again.
 *
 * @example
 * ```ts
 * import { ProviderError } from "./errors.ts";
 * import { isRetryable } from "./retry.ts";
 * if (!isRetryable(new ProviderError("busy", { status: 429, retryable: true }))) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function isRetryable(error: unknown): error is ProviderError {
  return error instanceof ProviderError && error.retryable;
}

/**
 * The wait before retry number `attempt` (from 1): the provider's `retry-after` when it gave
 * one (capped), otherwise exponential backoff with jitter between half and all of the step.
 *
 * @example
 * ```ts
 * import { ProviderError } from "./errors.ts";
 * import { retryDelay } from "./retry.ts";
 * const error = new ProviderError("busy", { retryable: true, retryAfterMs: 2_000 });
 * if (retryDelay(1, error) !== 2_000) throw new Error("unexpected");
 * ```
 */
export function retryDelay(
  attempt: number,
  error: ProviderError,
  options: RetryOptions = {},
  random: () => number = Math.random,
): number {
  const { initialDelayMs, maxDelayMs, maxRetryAfterMs } = { ...RETRY_DEFAULTS, ...options };
  if (error.retryAfterMs !== undefined) {
    return Math.max(0, Math.min(error.retryAfterMs, maxRetryAfterMs));
  }
  const step = Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1));
  return Math.round(step / 2 + random() * step / 2);
}

/**
 * Reads an HTTP response's `retry-after-ms` or `retry-after` header (seconds or an HTTP date)
 * as milliseconds.
 *
 * @example
 * ```ts
 * import { parseRetryAfter } from "./retry.ts";
 * if (parseRetryAfter(new Headers({ "retry-after": "2" })) !== 2_000) throw new Error("unexpected");
 * ```
 */
export function parseRetryAfter(
  headers: Headers | undefined,
  now: number = Date.now(),
): number | undefined {
  const ms = Number.parseFloat(headers?.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers?.get("retry-after");
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
