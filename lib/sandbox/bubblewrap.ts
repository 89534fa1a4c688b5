/**
 * The bubblewrap (`bwrap`) arguments of the sandbox: Deno's permissions stop at the process
 * boundary, so whatever `bash` or an MCP server runs could otherwise read any secret, write
 * anywhere and reach any host. Inside the sandbox the file system is read-only but for the
 * workspace, secrets are hidden, the network is cut off, and the process tree dies with its
 * parent.
 *
 * @module
 */

import { basename, dirname, isAbsolute, resolve } from "node:path";
import { hiddenInHome, hiddenSockets, SANDBOX_HIDDEN_SYSTEM } from "./hidden.ts";
import { type Leftover, watchLeftovers } from "./leftovers.ts";
import { type HeldPlaceholders, holdPlaceholders } from "./placeholders.ts";
import { type GuardPlan, guardPlan } from "./protected.ts";
import { type SandboxedKind, sandboxStarted } from "./running.ts";

export { SANDBOX_HIDDEN_HOME, SANDBOX_HIDDEN_SYSTEM } from "./hidden.ts";

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
  /**
   * The home directory whose secrets are hidden, and whose startup files are guarded when it is
   * writable (default: `HOME`, when Deno grants reading it).
   */
  home?: string;
  /** More files or directories to hide, e.g. the agent's own data directory. */
  hide?: string[];
  /**
   * Directories shown read-only even where the sandbox would hide them (under `/tmp`, which is
   * its own), e.g. the Deno cache that a server run by `deno run npm:…` is loaded from.
   */
  readable?: string[];
  /**
   * The `bwrap` that will run the sandbox: without `--allow-all`, Deno does not let the agent
   * read the host's list of sockets, which this reads instead.
   */
  bwrap?: string;
  /**
   * What runs: a `command` that ends by itself (the default) or a `server` that lasts. A
   * prepared sandbox with writable directories counts as running until released (see
   * `running.ts`).
   */
  kind?: SandboxedKind;
}

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

/** A sandbox ready to start: its `bwrap` arguments, and what to undo once it has ended. */
export interface PreparedSandbox {
  /** The `bwrap` arguments. */
  args: string[];
  /**
   * Takes away what stands in place of absent protected entries (unless another sandbox still
   * holds it). Call it once bwrap has exited (or failed to start); calling it again does nothing.
   */
  release(): void;
  /**
   * Once bwrap has exited: takes out of git's index the repositories the command registered in
   * a guarded repository (a gitlink, which `git status` outside would look into, running what
   * its config names), and says so, and names the repositories it made where nothing guards
   * their config (see `leftovers.ts`): for the model and the user, nothing most of the time.
   * Calling it again says nothing.
   */
  checkLeftovers(): Promise<Leftover[]>;
}

