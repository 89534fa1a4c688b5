/**
 * One run of the service: its events, kept for clients that attach late or come back, the
 * listeners that stream them, the messages waiting for the next turn boundary, and how it ended.
 *
 * @module
 */

import type { AgentEvent, RunStatus } from "../events.ts";
import type { ServiceEvent } from "./events.ts";

/** A run's result, as its last `result` event gives it. */
export type RunSummary = Extract<AgentEvent, { type: "result" }>;

/** What the service tells of a run. */
export interface RunInfo {
  /** The run's id. */
  id: string;
  /** The run loop it works in (it may move on to another when its own is completed). */
  runLoopId: string;
  /** `running`, or how it ended. */
  status: "running" | RunStatus;
  /** When it started (ISO 8601). */
  createdAt: string;
  /** When it ended (ISO 8601). */
  endedAt?: string;
  /** Messages sent to it and not yet taken in (at the next turn boundary). */
  queued: number;
  /** How many events it has streamed. */
  events: number;
  /** The result, once it ended (the last one, when queued messages made it go on). */
  result?: RunSummary;
  /** What went wrong, when the run failed outside the agent loop (it then has no result). */
  error?: string;
  /**
   * Why memory could not archive a run loop the run ended (the last such), when it could not:
   * the run's answer stands.
   */
  archiveError?: string;
}

/** Hears a run's events, then its end. */
export interface RunListener {
  /** An event and its sequence number (from 1). */
  event(seq: number, event: ServiceEvent): void;
  /** The run ended: nothing follows. */
  end(): void;
  /** Events before `firstSeq` are no longer kept and were not replayed. */
  gap?(firstSeq: number): void;
}

/** A run of the service. */
export class ServiceRun {
  /** The run's id. */
  readonly id: string = crypto.randomUUID();
  /** Cancels the run. */
  readonly controller: AbortController = new AbortController();
  /** Messages waiting for the next turn boundary. */
  readonly queue: string[] = [];
  /** Whether a client that disconnects cancels the run. */
  cancelOnDisconnect = false;
  /** The run loop it works in. */
  runLoopId: string;
  #status: RunInfo["status"] = "running";
  readonly #createdAt = new Date().toISOString();
  #endedAt?: string;
  #result?: RunSummary;
  #error?: string;
  #archiveError?: string;
  readonly #log: { seq: number; event: ServiceEvent }[] = [];
  #seq = 0;
  readonly #maxEvents: number;
  readonly #listeners = new Set<RunListener>();
  readonly #done = Promise.withResolvers<RunInfo>();

  /** A run in `runLoopId`, keeping at most `maxEvents` events for replay. */
  constructor(runLoopId: string, maxEvents: number) {
    this.runLoopId = runLoopId;
    this.#maxEvents = maxEvents;
  }

  /** Resolves with the run's info once it ended. */
  get done(): Promise<RunInfo> {
    return this.#done.promise;
  }

  /** Whether the run is still going. */
  get running(): boolean {
    return this.#status === "running";
  }

  /** What the service tells of the run. */
  info(): RunInfo {
    return {
      id: this.id,
      runLoopId: this.runLoopId,
      status: this.#status,
      createdAt: this.#createdAt,
      ...(this.#endedAt ? { endedAt: this.#endedAt } : {}),
      queued: this.queue.length,
      events: this.#seq,
      ...(this.#result ? { result: this.#result } : {}),
      ...(this.#error ? { error: this.#error } : {}),
      ...(this.#archiveError === undefined ? {} : { archiveError: this.#archiveError }),
    };
  }

  /** Records an event and hands it to the listeners. */
  emit(event: ServiceEvent): void {
    const seq = ++this.#seq;
    this.#log.push({ seq, event });
    if (this.#log.length > this.#maxEvents) this.#log.shift();
    if (event.type === "result") this.#result = event;
    if (event.type === "notice" && event.kind === "error") this.#error = event.message;
    if (event.type === "run_loop_end" && event.archiveError !== undefined) {
      this.#archiveError = event.archiveError;
    }
    for (const listener of this.#listeners) listener.event(seq, event);
  }

  /** Ends the run with `status`; the listeners hear the end. */
  finish(status: RunStatus): void {
    if (!this.running) return;
    this.#status = status;
    this.#endedAt = new Date().toISOString();
    for (const listener of this.#listeners) listener.end();
    this.#listeners.clear();
    this.#done.resolve(this.info());
  }

  /**
   * Replays the events after `after` to the listener, then streams the new ones until the run
   * ends; returns what stops listening.
   */
  listen(after: number, listener: RunListener): () => void {
    const first = this.#log[0]?.seq ?? this.#seq + 1;
    if (after + 1 < first) listener.gap?.(first);
    // The log holds consecutive events: those after `after` start at a known place in it.
    for (let i = Math.max(0, after + 1 - first); i < this.#log.length; i++) {
      listener.event(this.#log[i].seq, this.#log[i].event);
    }
    if (!this.running) {
      listener.end();
      return () => {};
    }
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
