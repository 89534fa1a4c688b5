/**
 * The library's errors. Each subclass says whose fault it is: the caller's configuration
 * ({@link ConfigError}), the provider ({@link ProviderError}), or the model's behaviour
 * ({@link ModelBehaviorError}).
 *
 * @module
 */

/**
 * The base of every error the library raises on purpose.
 *
 * @example
 * ```ts
 * import { AgentError, ConfigError } from "./errors.ts";
 * const error = new ConfigError("No API key for openai: set OPENAI_API_KEY");
 * if (!(error instanceof AgentError) || error.name !== "ConfigError") throw new Error("unexpected");
 * ```
 */
export class AgentError extends Error {
  /** Creates the error; `options.cause` is kept. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The caller's configuration is wrong (missing key, unknown provider, rejected credentials). */
export class ConfigError extends AgentError {}

/** Details of a {@link ProviderError}. */
export interface ProviderErrorOptions extends ErrorOptions {
  /** The HTTP status, when there was one. */
  status?: number;
  /** Whether trying again may succeed. */
  retryable?: boolean;
  /** How long the provider asked to wait before trying again. */
  retryAfterMs?: number;
}

/**
 * The provider failed: an HTTP error, a dropped connection, a stream cut short, an error
 * sent in the middle of a stream. `retryable` says whether the loop should try again.
 *
 * @example
 * ```ts
 * import { ProviderError } from "./errors.ts";
 * const error = new ProviderError("overloaded", { status: 529, retryable: true });
 * if (!error.retryable) throw new Error("unexpected");
 * ```
 */
export class ProviderError extends AgentError {
  /** The HTTP status, when there was one. */
  readonly status?: number;
  /** Whether trying again may succeed. */
  readonly retryable: boolean;
  /** How long the provider asked to wait before trying again. */
  readonly retryAfterMs?: number;

  /** Creates the error. */
  constructor(message: string, options: ProviderErrorOptions = {}) {
    super(message, options);
    this.status = options.status;
    this.retryable = options.retryable ?? false;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** The conversation no longer fits the model's context window. Not retried as is. */
export class ContextLengthError extends ProviderError {}

/** The model is stuck, e.g. it keeps making the same call with the same input. */
export class ModelBehaviorError extends AgentError {}

/**
 * A plain description of any thrown value, for events and results.
 *
 * @example
 * ```ts
 * import { describeError } from "./errors.ts";
 * const { name, message } = describeError(new TypeError("bad"));
 * if (name !== "TypeError" || message !== "bad") throw new Error("unexpected");
 * ```
 */
export function describeError(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: "Error", message: String(error) };
}
