/**
 * The agent as a service, without HTTP: many runs at once, each in a run loop of its own
 * conversation; messages sent to a run loop whose run is going join it at the next turn
 * boundary; a limit on the runs going at once; sessions saved per run loop; memory searched.
 *
 * @module
 */

import type { RunStatus } from "../events.ts";
import {
  checkRunOptions,
  type Driver,
  type DriverRunOptions,
  startConversation,
} from "../conversation/driver.ts";
import type { PermissionCallback } from "../hooks.ts";
import type { MemoryStore, RetrievedSegment } from "../memory/mod.ts";
import type { RunLoop } from "../memory/types.ts";
import type { Model } from "../model.ts";
import { type Placement, runLoops } from "../runloop/manager.ts";
import type {
  LoadedSession,
  SessionInfo,
  SessionListOptions,
  SessionPage,
  SessionReader,
  SessionStore,
} from "../session/mod.ts";
import type { PolicyOptions } from "../permissions/policy.ts";
import type { Tool } from "../tool.ts";
import type { ServiceEvent } from "./events.ts";
import { eventRedactor } from "./redacted_events.ts";
import { type RunInfo, ServiceRun } from "./run.ts";
import { ServiceError } from "./service_error.ts";
import { loadListedSession } from "./session_lookup.ts";
import { readListedSession } from "./session_read.ts";

export { ServiceError };

/** Seconds a client refused while the service shuts down is asked to wait (`Retry-After`). */
export const CLOSING_RETRY_AFTER = 5;

/** Options of {@link createAgentService}. */
export interface AgentServiceOptions {
  /** The model every run uses. */
  model: Model;
  /** The tools, or a function that makes a fresh set for each run (tools that keep state). */
  tools?: readonly Tool[] | (() => Tool[]);
  /** The system prompt. */
  systemPrompt?: string;
  /** The working directory given to tools. */
  cwd?: string;
  /** Model calls allowed per run (default the loop's). */
  maxTurns?: number;
  /**
   * Who may run a tool call: the permission rules and mode (nobody can answer a question, so a
   * rule that asks refuses), or a permission callback of your own.
   */
  permission?: PolicyOptions | PermissionCallback;
  /** More options of every run: hooks, capabilities, the sandbox report, compaction, limits. */
  runOptions?: DriverRunOptions;
  /** Long-term memory: completed run loops are archived there, and searched. */
  memory?: MemoryStore;
  /**
   * Told when memory could not archive a run loop that ended (a full disk, a damaged or locked
   * database): its id, and why. The run's answer stands; the run loop is archived again after
   * the next archive that works. What an operator should hear.
   */
  onArchiveError?: (runLoopId: string, error: string) => void;
  /** Where each run loop's conversation is saved as a session. */
  sessions?: SessionStore;
  /** The model that routes messages to run loops (default: `model`). */
  router?: Model;
  /** Runs going at once at most; past it, starting one fails with `too_many_runs` (default 16). */
  maxConcurrentRuns?: number;
  /** Idle run loops kept open at most; the oldest beyond it are completed (default 100). */
  maxActiveRunLoops?: number;
  /** Ended runs kept for reading (default 200). */
  keepEndedRuns?: number;
  /** Events kept per run for clients that attach late (default 10,000). */
  maxEventsPerRun?: number;
  /**
   * Replaces the secrets in a text (e.g. the CLI's `Redactor`): every event of every run is
   * redacted before it is kept or sent, the answer's deltas held back while a secret may be
   * going on in them; the HTTP handler redacts every answer with it too.
   */
  redact?: ((text: string) => string) & { readonly secrets?: readonly string[] };
}

/** What to run. */
export interface RunRequest {
  /** The user's message. */
  message: string;
  /** The run loop to work in (an id or unique prefix). */
  runLoopId?: string;
  /** Model calls allowed (default: the service's). */
  maxTurns?: number;
  /** Complete the run loop when the run succeeds. */
  complete?: boolean;
  /** Cancel the run when the client that started it disconnects. */
  cancelOnDisconnect?: boolean;
}

/** Where a message went. */
export interface Delivery {
  /**
   * `queued`: it waits for the next turn boundary of the run going in its run loop;
   * `started`: it started a run.
   */
  delivery: "queued" | "started";
  /** The run. */
  run: ServiceRun;
  /** How the run loop was chosen (absent for a run started in a new run loop). */
  placement?: Placement["event"];
}

