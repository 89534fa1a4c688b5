/**
 * The worker thread of `openMemoryInWorker()`: opens the memory with the options it was given
 * and answers calls to it, with the counts after each call that changes them.
 *
 * @module
 */

import { parentPort, workerData } from "node:worker_threads";
import { MemoryError } from "./errors.ts";
import type { MemoryOptions, MemoryStore } from "./memory.ts";
import { openMemory } from "./sqlite.ts";

const opening: Promise<MemoryStore> = openMemory(workerData as MemoryOptions);
// An error in opening is answered to the first call.
opening.catch(() => {});

/** The calls after which the counts are sent along. */
const _CHANGES = new Set(["open", "archive", "reindex", "prune", "vacuum"]);

parentPort?.on("message", async ({ id, method, args }) => {
  try {
    const memory = await opening;
    const value = method === "open"
      ? undefined
      : await (memory[method as keyof MemoryStore] as (...args: unknown[]) => unknown)(...args);
    const stats = _CHANGES.has(method) ? memory.stats() : undefined;
    parentPort!.postMessage({ id, value, stats });
  } catch (error) {
    const { name = "Error", message = String(error) } = error as Error;
    const reason = error instanceof MemoryError ? error.reason : undefined;
    parentPort!.postMessage({ id, error: { name, message, reason } });
  }
});
