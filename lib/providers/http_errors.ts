/**
 * Turns a provider's HTTP failure into the library's errors: rejected credentials are the
 * caller's to fix ({@link ConfigError}), an overflowing context is a
 * {@link ContextLengthError}, and rate limits, timeouts and server faults are retryable, save
 * those that waiting does not mend (501 Not Implemented, 505 HTTP Version Not Supported). A
 * body that is not a JSON error, such as the web page of a server that is not the API, is said
 * in one short line.
 *
 * @module
 */

import { ConfigError, ContextLengthError, ProviderError } from "../errors.ts";
import { parseRetryAfter } from "../retry.ts";

/** What is known about a failed HTTP call. */
export interface HttpFailure {
  /** The provider's name. */
  provider: string;
  /** The HTTP status. */
  status: number;
  /** The provider's message. */
  message: string;
  /**
   * The response body, when it was not a JSON error (a web page, plain text): the error says
   * it in place of `message`, in short (a page's title or the first line of text).
   */
  body?: string;
  /** The provider's error code or type, if any. */
  code?: string;
  /** The response headers. */
  headers?: Headers;
  /** The env var that holds the key, for the advice in a credentials error. */
  keyEnv?: string;
  /** The model asked for. */
  model?: string;
  /** The address called, named when the server has no such page (404). */
  url?: string;
  /** What else to check when the server has no such page (404). */
  notFound?: string;
  /** The original error. */
  cause?: unknown;
}

const CONTEXT_LENGTH =
  /context[_ ]length|context window|maximum context|prompt is too long|input is too long|too many tokens|reduce the length|exceeds? (?:the )?(?:model'?s? )?(?:maximum |max )?(?:context|token|input)|token limit/i;

/**
 * Whether a provider's error message says the conversation does not fit the context window.
 *
 * @example
 * ```ts
 * import { isContextLengthMessage } from "./http_errors.ts";
 * if (!isContextLengthMessage("This model's maximum context length is 8192 tokens")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function isContextLengthMessage(message: string, code?: string): boolean {
  return code === "context_length_exceeded" || CONTEXT_LENGTH.test(message);
}

/**
 * The library error for an HTTP failure.
 *
 * @example
 * ```ts
 * import { ProviderError } from "../errors.ts";
 * import { httpError } from "./http_errors.ts";
 * const error = httpError({ provider: "openai", status: 429, message: "slow down" });
 * if (!(error instanceof ProviderError) || !error.retryable) throw new Error("unexpected");
 * ```
 */
export function httpError(failure: HttpFailure): ConfigError | ProviderError {
  const { provider, status, code, cause } = failure;
  const message = failure.body === undefined ? failure.message : _bodyLine(failure.body, status);
  if (status === 401 || status === 403) {
    const advice = failure.keyEnv ? `check ${failure.keyEnv}` : "check the API key";
    return new ConfigError(
      `${provider} refused the request (${status})${message ? `: ${message}` : ""}. The key is ` +
        `wrong or lacks access: ${advice}.`,
      { cause },
    );
  }
  if (status === 404) {
    return new ConfigError(
      `${provider} answered 404${message ? ` (${message})` : ""}${
        failure.model ? ` for model "${failure.model}"` : ""
      }${failure.url ? ` at ${failure.url}` : ""}: check the model name and the base URL${
        failure.notFound ? `, ${failure.notFound}` : ""
      }.`,
      { cause },
    );
  }
  if (
    (status === 400 || status === 413 || status === 422) && isContextLengthMessage(message, code)
  ) {
    return new ContextLengthError(
      `The conversation is too long for the model's context window (${provider}: ${message})`,
      { status, cause },
    );
  }
  const retryable = status === 408 || status === 409 || status === 429 ||
    (status >= 500 && !_FOR_GOOD.has(status));
  const page = failure.body !== undefined && _HTML.test(failure.body);
  return new ProviderError(
    `${provider} failed with ${status}${message ? `: ${message}` : ""}` +
      (page ? " (a web page, not the API's answer: check the base URL)" : ""),
    {
      status,
      retryable,
      retryAfterMs: retryable ? parseRetryAfter(failure.headers) : undefined,
      cause,
    },
  );
}

/** Server faults that stay as they are however long one waits: Not Implemented, HTTP Version. */
const _FOR_GOOD = new Set([501, 505]);

/** How a web page begins. */
const _HTML = /^\s*(?:\d{3}\s+)*(?:<!doctype html|<html[\s>]|<head[\s>]|<body[\s>])/i;

/** The longest line a body is said in. */
const _BODY_LINE_MAX = 200;

/**
 * A body that is not a JSON error, in one line: a page's title (else its first line of text), or
 * the first line of other text, whitespace collapsed and cut to {@link _BODY_LINE_MAX}
 * characters; the status left out where the SDK or the server put it first ("404 404 page not
 * found"); "" for no body.
 */
function _bodyLine(body: string, status: number): string {
  const repeated = new RegExp(`^(?:\\s*${status}\\b[\\s:-]*)+`);
  let text = body.replace(repeated, "");
  if (_HTML.test(text)) {
    const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(text)?.[1] ?? "";
    const shown = text.replace(/<(script|style|head)\b[\s\S]*?<\/\1\s*>/gi, "")
      .replace(/<[^>]*>/g, "\n");
    text = _entities(title.trim() ? title : shown);
  }
  const line = (text.split("\n").find((piece) => piece.trim()) ?? "").trim().replace(/\s+/g, " ")
    .replace(repeated, "");
  // The SDKs' words for an empty body.
  if (line === "status code (no body)") return "";
  const chars = Array.from(line);
  return chars.length <= _BODY_LINE_MAX
    ? line
    : `${chars.slice(0, _BODY_LINE_MAX - 1).join("").trimEnd()}…`;
}

/** Text with the common HTML entities decoded. */
function _entities(text: string): string {
  const named: Record<string, string> = {
    amp: "&",
    lt: "<",
    gt: ">",
    quot: '"',
    apos: "'",
    nbsp: " ",
  };
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] !== "#") return named[name.toLowerCase()] ?? whole;
    const code = name[1] === "x" || name[1] === "X"
      ? parseInt(name.slice(2), 16)
      : Number(name.slice(1));
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

