/**
 * The bubblewrap (`bwrap`) arguments of the sandbox: Deno's permissions stop at the process
 * boundary, so whatever `bash` or an MCP server runs could otherwise read any secret, write
 * anywhere and reach any host. Inside the sandbox the file system is read-only but for the
 * workspace, secrets are hidden, the network is cut off, and the process tree dies with its
 * parent.
 *
 * @module
 */

import { isAbsolute, join, resolve } from "node:path";

/** Options of {@link sandboxArgs}. */
export interface SandboxArgsOptions {
  /** The program and its arguments, run inside. */
  command: string[];
  /** The working directory inside; it stays visible (read-only unless under a writable root). */
  cwd: string;
  /** The directories that stay writable: the workspace roots, and extras; missing ones are skipped. */
  writable: string[];
  /** Whether the network stays reachable; without it only a loopback of the sandbox's own is left. */
  net: boolean;
  /** The home directory whose secrets are hidden (default: `HOME`, when Deno grants reading it). */
  home?: string;
  /** More files or directories to hide, e.g. the agent's own data directory. */
  hide?: string[];
  /**
   * Directories shown read-only even where the sandbox would hide them (under `/tmp`, which is
   * its own), e.g. the Deno cache that a server run by `deno run npm:…` is loaded from.
   */
  readable?: string[];
}

/** Secrets under the home directory that the sandbox hides. */
export const SANDBOX_HIDDEN_HOME: readonly string[] = [
  ".ssh",
  ".aws",
  ".gnupg",
  ".config/gcloud",
  ".azure",
  ".kube",
  ".docker",
  ".netrc",
];

/**
 * Sockets (or their directories) that would let a command act outside the sandbox: the
 * per-user runtime directories (ssh and gpg agents, the session bus), the system bus, systemd's
 * private socket, and container engines.
 */
export const SANDBOX_HIDDEN_SYSTEM: readonly string[] = [
  "/run/user",
  "/run/dbus",
  "/run/systemd/private",
  "/run/docker.sock",
  "/var/run/docker.sock",
  "/run/podman",
  "/run/containerd",
];

/**
 * The namespaces and process settings, in order:
 * - `--die-with-parent`: the sandbox is SIGKILLed when bwrap or its parent (the agent) dies;
 * - `--unshare-pid --as-pid-1`: a fresh PID namespace whose init is the command itself, so that
 *   when it exits (or bwrap is killed) the kernel kills everything left inside, background jobs
 *   and daemons included; bwrap's own init would wait for them instead;
 * - no `--new-session`: the sandbox stays in bwrap's process group, so that killing the group
 *   reaches its init even when bwrap dies before `--die-with-parent` is armed (with a new
 *   session, killing bwrap during its set-up left the command running in about half the tries).
 *   Spawn bwrap in a session of its own instead (`detached: true`, which is `setsid`): then
 *   nothing inside has a controlling terminal to push keystrokes into (TIOCSTI);
 * - `--unshare-ipc --unshare-uts --unshare-cgroup-try`: no shared memory or semaphores with the
 *   host, its own hostname and cgroup view;
 * - `--unshare-net` unless `net`: no network but a loopback of its own;
 * - `--cap-drop ALL`: when bwrap runs as root it would otherwise keep every capability, and root
 *   with CAP_SYS_ADMIN can remount `/` read-write or unmount what hides the secrets.
 */
function _isolation(net: boolean): string[] {
  const args = [
    "--die-with-parent",
    "--unshare-pid",
    "--as-pid-1",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
  ];
  if (!net) args.push("--unshare-net");
  args.push("--cap-drop", "ALL");
  return args;
}

/**
 * The isolation, and the file system every sandbox starts from: `/` read-only, fresh `/dev`,
 * `/proc` and an empty `/tmp`.
 */
export function _confinement(net: boolean): string[] {
  return [
    ..._isolation(net),
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
  ];
}

