/**
 * Checkpoint stores: in memory, and as JSON files that a new process can go on from.
 *
 * @module
 */

import { join } from "node:path";
import type { Checkpoint, CheckpointStore } from "./types.ts";

/**
 * Keeps the latest checkpoint of each execution in memory.
 *
 * @example
 * ```ts
 * import { memoryCheckpoints } from "./checkpoint.ts";
 * const store = memoryCheckpoints();
 * if (await store.load("nope") !== undefined) throw new Error("unexpected");
 * ```
 */
export function memoryCheckpoints(): CheckpointStore {
  const latest = new Map<string, string>();
  return {
    save(checkpoint) {
      latest.set(checkpoint.executionId, JSON.stringify(checkpoint));
      return Promise.resolve();
    },
    load(executionId) {
      const found = latest.get(executionId);
      return Promise.resolve(found === undefined ? undefined : JSON.parse(found));
    },
  };
}

/**
 * Keeps the latest checkpoint of each execution in `<dir>/<executionId>.json`, written to a
 * temporary file and renamed, so that a crash never leaves half a checkpoint.
 *
 * @example
 * ```ts
 * import { fileCheckpoints } from "./checkpoint.ts";
 * const store = fileCheckpoints(await Deno.makeTempDir());
 * if (await store.load("0f8fad5b-d9cb-469f-a165-70867728950e") !== undefined) throw new Error("unexpected");
 * ```
 */
export function fileCheckpoints(dir: string): CheckpointStore {
  const path = (id: string) => {
    if (!/^[\w.-]+$/.test(id)) throw new TypeError(`Invalid execution id "${id}"`);
    return join(dir, `${id}.json`);
  };
  let ready = false;
  return {
    save(checkpoint) {
      // Small synchronous writes: cheaper than async file ops, which each cost a thread hand-off.
      try {
        if (!ready) Deno.mkdirSync(dir, { recursive: true });
        ready = true;
        const target = path(checkpoint.executionId);
        Deno.writeTextFileSync(`${target}.tmp`, JSON.stringify(checkpoint));
        Deno.renameSync(`${target}.tmp`, target);
        return Promise.resolve();
      } catch (error) {
        return Promise.reject(error);
      }
    },
    async load(executionId) {
      try {
        return JSON.parse(await Deno.readTextFile(path(executionId))) as Checkpoint;
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return undefined;
        throw error;
      }
    },
  };
}
