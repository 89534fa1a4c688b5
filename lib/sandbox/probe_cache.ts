/**
 * What the bubblewrap probe found, kept in the user's cache directory so that a start does not
 * spawn `bwrap` twice to learn it again. An answer holds for one binary (its path, size and
 * modification time) on one kernel (its release), with the same user-namespace settings, in the
 * same user and mount namespaces: a new `bwrap`, a new kernel, a setting changed (user
 * namespaces turned off) or another container probes again.
 * Only a working sandbox is kept; a failed probe runs again at the next start, so that what the
 * user is told is always what the probe says now.
 *
 * The file is the user's alone (0600, in a 0700 folder) and written whole or not at all (a
 * temporary file renamed over it). It is read only when it is the user's own and nobody else may
 * write it; a file that is not, or that does not parse, or whose entry does not match, only
 * means probing again. A project cannot supply it: its place comes from the environment alone.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { readOwnFileSync } from "../files/own_files.ts";
import { ensurePrivateDir } from "../files/private_files.ts";

/** Where the probe's answers are kept, and whether a new answer may be written there. */
export interface ProbeCacheOptions {
  /** The cache file, e.g. `~/.cache/agent/sandbox.json`. */
  file: string;
  /** Write what a probe finds (default true); off, the file is only read. */
  write?: boolean;
}

/** What identifies an answer: the binary and the kernel it was found on. */
export interface ProbeKey {
  /** The `bwrap` binary's path. */
  path: string;
  /** Its size in bytes. */
  size: number;
  /** Its modification time (ms since the epoch). */
  mtimeMs: number;
  /** The kernel's release (`uname -r`). */
  kernel: string;
  /**
   * What else decides whether a sandbox can be made: the user-namespace settings of the kernel
   * (and of AppArmor) and the namespaces this process runs in (a container is another).
   */
  namespaces: string;
}

/** One kept answer: the key and the version `bwrap --version` gave. */
interface _Entry extends ProbeKey {
  version: string;
}

const _FORMAT = 2;
/** Entries kept at most (one per binary path; a user has one or two). */
const _MAX_ENTRIES = 8;
/** The largest cache file read. */
const _MAX_BYTES = 64 * 1024;

/**
 * The default cache file: `$XDG_CACHE_HOME/agent/sandbox.json`, else
 * `~/.cache/agent/sandbox.json`; none when neither variable is set (or readable).
 *
 * @example
 * ```ts
 * import { defaultProbeCacheFile } from "./probe_cache.ts";
 * const env = (name: string) => ({ HOME: "/home/ada" } as Record<string, string>)[name];
 * if (defaultProbeCacheFile(env) !== "/home/ada/.cache/agent/sandbox.json") throw new Error();
 * ```
 */
export function defaultProbeCacheFile(
  env: (name: string) => string | undefined,
): string | undefined {
  const xdg = env("XDG_CACHE_HOME");
  // The XDG spec: a relative path is invalid and is ignored.
  const root = xdg?.startsWith("/") ? xdg : env("HOME") ? join(env("HOME")!, ".cache") : undefined;
  return root ? join(root, "agent", "sandbox.json") : undefined;
}

/**
 * The key of the `bwrap` at `path`, or `undefined` when it cannot be known without asking Deno
 * for more than it grants (then nothing is cached).
 *
 * @example
 * ```ts
 * import { probeKey } from "./probe_cache.ts";
 * if (probeKey("/nonexistent/bwrap") !== undefined) throw new Error("unexpected");
 * ```
 */
export function probeKey(path: string): ProbeKey | undefined {
  const kernel = _kernel();
  if (!kernel || !_granted({ name: "read", path })) return undefined;
  const namespaces = _namespaces();
  if (namespaces === undefined) return undefined;
  try {
    const info = Deno.statSync(path);
    if (!info.isFile || !info.mtime) return undefined;
    return { path, size: info.size, mtimeMs: info.mtime.getTime(), kernel, namespaces };
  } catch {
    return undefined;
  }
}

