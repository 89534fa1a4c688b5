/**
 * What a run of the service streams: the events of a run in a run loop, and the service's own
 * notices (`notice` of kind `error`): a run that failed outside the agent loop, messages it did
 * not take in, events a client came back for that are no longer kept.
 *
 * @module
 */

import type { RunLoopEvent } from "../runloop/events.ts";

/** A notice of the service: something went wrong outside the run's own result. */
export interface ServiceNotice {
  /** The event's type. */
  type: "notice";
  /** Always `error`: the agent loop's own notices have kinds of their own. */
  kind: "error";
  /** What happened, in words. */
  message: string;
}

/**
 * What a run of the service streams, and what its server-sent events carry.
 *
 * @example
 * ```ts
 * import type { ServiceEvent } from "./events.ts";
 * const event: ServiceEvent = { type: "notice", kind: "error", message: "The run failed" };
 * if (event.type === "notice" && event.kind !== "error") throw new Error("unexpected");
 * ```
 */
export type ServiceEvent = RunLoopEvent | ServiceNotice;