/**
 * The message of an error's innermost cause: fetch wraps the useful one ("Connection refused").
 *
 * @example
 * ```ts
 * import { rootCause } from "./http_errors.ts";
 * const error = new TypeError("fetch failed", { cause: new Error("Connection refused") });
 * if (rootCause(error) !== "Connection refused") throw new Error("unexpected");
 * ```
 */
export function rootCause(error: Error): string {
  let inner: unknown = error;
  while (inner instanceof Error && inner.cause instanceof Error) inner = inner.cause;
  return (inner as Error).message;
}

/**
 * The error for a server that could not be reached. Not retried when waiting cannot help: a
 * refused connection (nothing listens there), a host name that does not resolve, a port that
 * fetch never connects to. The address is probably wrong, and the message says what to check.
 * A temporary failure of name resolution is retried.
 *
 * @example
 * ```ts
 * import { unreachable } from "./http_errors.ts";
 * const cause = new TypeError("fetch failed", { cause: new Error("Connection refused") });
 * const error = unreachable("ollama", "http://127.0.0.1:11434/v1", cause);
 * if (error.retryable || !error.message.includes("Is the server running")) throw new Error();
 * ```
 */
export function unreachable(provider: string, baseURL: string, error: Error): ProviderError {
  const reason = rootCause(error);
  const advice = _UNREACHABLE.find(({ pattern }) => pattern.test(reason))?.advice;
  return new ProviderError(
    `Could not reach ${provider} at ${baseURL}: ${reason}${advice ? `. ${advice}` : ""}`,
    { retryable: advice === undefined, cause: error },
  );
}

/** Failures to connect that trying again does not mend, and what to check. */
const _UNREACHABLE = [
  {
    pattern: /connection refused|ECONNREFUSED/i,
    advice: "Is the server running, and is the base URL right?",
  },
  {
    pattern:
      /^(?!.*temporary failure)(?=.*(?:dns error|failed to lookup address|name or service not known|nodename nor servname|no address associated|ENOTFOUND)).*/is,
    advice: "The host name does not resolve: is the base URL right, and is the network up?",
  },
  {
    pattern: /port \d+ (?:is|are) blocked|bad port/i,
    advice: "Fetch never connects to that port: serve the API on another one.",
  },
];

/**
 * Whether reading a response body failed because the connection dropped (reset, closed early).
 *
 * @example
 * ```ts
 * import { isConnectionLoss } from "./http_errors.ts";
 * if (!isConnectionLoss(new TypeError("error reading a body from connection"))) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function isConnectionLoss(error: unknown): boolean {
  if (error instanceof Deno.errors.ConnectionReset || error instanceof Deno.errors.UnexpectedEof) {
    return true;
  }
  return error instanceof TypeError &&
    /connection|network|reset|socket|body|closed|terminated|eof/i.test(error.message);
}
