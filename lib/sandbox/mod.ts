/**
 * A bubblewrap sandbox for the processes the agent starts (the `bash` tool, MCP stdio servers):
 * read-only file system but for the workspace, whose files that would run code outside the
 * sandbox stay read-only too (and a repository a command registers in git's index is taken out
 * again once it ends); secrets and the host's sockets hidden, no network, nothing outliving the
 * call.
 *
 * @example
 * ```ts
 * import { detectSandbox, resolveSandbox } from "./mod.ts";
 * const found = await detectSandbox({ path: "/nonexistent/bwrap" });
 * const decision = resolveSandbox({ mode: "off" }, found);
 * if (decision.use) throw new Error("unexpected");
 * ```
 *
 * @module
 */

export {
  type PreparedSandbox,
  prepareSandbox,
  sandboxArgs,
  type SandboxArgsOptions,
} from "./bubblewrap.ts";
export {
  hiddenInHome,
  hiddenSockets,
  SANDBOX_HIDDEN_HOME,
  SANDBOX_HIDDEN_SYSTEM,
  SANDBOX_SOCKET_DIRECTORIES,
} from "./hidden.ts";
export {
  type GuardPlan,
  guardPlan,
  type GuardPlanOptions,
  PROTECTED_GIT_NAMES,
  PROTECTED_HOME_NAMES,
  PROTECTED_PROJECT_NAMES,
  type ProtectedEntry,
  protectedEntry,
  type ProtectedName,
} from "./protected.ts";
export {
  type Leftover,
  type LeftoverWatch,
  watchLeftovers,
  type WatchLeftoversOptions,
} from "./leftovers.ts";
export {
  type IndexGitlink,
  type IndexGitlinks,
  indexGitlinks,
  type IndexGitlinksOptions,
} from "./git_index.ts";
export {
  type HeldPlaceholders,
  holdPlaceholders,
  isPlaceholder,
  type Placeholder,
} from "./placeholders.ts";
export { detectSandbox, type DetectSandboxOptions, type SandboxAvailability } from "./detect.ts";
export { SANDBOX_STRIPPED_ENV, sandboxEnv } from "./env.ts";
export {
  resolveSandbox,
  type SandboxDecision,
  type SandboxPolicy,
  type SandboxReport,
} from "./policy.ts";