/**
 * The `bwrap` arguments that run `command` in the sandbox, in this order (later mounts cover
 * earlier ones):
 * 1. the namespaces: a fresh PID namespace whose init is the command (all inside dies with it or
 *    with bwrap), private IPC, UTS and cgroup views, no network unless `net`, no capabilities,
 *    and death with the parent;
 * 2. `--ro-bind / /`: the whole file system, read-only;
 * 3. `--dev /dev`, `--proc /proc`: a minimal `/dev` and the new namespace's `/proc`;
 * 4. `--tmpfs /tmp` and `TMPDIR=/tmp`: a temporary directory private to the command;
 * 5. the writable roots and hidden paths (real paths; missing ones skipped), parents before
 *    children, so that a secret inside the workspace stays hidden and a workspace inside a
 *    hidden directory still shows: `--bind` for each writable root, and a read-only bind of
 *    `cwd` if no writable root holds it (so that it shows through `/tmp`); for each hidden
 *    directory an empty `--tmpfs`, for each hidden file or socket `/dev/null` (reading it fails:
 *    the mount is `nodev`). Hidden are {@link SANDBOX_HIDDEN_HOME} under `home`,
 *    {@link SANDBOX_HIDDEN_SYSTEM}, and `hide`;
 * 6. `--remount-ro` for each hidden directory, once the mount points inside it are made;
 * 7. `--chdir cwd`, `--`, and the command.
 *
 * Run bwrap with these in a process group and session of its own (`Deno.Command`'s `detached`)
 * and kill the group to stop it: the kernel then ends everything inside. Throws when Deno does
 * not let it check whether a path to hide exists: guessing wrong would either show the secret or
 * make every command fail.
 *
 * @example
 * ```ts
 * import { sandboxArgs } from "./bubblewrap.ts";
 * const args = sandboxArgs({
 *   command: ["make", "test"],
 *   cwd: "/",
 *   writable: ["/nonexistent/workspace"],
 *   net: false,
 *   home: "/nonexistent/home",
 * });
 * if (args.slice(-3).join(" ") !== "-- make test") throw new Error("unexpected");
 * if (!args.includes("--unshare-net") || args.includes("/nonexistent/workspace")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function sandboxArgs(options: SandboxArgsOptions): string[] {
  const cwd = resolve(options.cwd);
  const args = [
    ..._confinement(options.net),
    "--setenv",
    "TMPDIR",
    "/tmp",
  ];
  // Each mount: its path, its arguments, and whether it hides (at the same path, hiding wins).
  const mounts: { path: string; args: string[]; hides: boolean }[] = [];
  const writable = new Set(options.writable.map(_realDir).filter((path) => path !== undefined));
  for (const root of writable) {
    mounts.push({ path: root, args: ["--bind", root, root], hides: false });
  }
  for (const path of options.readable ?? []) {
    const real = _realDir(path);
    if (real && ![...writable].some((root) => _within(real, root))) {
      mounts.push({ path: real, args: ["--ro-bind", real, real], hides: false });
    }
  }
  const realCwd = _realDir(cwd);
  if (realCwd && ![...writable].some((root) => _within(realCwd, root))) {
    mounts.push({ path: realCwd, args: ["--ro-bind", realCwd, realCwd], hides: false });
  }
  const home = options.home ?? _grantedHome();
  const hidden = [
    ...(home ? SANDBOX_HIDDEN_HOME.map((name) => join(home, name)) : []),
    ...SANDBOX_HIDDEN_SYSTEM,
    ...(options.hide ?? []).map((path) => resolve(cwd, path)),
  ];
  const emptied = new Set<string>();
  for (const path of hidden) {
    const found = _lookup(path);
    if (!found || mounts.some((mount) => mount.hides && mount.path === found.real)) continue;
    if (found.isDirectory) emptied.add(found.real);
    mounts.push({
      path: found.real,
      args: found.isDirectory ? ["--tmpfs", found.real] : ["--ro-bind", "/dev/null", found.real],
      hides: true,
    });
  }
  // Parents before children: a secret inside the workspace is hidden, and a workspace inside a
  // hidden directory shows through it.
  mounts.sort((a, b) => _depth(a.path) - _depth(b.path) || Number(a.hides) - Number(b.hides));
  for (const mount of mounts) args.push(...mount.args);
  // Sealed only now, once the mount points inside them are made.
  for (const path of emptied) args.push("--remount-ro", path);
  args.push("--chdir", cwd, "--", ...options.command);
  return args;
}

/** The real path of an existing directory, else undefined. */
function _realDir(path: string): string | undefined {
  try {
    const real = Deno.realPathSync(path);
    return Deno.statSync(real).isDirectory ? real : undefined;
  } catch {
    return undefined;
  }
}

/** The real path of an existing path and whether it is a directory; throws when Deno says no. */
function _lookup(path: string): { real: string; isDirectory: boolean } | undefined {
  if (!isAbsolute(path)) return undefined;
  if (Deno.permissions.querySync({ name: "read", path }).state !== "granted") {
    throw new Error(
      `Cannot tell whether ${path} exists, to hide it from the sandbox: Deno does not grant ` +
        `reading it; allow it with --allow-read`,
    );
  }
  try {
    const real = Deno.realPathSync(path);
    return { real, isDirectory: Deno.statSync(real).isDirectory };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new Error(`Cannot check ${path}, to hide it from the sandbox: ${error}`, {
      cause: error,
    });
  }
}

function _grantedHome(): string | undefined {
  if (Deno.permissions.querySync({ name: "env", variable: "HOME" }).state !== "granted") return;
  return Deno.env.get("HOME") || undefined;
}

function _depth(path: string): number {
  return path.split("/").filter(Boolean).length;
}

function _within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`);
}
