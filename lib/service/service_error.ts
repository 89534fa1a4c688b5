/**
 * The one error the service refuses with: a machine-readable code and the HTTP status that says
 * it, answered as `{ "error": { "code", "message" } }`.
 *
 * @module
 */

import { AgentError } from "../errors.ts";

/**
 * Why the service refused; `status` is the HTTP status that says it.
 *
 * @example
 * ```ts
 * import { ServiceError } from "./service_error.ts";
 * const error = new ServiceError("not_found", 404, 'No run "x"');
 * if (error.status !== 404 || error.name !== "ServiceError") throw new Error("unexpected");
 * ```
 */
export class ServiceError extends AgentError {
  /** A machine-readable reason. */
  readonly code: string;
  /** The HTTP status. */
  readonly status: number;
  /** Seconds after which trying again may work. */
  readonly retryAfter?: number;

  /** An error with its code and HTTP status. */
  constructor(code: string, status: number, message: string, retryAfter?: number) {
    super(message);
    this.name = "ServiceError";
    this.code = code;
    this.status = status;
    this.retryAfter = retryAfter;
  }
}