/** The agent service. */
export interface AgentService {
  /** Starts a run in a new run loop, or in the idle one `runLoopId` names. */
  start(request: RunRequest): Promise<ServiceRun>;
  /**
   * Sends a message: into the run loop it names, or the one the router picks; it joins the run
   * going there at its next turn boundary, or starts a run.
   */
  send(request: RunRequest): Promise<Delivery>;
  /** A run, going or ended (while kept). */
  run(id: string): ServiceRun | undefined;
  /** The runs going and the ended ones kept, newest first. */
  runs(): RunInfo[];
  /** Cancels a run; it ends with status `aborted`. */
  cancel(id: string): ServiceRun;
  /** The active run loops, each with the run going in it. */
  runLoops(): (RunLoop & { runId?: string })[];
  /** A run loop, active or archived. */
  runLoop(id: string): Promise<RunLoop | undefined>;
  /**
   * Completes an idle run loop (archived in memory): its whole id, and `archiveError`, why
   * memory could not archive it, when it could not (it is completed all the same).
   */
  completeRunLoop(id: string): Promise<{ runLoopId: string; archiveError?: string }>;
  /** The saved sessions of the service's working directory, newest first. */
  sessions(): Promise<SessionInfo[]>;
  /**
   * A page of the saved sessions of the service's working directory, newest first: at most
   * `limit` (default 50), from the `cursor` that `next` of the page before gives.
   */
  sessions(options: SessionListOptions): Promise<SessionPage>;
  /**
   * A saved session of the service's working directory (one that {@link AgentService.sessions}
   * lists), by its id or a prefix of at least `MIN_SESSION_PREFIX` (8) characters.
   */
  session(id: string): Promise<LoadedSession>;
  /**
   * The same session as {@link AgentService.session}, read entry by entry as they are iterated
   * rather than loaded whole: for sessions of any size. Close it when stopping early.
   */
  readSession(id: string): Promise<SessionReader>;
  /** Searches the long-term memory. */
  searchMemory(query: string, limit?: number): Promise<RetrievedSegment[]>;
  /** How many runs are going, and the limit. */
  load(): { running: number; limit: number };
  /** Cancels the runs going and waits for them to end; closes the sessions. */
  close(): Promise<void>;
}

/**
 * Creates the service.
 *
 * @example
 * ```ts
 * import { createAgentService } from "./service.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const service = createAgentService({ model: scriptedModel([{ text: "Hi!" }]) });
 * const run = await service.start({ message: "Hello" });
 * const info = await run.done;
 * if (info.status !== "success" || info.result?.text !== "Hi!") throw new Error("unexpected");
 * await service.close();
 * ```
 */
