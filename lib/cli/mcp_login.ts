/**
 * `agent mcp login <server>` and `agent mcp logout <server>`: the OAuth login of an MCP server of
 * the user's configuration (the user's settings, `--mcp-config`, and a trusted project's
 * `.mcp.json`), kept for the user alone in the data directory (see `lib/mcp/oauth.ts`). The
 * login opens the authorization URL in a browser (`$BROWSER`, else the system's opener), prints
 * it too, and waits at a loopback redirect.
 *
 * @module
 */

import { dirname, join, resolve } from "node:path";
import { ConfigError } from "../errors.ts";
import { loadMcpConfig } from "../mcp/config.ts";
import { credentialStore, loginMcpServer, webAddress } from "../mcp/oauth.ts";
import { checkPrivateDir } from "../files/private_files.ts";
import { defaultSessionsDir } from "../session/mod.ts";
import type { CliArgs } from "./args.ts";
import type { HeadlessIo } from "./headless.ts";
import { readProjectFiles } from "./project.ts";
import { loadSettings } from "./settings.ts";
import { decideTrust, trustedDirectories, trustRequest, trustStore } from "./trust.ts";

/** Logs in to (or out of) the server; resolves to the exit code. */
export async function runMcpLogin(
  options: CliArgs,
  what: { action: "login" | "logout"; server: string },
  io: HeadlessIo & { env(name: string): string | undefined },
): Promise<number> {
  const { env } = io;
  const warn = (text: string) => io.err(`agent: ${text}\n`);
  const cwd = resolve(options.cwd ?? Deno.cwd());
  const sessionsDir = defaultSessionsDir(env);
  if (!sessionsDir) throw new ConfigError("No data directory: set HOME or AGENT_DATA_DIR");
  const dataDir = dirname(sessionsDir);
  const refused = checkPrivateDir(dataDir);
  if (refused) {
    throw new ConfigError(
      `the data directory ${dataDir} is not used: ${refused}; set AGENT_DATA_DIR to a ` +
        "directory of your own",
    );
  }
  // A login is kept by the server's URL: one whose server left the configuration is logged out
  // of by that URL.
  if (what.action === "logout" && /^https?:\/\//i.test(what.server)) {
    const store = credentialStore(join(dataDir, "mcp-oauth"));
    const removed = store.remove(what.server);
    io.err(
      removed
        ? `agent: logged out of ${what.server}\n`
        : `agent: no login to ${what.server} was kept\n`,
    );
    return 0;
  }
  // The project's servers count only when the project is trusted, as in a run.
  const files = await readProjectFiles(cwd);
  const loaded = await loadSettings({ cwd, env, project: files.settings ?? null });
  const trust = await decideTrust(trustRequest(files, loaded.grants), {
    flag: options.trustProject,
    directories: trustedDirectories(loaded.settings.trustedDirectories, env("HOME")),
    store: trustStore(dataDir, { warn }),
  });
  const mcp = await loadMcpConfig({
    cwd,
    files: options.mcpConfig,
    env,
    project: trust.trusted ? files.mcp ?? false : false,
  });
  for (const warning of mcp.warnings) warn(warning);
  const server = mcp.config.mcpServers[what.server];
  if (!server) {
    const names = Object.keys(mcp.config.mcpServers);
    const untrusted = !trust.trusted && files.mcp
      ? " (this project's .mcp.json counts once " +
        "you trust the project)"
      : "";
    throw new ConfigError(
      `No MCP server "${what.server}" in your configuration${untrusted}: ` +
        (names.length ? `the servers are ${names.join(", ")}` : "there is none") +
        (what.action === "logout" ? " (a login is also logged out of by its URL)" : ""),
    );
  }
  if (!("url" in server)) {
    throw new ConfigError(
      `The MCP server "${what.server}" runs as a command on this machine: it has no login`,
    );
  }
  const store = credentialStore(join(dataDir, "mcp-oauth"));
  if (what.action === "logout") {
    const removed = store.remove(server.url);
    io.err(
      removed
        ? `agent: logged out of ${what.server} (${server.url})\n`
        : `agent: no login to ${what.server} was kept\n`,
    );
    return 0;
  }
  if (server.oauth?.grant === "client_credentials") {
    throw new ConfigError(
      `The MCP server "${what.server}" logs in with its client's credentials at every start: ` +
        "there is nobody to log in",
    );
  }
  const outcome = await loginMcpServer({
    server: what.server,
    url: server.url,
    store,
    client: server.oauth &&
      { client_id: server.oauth.clientId, client_secret: server.oauth.clientSecret },
    scope: server.oauth?.scope,
    open: (url) => openInBrowser(url, env, (text) => io.err(text)),
  }).catch((error) => {
    // The servers' words, said as a failed login, not as a fault of the program.
    throw new ConfigError(`The login to ${what.server} failed: ${(error as Error).message}`, {
      cause: error,
    });
  });
  io.err(
    outcome === "already"
      ? `agent: already logged in to ${what.server}\n`
      : `agent: logged in to ${what.server}; the login is kept for you alone in ${
        store.fileOf(server.url)
      }\n`,
  );
  return 0;
}

/**
 * Opens `url` in the user's browser (`$BROWSER`, else the system's opener) where Deno grants
 * starting it; says it on stderr in any case, for a machine without a browser.
 *
 * @example
 * ```ts
 * import { openInBrowser } from "./mcp_login.ts";
 * let said = "";
 * await openInBrowser(new URL("https://auth.example.com/authorize"), () => "/no/such/browser", (text) => said += text);
 * if (!said.includes("https://auth.example.com/authorize")) throw new Error(said);
 * ```
 */
export async function openInBrowser(
  url: URL,
  env: (name: string) => string | undefined,
  err: (text: string) => void,
): Promise<void> {
  if (!webAddress(url)) throw new Error(`not a web page to log in at: ${url.protocol}`);
  err(`agent: to log in, open this address in your browser:\n  ${url.href}\n`);
  const opener = env("BROWSER") ||
    (Deno.build.os === "darwin" ? "open" : Deno.build.os === "windows" ? undefined : "xdg-open");
  if (!opener) return;
  if (Deno.permissions.querySync({ name: "run", command: opener }).state !== "granted") return;
  try {
    const child = new Deno.Command(opener, {
      args: [url.href],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    // The browser may outlive the login; its exit code says nothing of the login.
    child.status.catch(() => {});
    child.unref();
  } catch {
    // No browser here: the address printed above is the way.
  }
  await Promise.resolve();
}