/**
 * The version kept for `key`, or `undefined`: no file, not the user's own, not parsed, no
 * matching entry.
 *
 * @example
 * ```ts
 * import { readProbeCache, writeProbeCache } from "./probe_cache.ts";
 * const file = `${Deno.realPathSync(Deno.makeTempDirSync())}/agent/sandbox.json`;
 * const key = {
 *   path: "/usr/bin/bwrap", size: 1, mtimeMs: 2, kernel: "6.1.0", namespaces: "user:[1] mnt:[2]",
 * };
 * writeProbeCache({ file }, key, "0.8.0");
 * if (readProbeCache({ file }, key) !== "0.8.0") throw new Error("not kept");
 * if (readProbeCache({ file }, { ...key, kernel: "6.2.0" }) !== undefined) throw new Error();
 * ```
 */
export function readProbeCache(options: ProbeCacheOptions, key: ProbeKey): string | undefined {
  const entry = _entries(options.file).find((entry) => _same(entry, key));
  return entry?.version;
}

/**
 * Keeps `version` for `key` (replacing what was kept for the same path). Never throws: a cache
 * that cannot be written is only a cache that is not there.
 */
export function writeProbeCache(options: ProbeCacheOptions, key: ProbeKey, version: string): void {
  if (options.write === false) return;
  const { file } = options;
  const dir = dirname(file);
  if (!_granted({ name: "write", path: dir }) || !_granted({ name: "read", path: dir })) return;
  const entries = [
    { ...key, version },
    ..._entries(file).filter((entry) => entry.path !== key.path),
  ].slice(0, _MAX_ENTRIES);
  const temporary = join(dir, `.sandbox.${Deno.pid}.${crypto.randomUUID().slice(0, 8)}.tmp`);
  try {
    ensurePrivateDir(dir);
    Deno.writeTextFileSync(
      temporary,
      `${JSON.stringify({ format: _FORMAT, entries })}\n`,
      { mode: 0o600, createNew: true },
    );
    Deno.renameSync(temporary, file);
  } catch {
    try {
      Deno.removeSync(temporary);
    } catch {
      // Never made.
    }
  }
}

/** The well-formed entries of the file, when it is the user's own. */
function _entries(file: string): _Entry[] {
  const bytes = readOwnFileSync(file, { upTo: "/", maxBytes: _MAX_BYTES });
  if (!bytes) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return [];
  }
  const { format, entries } = (parsed ?? {}) as { format?: unknown; entries?: unknown };
  if (format !== _FORMAT || !Array.isArray(entries)) return [];
  return entries.filter(_isEntry);
}

function _isEntry(value: unknown): value is _Entry {
  const entry = value as Partial<_Entry> | null;
  return typeof entry === "object" && entry !== null &&
    typeof entry.path === "string" && typeof entry.kernel === "string" &&
    typeof entry.namespaces === "string" &&
    typeof entry.version === "string" && entry.version.length < 200 &&
    Number.isFinite(entry.size) && Number.isFinite(entry.mtimeMs);
}

function _same(entry: _Entry, key: ProbeKey): boolean {
  return entry.path === key.path && entry.size === key.size && entry.mtimeMs === key.mtimeMs &&
    entry.kernel === key.kernel && entry.namespaces === key.namespaces;
}

/** The settings that allow or forbid unprivileged user namespaces, where the kernel has them. */
const _USERNS_SETTINGS = [
  "/proc/sys/user/max_user_namespaces",
  "/proc/sys/kernel/unprivileged_userns_clone",
  "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
];

/**
 * The user-namespace settings and this process's user and mount namespaces, as one string; or
 * `undefined` when Deno does not grant reading them (then nothing is cached).
 */
function _namespaces(): string | undefined {
  if (!_granted({ name: "read", path: "/proc" })) return undefined;
  const parts: string[] = [];
  for (const setting of _USERNS_SETTINGS) {
    try {
      parts.push(`${setting}=${Deno.readTextFileSync(setting).trim()}`);
    } catch {
      // Not on this kernel.
    }
  }
  try {
    parts.push(Deno.readLinkSync("/proc/self/ns/user"), Deno.readLinkSync("/proc/self/ns/mnt"));
  } catch {
    return undefined;
  }
  return parts.join(" ");
}

/** The kernel's release, when Deno grants asking for it (nobody is asked). */
function _kernel(): string | undefined {
  if (!_granted({ name: "sys", kind: "osRelease" })) return undefined;
  try {
    return Deno.osRelease() || undefined;
  } catch {
    return undefined;
  }
}

function _granted(descriptor: Deno.PermissionDescriptor): boolean {
  try {
    return Deno.permissions.querySync(descriptor).state === "granted";
  } catch {
    return false;
  }
}