export function createAgentService(options: AgentServiceOptions): AgentService {
  checkRunOptions(options.runOptions);
  const limit = options.maxConcurrentRuns ?? 16;
  const loops = runLoops({
    memory: options.memory,
    router: options.router ?? options.model,
    onArchiveError: options.onArchiveError,
  });
  const running = new Map<string, ServiceRun>();
  const ended: ServiceRun[] = [];
  /** The run going in each busy run loop. */
  const busy = new Map<string, ServiceRun>();
  /** The conversation of each run loop, saved as a session of the same id. */
  const conversations = new Map<string, Driver>();
  let closed = false;

  const conversationOf = (runLoopId: string) => {
    let driver = conversations.get(runLoopId);
    if (!driver) {
      driver = startConversation({
        model: options.model,
        tools: options.tools,
        systemPrompt: options.systemPrompt,
        cwd: options.cwd,
        maxTurns: options.maxTurns,
        permission: options.permission,
        runOptions: options.runOptions,
        store: options.sessions,
        id: runLoopId,
        memory: options.memory,
        runLoops: loops,
      });
      conversations.set(runLoopId, driver);
    }
    return driver;
  };
  /** The active run loop of this id, or of a prefix no other active or kept run loop has. */
  const resolveActive = (id: string) => {
    const matches = [...loops.active(), ...loops.kept()].filter((loop) => loop.id.startsWith(id));
    return matches.length === 1 && matches[0].status === "active" ? matches[0] : undefined;
  };
  /** Fails with `not_found` unless the run loop is active, archived or kept to be archived. */
  const known = async (id: string) => {
    if (!resolveActive(id) && !await loops.get(id)) {
      throw new ServiceError("not_found", 404, `No run loop "${id}"`);
    }
  };
  const busyRun = (id: string) => {
    const matches = [...busy.keys()].filter((key) => key.startsWith(id));
    return matches.length === 1 ? busy.get(matches[0]) : undefined;
  };
  const admit = () => {
    if (closed) throw _closing();
    if (running.size >= limit) {
      const [going, one] = running.size === 1
        ? ["1 run is going", "it"]
        : [`${running.size} runs are going`, "one"];
      throw new ServiceError(
        "too_many_runs",
        429,
        `${going}, the most this service runs at once; try again when ${one} ends`,
        1,
      );
    }
  };

  const launch = (placement: Placement, request: RunRequest): ServiceRun => {
    const run = new ServiceRun(placement.runLoop.id, options.maxEventsPerRun ?? 10_000);
    run.cancelOnDisconnect = request.cancelOnDisconnect ?? false;
    running.set(run.id, run);
    busy.set(run.runLoopId, run);
    _drive(run, placement, request).catch(() => {});
    return run;
  };

  const _drive = async (run: ServiceRun, first: Placement, request: RunRequest) => {
    const redactor = options.redact ? eventRedactor(options.redact) : undefined;
    const emit = (event: ServiceEvent) => {
      if (!redactor) return run.emit(event);
      for (const redacted of redactor.push(event)) run.emit(redacted);
    };
    let placement = first;
    let message = request.message;
    let status: RunStatus = "error";
    /** Every run loop the run worked in: it may go on into another when its own completes. */
    const worked = new Set<string>();
    try {
      while (true) {
        const loopId = placement.runLoop.id;
        worked.add(loopId);
        run.runLoopId = loopId;
        busy.set(loopId, run);
        const events = conversationOf(loopId).send(message, {
          placement,
          signal: run.controller.signal,
          pendingInput: () => run.queue.splice(0).map((content) => ({ role: "user", content })),
          maxTurns: request.maxTurns,
          maxActive: Number.MAX_SAFE_INTEGER,
          complete: request.complete,
        });
        let step = await events.next();
        while (!step.done) {
          emit(step.value);
          step = await events.next();
        }
        status = step.value.status;
        // Checked and ended with no await between, so that no message can slip in unseen.
        if (run.queue.length === 0 || status === "aborted" || closed) break;
        // A message that came after the last turn boundary goes on in a run of its own here.
        message = run.queue.splice(0).join("\n\n");
        const next = await loops.place(message, { runLoopId: loopId, placed: true });
        if (next.runLoop.id !== loopId) busy.delete(loopId);
        placement = next;
      }
    } catch (error) {
      emit({
        type: "notice",
        kind: "error",
        message: `The run failed: ${(error as Error).message}`,
      });
      status = "error";
    }
    if (run.queue.length > 0) {
      emit({
        type: "notice",
        kind: "error",
        message: `${_messagesWere(run.queue.length)} not taken in: it was ${
          status === "aborted" ? "cancelled" : "stopped"
        } first`,
      });
    }
    for (const held of redactor?.flush() ?? []) run.emit(held);
    running.delete(run.id);
    if (busy.get(run.runLoopId) === run) busy.delete(run.runLoopId);
    ended.unshift(run);
    ended.length = Math.min(ended.length, options.keepEndedRuns ?? 200);
    run.finish(status);
    // The conversation of each run loop that ended is closed, its session released.
    const active = new Set(loops.active().map((loop) => loop.id));
    for (const loopId of worked) if (!active.has(loopId)) await _forget(loopId);
    await _overflow();
  };

  /** Closes the session of a run loop that ended. */
  const _forget = async (runLoopId: string) => {
    const driver = conversations.get(runLoopId);
    conversations.delete(runLoopId);
    await driver?.close();
  };

  /** Completes the oldest idle run loops beyond the limit. */
  const _overflow = async () => {
    const idle = loops.active().filter((loop) => !busy.has(loop.id));
    const excess = idle.length - (options.maxActiveRunLoops ?? 100);
    for (const loop of idle.slice(0, Math.max(0, excess))) {
      await loops.end(loop.id, "completed").catch(() => {});
      await _forget(loop.id);
    }
  };

  return {
    async start(request) {
      admit();
      if (request.runLoopId !== undefined) await known(request.runLoopId);
      const placement = await loops.place(request.message, {
        runLoopId: request.runLoopId,
        fresh: true,
      });
      const going = busy.get(placement.runLoop.id);
      try {
        if (going) {
          throw new ServiceError(
            "run_loop_busy",
            409,
            `Run ${going.id} is going in run loop ${placement.runLoop.id}: send the message to ` +
              `the run loop (POST /v1/run-loops/${placement.runLoop.id}/messages) to add it at ` +
              `its next turn boundary`,
          );
        }
        admit(); // again: placing may have waited
      } catch (error) {
        loops.unplace(placement);
        throw error;
      }
      return launch(placement, request);
    },

    async send(request) {
      if (closed) throw _closing();
      if (request.runLoopId !== undefined) {
        // A run loop whose run is ending (archiving) takes the message into that run.
        const ending = busyRun(request.runLoopId);
        if (ending && !resolveActive(request.runLoopId)) {
          ending.queue.push(request.message);
          const { runLoopId } = ending;
          const reason = `run loop ${runLoopId.slice(0, 8)} is ending; the message goes on from it`;
          const placement: Placement["event"] = {
            type: "run_loop_start",
            runLoopId,
            goal: request.message,
            decision: "named",
            reason,
          };
          return { delivery: "queued", run: ending, placement };
        }
        await known(request.runLoopId);
      }
      // A message for a busy run loop needs no free slot; one that starts a run does.
      if (busy.size === 0) admit();
      const placement = await loops.place(request.message, { runLoopId: request.runLoopId });
      const run = busy.get(placement.runLoop.id);
      if (run) {
        run.queue.push(request.message);
        return { delivery: "queued", run, placement: placement.event };
      }
      try {
        admit();
      } catch (error) {
        loops.unplace(placement);
        throw error;
      }
      return { delivery: "started", run: launch(placement, request), placement: placement.event };
    },

    run: (id) => running.get(id) ?? ended.find((run) => run.id === id),
    runs: () => [...running.values()].reverse().concat(ended).map((run) => run.info()),

    cancel(id) {
      const run = running.get(id);
      if (!run) {
        if (ended.some((done) => done.id === id)) {
          throw new ServiceError("run_ended", 409, `Run ${id} has already ended`);
        }
        throw new ServiceError("not_found", 404, `No run "${id}"`);
      }
      run.controller.abort();
      return run;
    },

    runLoops: () =>
      loops.active().map((loop) => {
        const run = busy.get(loop.id);
        return run ? { ...loop, runId: run.id } : { ...loop };
      }),
    runLoop: (id) => loops.get(id),

    async completeRunLoop(id) {
      const loop = resolveActive(id);
      if (!loop) throw new ServiceError("not_found", 404, `No active run loop "${id}"`);
      if (busy.has(loop.id)) {
        throw new ServiceError("run_loop_busy", 409, `A run is going in run loop ${loop.id}`);
      }
      const ended = await loops.end(loop.id, "completed");
      await _forget(loop.id);
      const { archiveError } = ended;
      return { runLoopId: loop.id, ...(archiveError === undefined ? {} : { archiveError }) };
    },

    sessions: (async (page?: SessionListOptions) => {
      if (!options.sessions) return page ? { sessions: [], total: 0 } : [];
      return page
        ? await options.sessions.list(options.cwd ?? ".", page)
        : await options.sessions.list(options.cwd ?? ".");
    }) as AgentService["sessions"],
    async session(id) {
      if (!options.sessions) throw new ServiceError("not_found", 404, "Sessions are not saved");
      // Only the sessions it lists: those of its own working directory, not every project's.
      return await loadListedSession(options.sessions, options.cwd ?? ".", id);
    },
    async readSession(id) {
      if (!options.sessions) throw new ServiceError("not_found", 404, "Sessions are not saved");
      return await readListedSession(options.sessions, options.cwd ?? ".", id);
    },
    async searchMemory(query, max = 10) {
      if (!options.memory) {
        throw new ServiceError("no_memory", 404, "This service keeps no long-term memory");
      }
      return await options.memory.retrieve(query, { limit: max });
    },

    load: () => ({ running: running.size, limit }),

    async close() {
      closed = true;
      const going = [...running.values()];
      for (const run of going) run.controller.abort();
      await Promise.all(going.map((run) => run.done));
      for (const id of [...conversations.keys()]) await _forget(id);
      // Run loops memory could not archive get a last try (it stops at the first that fails).
      await loops.archivePending().catch(() => {});
    },
  };
}

/** The refusal of a service that is shutting down. */
function _closing(): ServiceError {
  return new ServiceError(
    "closing",
    503,
    `The service is shutting down: it takes no new work; try again in ${CLOSING_RETRY_AFTER} s`,
    CLOSING_RETRY_AFTER,
  );
}

/** "1 message sent to this run was", or "n messages sent to this run were". */
function _messagesWere(count: number): string {
  return count === 1 ? "1 message sent to this run was" : `${count} messages sent to this run were`;
}
