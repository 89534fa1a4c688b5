/**
 * Whether bubblewrap can make a sandbox here: installed, allowed by Deno, and allowed by the
 * kernel (user namespaces may be off, a container may forbid mounting `/proc`).
 *
 * @module
 */

import { join } from "node:path";
import { _confinement } from "./bubblewrap.ts";
import {
  type ProbeCacheOptions,
  probeKey,
  readProbeCache,
  writeProbeCache,
} from "./probe_cache.ts";

/**
 * Whether a sandbox can be made here, and with which `bwrap`; or why not, and, when it is known,
 * what would make one (e.g. the Deno flag that is missing).
 */
export type SandboxAvailability =
  | { available: true; version: string; path: string }
  | { available: false; reason: string; fix?: string };

/** Options of {@link detectSandbox}. */
export interface DetectSandboxOptions {
  /** The `bwrap` to use (default: the first on `PATH`). */
  path?: string;
  /**
   * Where a working sandbox found by the probe is kept across processes, per binary and kernel
   * (see `probe_cache.ts`); none: the probe runs in every process.
   */
  cache?: ProbeCacheOptions;
}

const _cache = new Map<string, Promise<SandboxAvailability>>();

/**
 * Finds `bwrap` and checks that it can really make a sandbox (user namespaces may be disabled,
 * or a container may forbid mounting `/proc`) by running `true` in one with the namespaces and
 * mounts `sandboxArgs` uses. The answer is cached for the process, per path, and with `cache`
 * a working sandbox is kept in that file for later processes (per binary and kernel). Never throws:
 * when Deno does not grant running `bwrap` the sandbox is unavailable, the reason says so and
 * the fix names the flag (`--allow-run=bwrap`); Deno is never asked.
 *
 * @example
 * ```ts
 * import { detectSandbox } from "./detect.ts";
 * const missing = await detectSandbox({ path: "/nonexistent/bwrap" });
 * if (missing.available || !missing.reason.includes("/nonexistent/bwrap")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function detectSandbox(options: DetectSandboxOptions = {}): Promise<SandboxAvailability> {
  const key = `${options.path ?? ""}\0${options.cache?.file ?? ""}`;
  let found = _cache.get(key);
  if (!found) {
    found = _detect(options.path, options.cache).catch((error) => ({
      available: false as const,
      reason: `checking bwrap failed: ${(error as Error).message}`,
    }));
    _cache.set(key, found);
  }
  return found;
}

async function _detect(
  given: string | undefined,
  cache: ProbeCacheOptions | undefined,
): Promise<SandboxAvailability> {
  const found = given ?? _which("bwrap");
  const path = found ?? "bwrap";
  if (Deno.permissions.querySync({ name: "run", command: path }).state !== "granted") {
    // Installed or not, Deno's grant is what is missing first; asking Deno is not this probe's.
    const name = given ?? "bwrap";
    return {
      available: false,
      reason: `Deno does not grant running ${name}` +
        (found && !given ? ` (installed at ${found})` : ""),
      fix: `add --allow-run=${name}`,
    };
  }
  const key = cache && found ? probeKey(found) : undefined;
  const kept = key && readProbeCache(cache!, key);
  if (kept) return { available: true, version: kept, path };
  let version: Deno.CommandOutput;
  try {
    version = await new Deno.Command(path, { args: ["--version"], stdin: "null" }).output();
  } catch (error) {
    return {
      available: false,
      reason: error instanceof Deno.errors.NotFound
        ? `bubblewrap (${path}) is not installed`
        : `${path} cannot be run: ${(error as Error).message}`,
    };
  }
  const probe = await _output(path, [
    ..._confinement(false),
    "--",
    "true",
  ], 5_000);
  if (!probe.success) {
    const said = new TextDecoder().decode(probe.stderr).trim().split("\n")[0] ||
      `it exited with code ${probe.code}`;
    return {
      available: false,
      reason: `${path} cannot make a sandbox here (${said}); user namespaces may be disabled`,
      fix: `enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone, or ` +
        `AppArmor's kernel.apparmor_restrict_unprivileged_userns)`,
    };
  }
  const text = new TextDecoder().decode(version.stdout).trim();
  const said = text.replace(/^bubblewrap\s+/, "") || text;
  if (key) writeProbeCache(cache!, key, said);
  return { available: true, version: said, path };
}

/** Runs a command, killing it after `ms`. */
async function _output(path: string, args: string[], ms: number): Promise<Deno.CommandOutput> {
  const child = new Deno.Command(path, {
    args,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }, ms);
  try {
    return await child.output();
  } finally {
    clearTimeout(timer);
  }
}

/** The first `name` on `PATH` when Deno lets it be looked up without asking. */
function _which(name: string): string | undefined {
  if (Deno.permissions.querySync({ name: "env", variable: "PATH" }).state !== "granted") return;
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (!dir) continue;
    const path = join(dir, name);
    if (Deno.permissions.querySync({ name: "read", path }).state !== "granted") continue;
    try {
      if (Deno.statSync(path).isFile) return path;
    } catch {
      // Not there.
    }
  }
  return undefined;
}
