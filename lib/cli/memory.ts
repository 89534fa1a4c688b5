/**
 * The CLI's long-term memory: one SQLite database per project in the user's data directory,
 * with embeddings when the settings name an endpoint, kept within a retention policy
 * (`memory.retention` in the user's settings, {@link DEFAULT_RETENTION} by default).
 *
 * @module
 */

import { basename, join } from "node:path";
import {
  MemoryError,
  type MemoryStore,
  openMemory,
  openMemoryInWorker,
  type RetentionPolicy,
} from "../memory/mod.ts";
import { ensurePrivateDir } from "../files/private_files.ts";
import { projectSessionsDir, type Redactor } from "../session/mod.ts";
import type { Settings } from "./settings.ts";

/** The memory settings. */
export interface MemorySettings {
  /** Off: nothing is remembered (default on). */
  enabled?: boolean;
  /** An OpenAI-compatible `/v1/embeddings` endpoint, for search by meaning. */
  embeddings?: {
    /** The API root including `/v1`. */
    baseURL: string;
    /** The embedding model. */
    model: string;
    /** The env var holding the key (none for local servers). */
    apiKeyEnv?: string;
    /** Shorter vectors, for models that can. */
    dimensions?: number;
  };
  /**
   * How much of the past is kept: each bound given replaces the default's, `null` lifts it;
   * `false` keeps everything (see {@link DEFAULT_RETENTION}).
   */
  retention?: false | {
    /** Run loops archived longer ago are dropped. */
    maxAgeDays?: number | null;
    /** Only the newest this many are kept. */
    maxRunLoops?: number | null;
    /** The oldest are dropped while the database uses more bytes than this. */
    maxBytes?: number | null;
    /** Run loops archived longer ago keep their outline only (goal, messages, answers). */
    detailDays?: number | null;
  };
}

/**
 * What a project's memory keeps unless the settings say otherwise: run loops of the last 180
 * days, at most the newest 10,000 of them, in at most 256 MiB; those older than 30 days keep
 * their outline only (the goal, what the user said, the answers), without the reasoning, tool
 * calls and tool results that make most of the bytes. A run of a few tool calls takes a few
 * kilobytes, so the bound most users reach first is the count; a memory that grew without one
 * slowed every run, and filled the disk.
 */
export const DEFAULT_RETENTION: Readonly<Required<RetentionPolicy>> = Object.freeze({
  maxAgeDays: 180,
  maxRunLoops: 10_000,
  maxBytes: 256 * 1024 * 1024,
  detailDays: 30,
});

/**
 * The retention policy the settings give: the default's bounds, each replaced by the
 * settings' own (`null` lifting it); nothing for `false`.
 *
 * @example
 * ```ts
 * import { retentionPolicy } from "./memory.ts";
 * const policy = retentionPolicy({ memory: { retention: { maxRunLoops: 500, maxBytes: null } } });
 * if (policy?.maxRunLoops !== 500 || policy.maxBytes !== undefined || !policy.maxAgeDays) {
 *   throw new Error("unexpected");
 * }
 * if (retentionPolicy({ memory: { retention: false } }) !== undefined) throw new Error();
 * ```
 */
export function retentionPolicy(settings: Settings): RetentionPolicy | undefined {
  const given = (settings.memory as MemorySettings | undefined)?.retention;
  if (given === false) return undefined;
  const policy: RetentionPolicy = {};
  for (const key of ["maxAgeDays", "maxRunLoops", "maxBytes", "detailDays"] as const) {
    const value = given?.[key] === undefined ? DEFAULT_RETENTION[key] : given[key];
    if (value !== null) policy[key] = value;
  }
  return policy;
}

/**
 * The database of a project's memory: `<data dir>/memory/<project>.db`.
 *
 * @example
 * ```ts
 * import { memoryPath } from "./memory.ts";
 * const path = memoryPath("/data", "/home/ada/app");
 * if (!/^\/data\/memory\/home-ada-app-[0-9a-f]{8}\.db$/.test(path)) throw new Error(path);
 * ```
 */
export function memoryPath(dataDir: string, cwd: string): string {
  return join(dataDir, "memory", `${basename(projectSessionsDir(dataDir, cwd))}.db`);
}

/**
 * Opens the project's memory, or gives nothing when memory is off or cannot be opened (with a
 * warning). The run's secrets (those of `redact`) never reach it; the data directory and the
 * memory's folder are made private to the user (0700), the database files too (0600).
 */
export async function openProjectMemory(options: {
  dataDir: string;
  cwd: string;
  settings: Settings;
  env: (name: string) => string | undefined;
  warn: (text: string) => void;
  /** The run's redactor: its secrets are redacted before anything is stored. */
  redact?: Redactor;
  /** Do the memory's work in a worker thread (where one can be started). */
  inWorker?: boolean;
}): Promise<MemoryStore | undefined> {
  const config = options.settings.memory as MemorySettings | undefined;
  if (config?.enabled === false) return undefined;
  const path = memoryPath(options.dataDir, options.cwd);
  const embeddings = config?.embeddings && {
    baseURL: config.embeddings.baseURL,
    model: config.embeddings.model,
    dimensions: config.embeddings.dimensions,
    apiKey: config.embeddings.apiKeyEnv ? options.env(config.embeddings.apiKeyEnv) : undefined,
  };
  try {
    ensurePrivateDir(options.dataDir);
    ensurePrivateDir(join(options.dataDir, "memory"));
    const secrets = options.redact?.secrets ?? [];
    const retention = retentionPolicy(options.settings);
    if (options.inWorker) {
      // A thread that cannot start (the runtime may not allow it) is no reason to go without.
      const opening = openMemoryInWorker({ path, embeddings, secrets, retention });
      const inWorker = await opening.catch((error) => {
        if (error instanceof MemoryError) throw error;
        return undefined;
      });
      if (inWorker) return inWorker;
    }
    return await openMemory({ path, embeddings, secrets, retention });
  } catch (error) {
    options.warn(`memory is off: ${path} could not be opened (${(error as Error).message})`);
    return undefined;
  }
}
