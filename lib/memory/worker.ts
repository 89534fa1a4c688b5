/**
 * The long-term memory in a worker thread. `node:sqlite` is synchronous: in a process that
 * serves many runs, every search and every archive would hold up every other run's stream for
 * as long as it takes. Here they run on a thread of their own, beside the runs.
 *
 * @module
 */

import { Worker } from "node:worker_threads";
import { MemoryError, type MemoryErrorReason } from "./errors.ts";
import type { MemoryOptions, MemoryStats, MemoryStore } from "./memory.ts";

/** How long the worker thread may take to open the database. */
const _START_MS = 30_000;

/** A call to the store in the worker. */
interface _Call {
  id: number;
  method: string;
  args: unknown[];
}

/** Its answer. */
interface _Reply {
  id: number;
  value?: unknown;
  stats?: MemoryStats;
  error?: { name: string; message: string; reason?: MemoryErrorReason };
}

/**
 * Opens a memory database like `openMemory()`, its work done in a worker thread. The options
 * cross to the thread, so they must be plain data (no custom `fetch`). `stats()` gives the
 * counts as of the last `archive()`, `reindex()`, `prune()` or `vacuum()`. The thread does not keep the process
 * alive while no call is pending; `close()` ends it.
 *
 * @example
 * ```ts
 * import { openMemoryInWorker } from "./worker.ts";
 * const memory = await openMemoryInWorker({ path: ":memory:" });
 * const at = "2025-01-01T00:00:00.000Z";
 * await memory.archive({
 *   id: "r1",
 *   goal: "Fix the flaky test",
 *   status: "completed",
 *   createdAt: at,
 *   iterations: [{
 *     index: 0,
 *     userMessage: "Fix the flaky test",
 *     reasoning: [],
 *     toolCalls: [],
 *     toolResults: [],
 *     response: "The test waited on a timer; it now waits on the event.",
 *     startedAt: at,
 *   }],
 * });
 * const [found] = await memory.retrieve("flaky timer");
 * if (found?.anchor.runLoopId !== "r1" || memory.stats().runLoops !== 1) throw new Error();
 * await memory.close();
 * ```
 */
export async function openMemoryInWorker(options: MemoryOptions): Promise<MemoryStore> {
  if (options.embeddings?.fetch) {
    throw new TypeError("A custom fetch cannot cross to a worker thread: use openMemory()");
  }
  const worker = new Worker(new URL("./worker_thread.ts", import.meta.url), {
    workerData: options,
  });
  worker.unref();
  const waiting = new Map<number, PromiseWithResolvers<unknown>>();
  let calls = 0;
  let stats: MemoryStats = { runLoops: 0, segments: 0, vectors: 0, bytes: 0, freeBytes: 0 };
  let closed = false;
  let failure: Error | undefined;

  const settle = (error: Error) => {
    failure ??= error;
    for (const pending of waiting.values()) pending.reject(failure);
    waiting.clear();
    worker.unref();
  };
  worker.on("message", (reply: _Reply) => {
    const pending = waiting.get(reply.id);
    if (!pending) return;
    waiting.delete(reply.id);
    if (waiting.size === 0) worker.unref();
    if (reply.stats) stats = reply.stats;
    if (reply.error) pending.reject(_error(reply.error));
    else pending.resolve(reply.value);
  });
  worker.on("error", (error: Error) => settle(error));
  worker.on("exit", () => settle(new MemoryError("The memory is closed", { reason: "closed" })));

  const call = <T>(method: string, ...args: unknown[]): Promise<T> => {
    if (failure) return Promise.reject(failure);
    const pending = Promise.withResolvers<unknown>();
    const id = ++calls;
    try {
      worker.postMessage({ id, method, args } satisfies _Call);
    } catch (error) {
      // What cannot be copied to the thread (a function, a symbol) is refused here.
      return Promise.reject(
        new TypeError(`${method}() was given what cannot reach the memory's thread`, {
          cause: error,
        }),
      );
    }
    if (waiting.size === 0) worker.ref();
    waiting.set(id, pending);
    return pending.promise as Promise<T>;
  };

  // A thread that never comes up must not hold the caller for ever.
  const starting = setTimeout(
    () => settle(new Error(`The memory's worker thread did not start in ${_START_MS} ms`)),
    _START_MS,
  );
  try {
    await call("open");
  } catch (error) {
    await worker.terminate();
    throw error;
  } finally {
    clearTimeout(starting);
  }
  const store: MemoryStore = {
    archive: (loop) => call("archive", loop),
    retrieve: (query, retrieve) => call("retrieve", query, retrieve),
    expand: (anchor, window) => call("expand", anchor, window),
    runLoop: (id) => call("runLoop", id),
    recent: (limit) => call("recent", limit),
    reindex: () => call("reindex"),
    prune: (options) => call("prune", options),
    vacuum: () => call("vacuum"),
    stats() {
      if (closed) throw new MemoryError("The memory is closed", { reason: "closed" });
      return { ...stats };
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        await call("close");
      } finally {
        await worker.terminate();
      }
    },
    [Symbol.asyncDispose]: () => store.close(),
  };
  return store;
}

function _error(error: NonNullable<_Reply["error"]>): Error {
  if (error.name === "MemoryError") {
    return new MemoryError(error.message, { reason: error.reason ?? "invalid" });
  }
  const Kind = _KINDS[error.name] ?? Error;
  const made = new Kind(error.message);
  made.name = error.name;
  return made;
}

const _KINDS: Record<string, ErrorConstructor> = { TypeError, RangeError, SyntaxError };