/**
 * The `bwrap` arguments that run `command` in the sandbox (see {@link prepareSandbox}). What
 * stands in place of absent protected entries is left there, harmless, for the next prepared
 * sandbox over the same directory to take away: prefer {@link prepareSandbox} when the end of
 * the sandbox can be told.
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
  const prepared = _prepare(options);
  prepared.held.leave();
  return prepared.args;
}

/**
 * Prepares the sandbox that runs `command`: its `bwrap` arguments, in this order (later mounts
 * cover earlier ones), and the placeholders it needs, held until `release()`:
 * 1. the namespaces: a fresh PID namespace whose init is the command (all inside dies with it or
 *    with bwrap), private IPC, UTS and cgroup views, no network unless `net`, no capabilities,
 *    and death with the parent;
 * 2. `--ro-bind / /`: the whole file system, read-only;
 * 3. `--dev /dev`, `--proc /proc`: a minimal `/dev` and the new namespace's `/proc`;
 * 4. `--tmpfs /tmp` and `TMPDIR=/tmp`: a temporary directory private to the command;
 * 5. the writable roots, hidden paths and protected entries (real paths; missing ones skipped),
 *    parents before children, so that a secret inside the workspace stays hidden and a
 *    workspace inside a hidden directory still shows: `--bind` for each writable root, and a
 *    read-only bind of `cwd` if no writable root holds it (so that it shows through `/tmp`);
 *    for each hidden directory an empty `--tmpfs`, for each hidden file or socket `/dev/null`
 *    (reading it fails: the mount is `nodev`); for each protected entry in a writable root (see
 *    `guardPlan`: the agent's project settings, `.mcp.json`, `.envrc`, git's config and hooks,
 *    …) a read-only bind over itself, absent ones held by a placeholder, and a bind of each
 *    directory between the root and the entry over itself, so that none can be renamed away.
 *    Hidden are {@link SANDBOX_HIDDEN_HOME} under `home`, {@link SANDBOX_HIDDEN_SYSTEM},
 *    `$XDG_RUNTIME_DIR`, `hide`, and without `net` every unix socket of the host
 *    ({@link hiddenSockets}; what cannot be checked, by hiding `/run` whole);
 * 6. `--remount-ro` for each hidden directory, once the mount points inside it are made;
 * 7. `--chdir cwd`, `--`, and the command.
 *
 * With writable directories, it also records what the guarded repositories' indexes hold, for
 * `checkLeftovers()` to undo what the command added there once it has ended.
 *
 * Run bwrap with these in a process group and session of its own (`Deno.Command`'s `detached`)
 * and kill the group to stop it: the kernel then ends everything inside. Throws when Deno does
 * not let it check whether a path to hide exists (guessing wrong would either show the secret or
 * make every command fail), or when a placeholder cannot be made.
 *
 * @example
 * ```ts
 * import { prepareSandbox } from "./bubblewrap.ts";
 * const ws = Deno.realPathSync(Deno.makeTempDirSync());
 * const sandbox = prepareSandbox({ command: ["true"], cwd: ws, writable: [ws], net: false });
 * // While it runs, nothing of that name can be made: a placeholder is bound read-only there.
 * if (!sandbox.args.join(" ").includes(`--ro-bind ${ws}/.envrc ${ws}/.envrc`)) {
 *   throw new Error("unexpected");
 * }
 * sandbox.release();
 * // A placeholder whose lock is still being let go is removed a moment later.
 * let left = [...Deno.readDirSync(ws)].map((entry) => entry.name);
 * for (let wait = 0; left.length > 0 && wait < 40; wait++) {
 *   await new Promise((resolve) => setTimeout(resolve, 25));
 *   left = [...Deno.readDirSync(ws)].map((entry) => entry.name);
 * }
 * if (left.length > 0) throw new Error(`left behind: ${left.join(", ")}`);
 * Deno.removeSync(ws);
 * ```
 */
export function prepareSandbox(options: SandboxArgsOptions): PreparedSandbox {
  const prepared = _prepare(options);
  if (options.writable.length === 0) {
    return {
      args: prepared.args,
      release: prepared.held.release,
      checkLeftovers: () => Promise.resolve([]),
    };
  }
  const leftovers = watchLeftovers({ ...prepared.watched, bwrap: options.bwrap });
  const running = sandboxStarted(options.kind ?? "command", options.command.join(" "));
  return {
    args: prepared.args,
    release() {
      running.end();
      prepared.held.release();
    },
    checkLeftovers: () => leftovers.check(),
  };
}

/** What {@link _prepare} worked out that the watch of leftovers starts from. */
interface _Watched {
  cwd: string;
  roots: string[];
  plan: GuardPlan;
  hidden: string[];
}

