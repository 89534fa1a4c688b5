/**
 * What the sandbox hides: credentials and shell histories in the home directory, the sockets
 * that hand out control of the machine, and, without the network, every unix socket of the host.
 * A network namespace of its own cuts a command off TCP and the abstract sockets, but not from a
 * socket file it can see (`/run/postgresql/.s.PGSQL.5432` accepts it whatever the mount's
 * read-only flag says), so those are hidden one by one, as the kernel lists them.
 *
 * @module
 */

import { join } from "node:path";

/**
 * Credentials and histories under the home directory that the sandbox hides (a directory shows
 * empty, a file cannot be read): keys and agents (`.ssh`, `.gnupg`), cloud and cluster logins
 * (`.aws`, `.azure`, `.config/gcloud`, `.kube`, `.docker`), tokens of git hosts and package
 * registries (`.git-credentials`, `.config/gh`, `.config/glab-cli`, `.npmrc`, `.yarnrc.yml`,
 * `.pypirc`, `.gem/credentials`, cargo's `credentials`), passwords (`.netrc`, `.pgpass`,
 * `.my.cnf`, `.vault-token`, `.password-store`, the desktop keyrings), other agents' logins, the
 * browsers' profiles (their cookies are logins too), and the histories of shells and database
 * clients, where typed passwords and tokens end up.
 */
export const SANDBOX_HIDDEN_HOME: readonly string[] = [
  ".ssh",
  ".gnupg",
  ".aws",
  ".azure",
  ".config/gcloud",
  ".kube",
  ".docker",
  ".netrc",
  ".git-credentials",
  ".config/git/credentials",
  ".config/gh",
  ".config/glab-cli",
  ".config/hub",
  ".npmrc",
  ".yarnrc.yml",
  ".pypirc",
  ".gem/credentials",
  ".cargo/credentials",
  ".cargo/credentials.toml",
  ".pgpass",
  ".my.cnf",
  ".mylogin.cnf",
  ".vault-token",
  ".password-store",
  ".local/share/keyrings",
  ".config/op",
  ".terraform.d/credentials.tfrc.json",
  ".config/rclone",
  ".s3cfg",
  ".claude",
  ".claude.json",
  ".codex",
  ".config/github-copilot",
  ".mozilla",
  ".config/google-chrome",
  ".config/chromium",
  ".bash_history",
  ".zsh_history",
  ".zhistory",
  ".histfile",
  ".local/share/fish/fish_history",
  ".python_history",
  ".node_repl_history",
  ".psql_history",
  ".mysql_history",
  ".sqlite_history",
  ".rediscli_history",
  ".dbshell",
  ".lesshst",
];

/**
 * Sockets (or their directories) that would let a command act outside the sandbox even with the
 * network on, so hidden always: the per-user runtime directories (ssh and gpg agents, the session
 * bus, the display), the system bus, systemd's private socket, and container engines.
 */
export const SANDBOX_HIDDEN_SYSTEM: readonly string[] = [
  "/run/user",
  "/run/dbus",
  "/var/run/dbus",
  "/run/systemd/private",
  "/run/docker.sock",
  "/var/run/docker.sock",
  "/run/podman",
  "/run/containerd",
];

/** Where the host's unix sockets are listed, with their paths. */
const _SOCKET_LIST = "/proc/net/unix";

/**
 * Where services keep their sockets: hidden whole, without the network, when the host's sockets
 * cannot be listed one by one (Deno does not grant reading the list, or a socket's path).
 */
export const SANDBOX_SOCKET_DIRECTORIES: readonly string[] = ["/run", "/var/run"];

/**
 * What to hide, without the network, so that no unix socket of the host answers a command: each
 * socket the kernel lists (`/proc/net/unix`), wherever it is; abstract ones, which a network
 * namespace of its own cuts off, and those of other mount namespaces are left out. Deno reads
 * `/proc` only with `--allow-all`; short of it, the list is read by `cat` in a bare bubblewrap
 * namespace (`bwrap`, when given and Deno grants running it). What cannot be checked that way,
 * without asking Deno (nobody is asked), is made up for by hiding
 * {@link SANDBOX_SOCKET_DIRECTORIES} whole.
 *
 * @example
 * ```ts
 * import { hiddenSockets } from "./hidden.ts";
 * const paths = hiddenSockets();
 * if (!paths.every((path) => path.startsWith("/"))) throw new Error("unexpected");
 * ```
 */
export function hiddenSockets(bwrap?: string): string[] {
  const text = _socketList(bwrap);
  if (text === undefined) return [...SANDBOX_SOCKET_DIRECTORIES];
  const readable = (path: string) =>
    Deno.permissions.querySync({ name: "read", path }).state === "granted";
  const paths = new Set<string>();
  let unchecked = false;
  for (const line of text.split("\n").slice(1)) {
    // Num RefCount Protocol Flags Type St Inode Path: the path is what follows the 7th field.
    const path = line.match(/^\s*\S+(?:\s+\S+){6}\s+(\/.*)$/)?.[1];
    if (!path || paths.has(path)) continue;
    if (!readable(path)) {
      unchecked = true;
      continue;
    }
    try {
      if (Deno.lstatSync(path).isSocket) paths.add(path);
    } catch {
      // Another mount namespace's, or gone.
    }
  }
  return [...paths, ...(unchecked ? SANDBOX_SOCKET_DIRECTORIES : [])];
}

/** The kernel's list of unix sockets: read by Deno itself, else through `bwrap`, else none. */
function _socketList(bwrap: string | undefined): string | undefined {
  try {
    return Deno.readTextFileSync(_SOCKET_LIST);
  } catch {
    // Deno reads /proc only with --allow-all.
  }
  if (!bwrap || Deno.permissions.querySync({ name: "run", command: bwrap }).state !== "granted") {
    return undefined;
  }
  try {
    const output = new Deno.Command(bwrap, {
      args: ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid"]
        .concat(["--die-with-parent", "--cap-drop", "ALL", "--", "cat", _SOCKET_LIST]),
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).outputSync();
    return output.success ? new TextDecoder().decode(output.stdout) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The home directory's hidden paths, absolute.
 *
 * @example
 * ```ts
 * import { hiddenInHome } from "./hidden.ts";
 * if (!hiddenInHome("/home/ada").includes("/home/ada/.git-credentials")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function hiddenInHome(home: string): string[] {
  return SANDBOX_HIDDEN_HOME.map((name) => join(home, name));
}
