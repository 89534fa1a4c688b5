/**
 * The sandbox of a CLI run: `--sandbox auto|required|off` and the `sandbox` settings decide
 * whether the `bash` tool (and the MCP servers that ask) run inside bubblewrap, and under what
 * policy: the workspace roots Deno lets the agent write stay writable, the network stays only
 * when Deno grants all of it, and the agent's own data and settings are hidden.
 *
 * @module
 */

import { dirname, isAbsolute, join, resolve } from "node:path";
import { detectSandbox } from "../sandbox/detect.ts";
import type { ProbeCacheOptions } from "../sandbox/probe_cache.ts";
import { resolveSandbox, type SandboxReport } from "../sandbox/policy.ts";
import type { BashSandbox } from "../../tools/bash.ts";
import type { McpSandboxOptions } from "../mcp/client.ts";
import { userSettingsPath } from "./settings.ts";

/** Whether shell commands run in the sandbox: when it is available, always, or never. */
export type SandboxMode = "auto" | "required" | "off";

/** The `sandbox` settings in their long form. */
export interface SandboxSettings {
  /** The mode (default `auto`). */
  mode?: SandboxMode;
  /** More paths commands may write (`~/` for the home directory), e.g. `~/.cache/deno`. */
  writable?: string[];
  /**
   * More files or directories commands must not see, besides the credentials, histories and
   * sockets hidden anyway, e.g. `~/.config/acme/token` (a project's settings may add to these).
   */
  hide?: string[];
}

/** What a run's sandbox is. */
export interface CliSandbox {
  /** What the `start` event says. */
  report: SandboxReport;
  /** The `bash` tool's `sandbox` option: none when commands run without it. */
  bash?: BashSandbox;
  /** What MCP servers that ask for the sandbox get. */
  mcp: McpSandboxOptions;
  /** Every stdio MCP server runs in the sandbox (`required`). */
  mcpAll: boolean;
  /** To say once at the start: the sandbox is wanted and not there. */
  notice?: string;
}

/** What {@link resolveCliSandbox} works from. */
export interface CliSandboxOptions {
  /** `--sandbox`, which wins over the settings. */
  flag?: SandboxMode;
  /** The `sandbox` settings. */
  settings?: SandboxMode | SandboxSettings;
  /** The working directory: relative paths of the settings are resolved from it. */
  cwd: string;
  /** The workspace roots Deno lets the agent write. */
  roots: readonly string[];
  /** Whether Deno grants the whole network. */
  net: boolean;
  /** More paths to hide besides the settings' (the agent's data directory). */
  hide: readonly string[];
  /** Reads environment variables (`HOME`, and where the settings live). */
  env: (name: string) => string | undefined;
  /** Whether commands may run at all (else probing for bubblewrap is not worth it). */
  runs: boolean;
  /** Variables kept out of commands whatever their names (the user's providers' keys). */
  secretNames?: string[];
  /** The bubblewrap program (default: `bwrap` on `PATH`). */
  bwrap?: string;
  /** Where a working sandbox is kept across runs, per binary and kernel (none: probe each run). */
  probeCache?: ProbeCacheOptions;
}

/**
 * Works out the sandbox of a run, probing for bubblewrap (once per process, and once per binary
 * and kernel with `probeCache`) unless the mode is `off` or no command can run.
 *
 * @example
 * ```ts
 * import { resolveCliSandbox } from "./sandbox.ts";
 * const sandbox = await resolveCliSandbox({
 *   flag: "off", cwd: "/w", roots: ["/w"], net: false, hide: [], env: () => undefined, runs: true,
 * });
 * if (sandbox.report.kind !== "none" || sandbox.bash !== undefined) throw new Error("unexpected");
 * ```
 */
export async function resolveCliSandbox(options: CliSandboxOptions): Promise<CliSandbox> {
  const settings = typeof options.settings === "string"
    ? { mode: options.settings }
    : options.settings ?? {};
  const mode = options.flag ?? settings.mode ?? "auto";
  const home = options.env("HOME");
  const paths = (given: readonly string[] = []) =>
    given.flatMap((path) => {
      if (path === "~" || path.startsWith("~/")) return home ? [join(home, path.slice(1))] : [];
      return isAbsolute(path) ? [path] : [resolve(options.cwd, path)];
    });
  const settingsFile = userSettingsPath(options.env);
  const writable = [...options.roots, ...paths(settings.writable)];
  const hide = [
    ...options.hide,
    ...(settingsFile ? [dirname(settingsFile)] : []),
    ...paths(settings.hide),
  ];
  const mcpAll = mode === "required";
  // The Deno cache stays readable, so that what `deno run` starts inside loads without network.
  const cache = options.env("DENO_DIR") ||
    (options.env("XDG_CACHE_HOME") ? join(options.env("XDG_CACHE_HOME")!, "deno") : undefined) ||
    (home ? join(home, ".cache", "deno") : undefined);
  const readable = cache ? [cache] : [];
  if (mode === "off") {
    return {
      report: { kind: "none", mode, reason: "turned off" },
      mcp: { unavailable: "the sandbox is turned off (--sandbox off)" },
      mcpAll,
    };
  }
  if (!options.runs) {
    return {
      report: { kind: "none", mode, reason: "no command runs: Deno does not grant run" },
      mcp: { unavailable: "Deno does not grant running bwrap" },
      mcpAll,
    };
  }
  const found = await detectSandbox({
    ...(options.bwrap ? { path: options.bwrap } : {}),
    ...(options.probeCache ? { cache: options.probeCache } : {}),
  });
  const decision = resolveSandbox({ mode }, found);
  if (found.available) {
    return {
      report: { kind: "bubblewrap", mode, net: options.net, writable },
      bash: {
        bwrap: found.path,
        writable,
        net: options.net,
        hide,
        ...(options.secretNames?.length ? { secretNames: options.secretNames } : {}),
        ...(readable.length ? { readable } : {}),
      },
      mcp: {
        bwrap: found.path,
        workspace: writable,
        hide,
        ...(readable.length ? { readable } : {}),
      },
      mcpAll,
    };
  }
  return {
    report: { kind: "none", mode, reason: found.reason },
    ...(decision.refuse ? { bash: { refuse: decision.refuse } } : {}),
    mcp: { unavailable: found.fix ? `${found.reason}; ${found.fix}` : found.reason },
    mcpAll,
    notice: decision.warning ??
      `the sandbox is required but ${found.reason}: shell commands are refused` +
        (found.fix ? ` (${found.fix})` : ""),
  };
}