function _prepare(
  options: SandboxArgsOptions,
): { args: string[]; held: HeldPlaceholders; watched: _Watched } {
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
  const home = options.home ?? _grantedEnv("HOME");
  const runtime = _grantedEnv("XDG_RUNTIME_DIR");
  // Under /tmp, which is the sandbox's own, only what a mount shows through it can be reached.
  const shown = (path: string) =>
    !_within(path, "/tmp") || mounts.some((mount) => _within(path, mount.path));
  const sockets = options.net ? [] : hiddenSockets(options.bwrap).filter(shown);
  const hidden = [
    ...(home ? hiddenInHome(home) : []),
    ...SANDBOX_HIDDEN_SYSTEM,
    ...(runtime && isAbsolute(runtime) ? [runtime] : []),
    ...(options.hide ?? []).map((path) => resolve(cwd, path)),
  ];
  const emptied = new Set<string>();
  // Most paths to hide are absent: their directories' listings, read once, say so.
  const listed = new Map<string, Set<string> | null | undefined>();
  for (
    const [path, known] of [
      ...hidden.map((path) => [path, false] as const),
      ...sockets.map((path) => [path, true] as const),
    ]
  ) {
    const found = _lookup(path, known ? undefined : listed);
    if (!found || mounts.some((mount) => mount.hides && mount.path === found.real)) continue;
    if (found.isDirectory) emptied.add(found.real);
    mounts.push({
      path: found.real,
      args: found.isDirectory ? ["--tmpfs", found.real] : ["--ro-bind", "/dev/null", found.real],
      hides: true,
    });
  }
  const hiddenPaths = mounts.filter((mount) => mount.hides).map((mount) => mount.path);
  const plan = guardPlan({
    cwd: realCwd ?? cwd,
    writable: [...writable],
    home: home ? _realDir(home) : undefined,
    hidden: hiddenPaths,
    canMake: (path) => Deno.permissions.querySync({ name: "write", path }).state === "granted",
  });
  const held = holdPlaceholders(plan.missing);
  for (const path of plan.pins) {
    mounts.push({ path, args: ["--bind", path, path], hides: false });
  }
  for (const path of [...plan.existing, ...held.paths]) {
    mounts.push({ path, args: ["--ro-bind", path, path], hides: false });
  }
  // Parents before children: a secret inside the workspace is hidden, and a workspace inside a
  // hidden directory shows through it.
  mounts.sort((a, b) => _depth(a.path) - _depth(b.path) || Number(a.hides) - Number(b.hides));
  for (const mount of mounts) args.push(...mount.args);
  // Sealed only now, once the mount points inside them are made.
  for (const path of emptied) args.push("--remount-ro", path);
  args.push("--chdir", cwd, "--", ...options.command);
  const watched = { cwd: realCwd ?? cwd, roots: [...writable], plan, hidden: hiddenPaths };
  return { args, held, watched };
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
function _lookup(
  path: string,
  listed?: Map<string, Set<string> | null | undefined>,
): { real: string; isDirectory: boolean } | undefined {
  if (!isAbsolute(path)) return undefined;
  if (Deno.permissions.querySync({ name: "read", path }).state !== "granted") {
    throw new Error(
      `Cannot tell whether ${path} exists, to hide it from the sandbox: Deno does not grant ` +
        `reading it; allow it with --allow-read`,
    );
  }
  // An absent path, as its directory's listing says, is no error to build and catch.
  const names = listed && _names(dirname(path), listed);
  if (names === null || (names && !names.has(basename(path)))) return undefined;
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

/** A directory's entries: `null` when it does not exist, `undefined` when it cannot be read. */
function _names(
  dir: string,
  listed: Map<string, Set<string> | null | undefined>,
): Set<string> | null | undefined {
  if (listed.has(dir)) return listed.get(dir);
  let names: Set<string> | null | undefined;
  try {
    names = new Set(Array.from(Deno.readDirSync(dir), (entry) => entry.name));
  } catch (error) {
    names = error instanceof Deno.errors.NotFound ? null : undefined;
  }
  listed.set(dir, names);
  return names;
}

/** An environment variable, when Deno grants reading it (nobody is asked). */
function _grantedEnv(variable: string): string | undefined {
  if (Deno.permissions.querySync({ name: "env", variable }).state !== "granted") return;
  return Deno.env.get(variable) || undefined;
}

function _depth(path: string): number {
  return path.split("/").filter(Boolean).length;
}

function _within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`);
}
