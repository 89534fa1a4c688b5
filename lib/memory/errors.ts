/**
 * The error the long-term memory raises on purpose.
 *
 * @module
 */

import { AgentError } from "../errors.ts";

/** Why a {@link MemoryError} was raised. */
export type MemoryErrorReason =
  | "not_found"
  | "unsupported_version"
  | "invalid"
  | "closed"
  | "embeddings";

/**
 * The memory cannot do what was asked: a run loop is not archived, the database was written by a
 * newer version of the library or is not a memory database, the store is closed, or the
 * embeddings server failed.
 *
 * @example
 * ```ts
 * import { MemoryError } from "./errors.ts";
 * const error = new MemoryError("No archived run loop r1", { reason: "not_found" });
 * if (error.name !== "MemoryError" || error.reason !== "not_found") throw new Error("unexpected");
 * ```
 */
export class MemoryError extends AgentError {
  /** Why it was raised. */
  readonly reason: MemoryErrorReason;

  /** Creates the error; `options.cause` is kept. */
  constructor(message: string, options: ErrorOptions & { reason: MemoryErrorReason }) {
    super(message, options);
    this.reason = options.reason;
  }
}
