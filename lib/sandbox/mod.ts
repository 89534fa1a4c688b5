/**
 * A bubblewrap sandbox for the processes the agent starts (the `bash` tool, MCP stdio servers):
 * read-only file system but for the workspace, whose files that would run code outside the
 * sandbox stay read-only too (and a repository a command registers in git's index is taken out
 * again once it ends); secrets and the host's sockets hidden, no network, nothing outliving the
 * call. {@link detectSandbox} finds out whether one can be made here; {@link resolveSandbox}
 * weighs that against what the user asks for.
 *
 * @example
 * ```ts
 * import { detectSandbox, resolveSandbox } from "@x/agent/sandbox";
 * import { createBashTool } from "@x/agent/tools";
 *
 * const found = await detectSandbox();
 * const decision = resolveSandbox({ mode: "auto" }, found);
 * const bash = createBashTool({
 *   sandbox: decision.use && found.available
 *     ? { bwrap: found.path, writable: [Deno.cwd()], net: false }
 *     : undefined,
 * });
 * if (bash.name !== "bash") throw new Error("unexpected");
 * if (resolveSandbox({ mode: "off" }, found).use) throw new Error("unexpected");
 * ```
 *
 * @module
 */

export { detectSandbox, type DetectSandboxOptions, type SandboxAvailability } from "./detect.ts";
export { defaultProbeCacheFile, type ProbeCacheOptions } from "./probe_cache.ts";
export {
  resolveSandbox,
  type SandboxDecision,
  type SandboxPolicy,
  type SandboxReport,
} from "./policy.ts";
