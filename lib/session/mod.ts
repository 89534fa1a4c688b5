/**
 * Sessions that survive crashes: the {@link SessionStore} interface, a store of JSONL files
 * ({@link fileSessionStore}), one in memory ({@link memorySessionStore}), resuming with one
 * writer at a time ({@link resumeSession}), the schema every line is read with, and the
 * redaction that keeps secrets out of them.
 *
 * @example
 * ```ts
 * import { fileSessionStore, secretRedactor } from "@x/agent/session";
 *
 * const dir = await Deno.makeTempDir();
 * const store = fileSessionStore({ dir, redact: secretRedactor(["sk-test-123456789"]) });
 * const writer = await store.create({ cwd: "/work", model: "openai/gpt-4.1-mini" });
 * const at = new Date().toISOString();
 * await writer.append({ type: "message", message: { role: "user", content: "key sk-test-123456789" }, at });
 * await writer.close();
 * const { messages } = await store.load(writer.id);
 * if (messages[0].role !== "user" || messages[0].content !== "key [redacted]") throw new Error();
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */

export {
  type LoadedSession,
  MAX_SESSION_PAGE,
  type NewSession,
  SESSION_PAGE,
  SESSION_SCHEMA_VERSION,
  type SessionEntry,
  SessionError,
  type SessionErrorReason,
  type SessionHeader,
  type SessionHolder,
  type SessionInfo,
  type SessionListOptions,
  type SessionPage,
  type SessionReader,
  type SessionStore,
  sessionTitle,
  type SessionWriter,
} from "./store.ts";
export { memorySessionStore } from "./memory_store.ts";
export { pageSessions } from "./page.ts";
export {
  type KeptSession,
  type PrunedSession,
  type PruneResult,
  pruneSessions,
  type PruneSessionsOptions,
} from "./prune.ts";
export { type ResumedSession, resumeSession, type ResumeSessionOptions } from "./resume.ts";
export { sessionEntrySchema } from "./schema.ts";
export {
  defaultSessionsDir,
  fileSessionStore,
  type FileSessionStoreOptions,
  projectSessionsDir,
  sessionsWritable,
} from "./file_store.ts";
export {
  isSecretEnvName,
  type Redactor,
  secretRedactor,
  secretsFromEnv,
} from "../secrets/redact.ts";
