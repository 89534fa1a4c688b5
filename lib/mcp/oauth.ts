/**
 * OAuth 2.1 for MCP servers over HTTP, on the MCP SDK's client auth (discovery of the protected
 * resource's and the authorization server's metadata, dynamic client registration, PKCE, the
 * `resource` parameter, scopes from `WWW-Authenticate`, token refresh): the SDK runs the flow
 * through an `OAuthClientProvider`, and this module is ours — where what a login leaves is kept
 * and who may start a login.
 *
 * What a login leaves (the registered client, the tokens, the discovered metadata) is kept per
 * user and per server URL in the user's data directory, one file each, readable by the user
 * alone (0600 in a 0700 directory), written whole and atomically: never in a project, a session
 * or a log. A run that finds no token, or one that cannot be refreshed, does not start a login
 * on its own unless it can open a browser for its user (the terminal session, `agent mcp login`):
 * headless runs, the service and the protocol servers say how to log in instead.
 *
 * @module
 */

import type {
  OAuthClientProvider,
  OAuthDiscoveryState,
} from "@modelcontextprotocol/sdk/client/auth";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth";
import { join } from "node:path";
import { writePrivateFile } from "../files/private_files.ts";
import { loadLazy } from "../lazy/load.ts";

/** What a login left for one server URL. */
export interface McpCredentials {
  /** The server's URL, as configured. */
  url: string;
  /** The client the authorization server registered (or the configured one). */
  client?: OAuthClientInformationMixed;
  /** The tokens. */
  tokens?: OAuthTokens;
  /** When the access token expires, ms since the epoch (from `expires_in`), when known. */
  expiresAt?: number;
  /** The PKCE verifier of a login going on. */
  verifier?: string;
  /** What discovery found, so that a refresh needs no discovery again. */
  discovery?: OAuthDiscoveryState;
  /**
   * The scopes the server asked for when a run could not log in (more access than the login
   * gave, or a login that expired): the next login asks for them too.
   */
  scope?: string;
}

/** Where logins are kept: one private file per server URL. */
export interface McpCredentialStore {
  /** The file of a server URL. */
  fileOf(url: string): string;
  /** What is kept for `url`, if anything. */
  load(url: string): McpCredentials | undefined;
  /** Keeps `credentials` (whole, replacing what was kept). */
  save(credentials: McpCredentials): void;
  /** Forgets `url` (logout); whether anything was kept. */
  remove(url: string): boolean;
}

/**
 * The credential store in `dir` (e.g. `<data dir>/mcp-oauth`), made the user's alone.
 *
 * @example
 * ```ts
 * import { credentialStore } from "./oauth.ts";
 * const dir = await Deno.makeTempDir();
 * const store = credentialStore(`${dir}/mcp-oauth`);
 * store.save({ url: "https://mcp.example.com/mcp", tokens: { access_token: "a", token_type: "Bearer" } });
 * if (store.load("https://mcp.example.com/mcp")?.tokens?.access_token !== "a") throw new Error();
 * if (Deno.build.os !== "windows" && (Deno.statSync(store.fileOf("https://mcp.example.com/mcp")).mode! & 0o777) !== 0o600) {
 *   throw new Error("not private");
 * }
 * if (!store.remove("https://mcp.example.com/mcp") || store.load("https://mcp.example.com/mcp")) throw new Error();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function credentialStore(dir: string): McpCredentialStore {
  const fileOf = (url: string) => join(dir, `${_digest(url)}.json`);
  return {
    fileOf,
    load(url) {
      let text: string;
      try {
        text = Deno.readTextFileSync(fileOf(url));
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return undefined;
        throw error;
      }
      try {
        const kept = JSON.parse(text) as McpCredentials;
        // A file of another URL under this name is no login for this one.
        return kept && kept.url === url ? kept : undefined;
      } catch {
        return undefined; // cut off by a crash: as if never kept
      }
    },
    save(credentials) {
      writePrivateFile(fileOf(credentials.url), JSON.stringify(credentials));
    },
    remove(url) {
      try {
        Deno.removeSync(fileOf(url));
        return true;
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return false;
        throw error;
      }
    },
  };
}

/** A server that needs its user to log in, and a run that cannot open a browser for it. */
export class McpLoginRequired extends Error {
  /** The server's name in the configuration. */
  readonly server: string;
  /** The scopes the server asks for, when it said. */
  readonly scope?: string;

  /**
   * The error for `server`, saying how to log in; `again` when a login was kept (it expired, or
   * the server asks for more access than it gave).
   */
  constructor(server: string, scope?: string, again = false) {
    super(
      `the MCP server "${server}" needs you to log in${again ? " again" : ""} (OAuth` +
        `${scope ? `, for access to "${scope}"` : ""}): run \`agent mcp login ${server}\`, ` +
        `then start the agent again`,
    );
    this.server = server;
    if (scope) this.scope = scope;
  }
}

/**
 * The SDK's `OAuthClientProvider`, and what this package adds to it: where a server's asking for
 * more access is kept for the next login.
 */
export interface McpOAuthProvider extends OAuthClientProvider {
  /**
   * Keeps the scopes a server asked for (a 403 `insufficient_scope`) that a run could not log in
   * for: the next login (`agent mcp login`) asks for them too.
   */
  askedFor?(scope: string): void;
}

/**
 * `scope` as OAuth writes scopes (RFC 6749: printable ASCII tokens without `"` or `\\`, one space
 * between them), at most 1,000 characters; undefined when it is none, or not that: a server's
 * words go into messages on the user's terminal, and never with control characters.
 *
 * @example
 * ```ts
 * import { scopeOf } from "./oauth.ts";
 * if (scopeOf("repo read:user") !== "repo read:user") throw new Error();
 * if (scopeOf("repo\u001b[2Jx") !== undefined) throw new Error("an escape went through");
 * ```
 */
export function scopeOf(scope: string | null | undefined): string | undefined {
  if (!scope || scope.length > 1_000) return undefined;
  return /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/.test(scope) ? scope : undefined;
}

/**
 * Whether `url` is a web page a browser may be sent to for a login: `https:`, or `http:` on
 * this machine (a local authorization server).
 *
 * @example
 * ```ts
 * import { webAddress } from "./oauth.ts";
 * if (!webAddress(new URL("https://auth.example.com/authorize"))) throw new Error();
 * if (!webAddress(new URL("http://127.0.0.1:8080/authorize"))) throw new Error();
 * if (webAddress(new URL("file:///tmp/x.command")) || webAddress(new URL("http://example.com/a"))) {
 *   throw new Error("not a login page");
 * }
 * ```
 */
export function webAddress(url: URL): boolean {
  if (url.protocol === "https:") return true;
  return url.protocol === "http:" &&
    ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
}

/** Options of {@link oauthProvider}. */
export interface OAuthProviderOptions {
  /** The server's name in the configuration (for messages). */
  server: string;
  /** The server's URL. */
  url: string;
  /** Where logins are kept. */
  store: McpCredentialStore;
  /**
   * The client registered ahead of time, from the configuration, if any. A `client_id` that is an
   * HTTPS URL (with a path) and no secret names the client's metadata document instead (a client
   * ID metadata document): it is the client's id where the authorization server supports such
   * documents, and a client is registered where it does not.
   */
  client?: { client_id: string; client_secret?: string };
  /** Scopes to ask for, from the configuration, if any. */
  scope?: string;
  /**
   * `client_credentials`: the client itself logs in with its secret (machine use), at every
   * start; its tokens live in memory only. Default: a person logs in (`authorization_code`).
   */
  grant?: "authorization_code" | "client_credentials";
  /**
   * The loopback URL the authorization server sends the user back to, and what to do with the
   * authorization URL (open a browser, print it). Absent: nobody can log in here, and a login
   * needed throws {@link McpLoginRequired}.
   */
  login?: { redirectUrl: string; open(url: URL): void | Promise<void> };
}

/**
 * The SDK's `OAuthClientProvider` for one server: its client and tokens from the store, a new
 * registration or tokens saved there, and a login started only where {@link
 * OAuthProviderOptions.login} says how.
 *
 * @example
 * ```ts
 * import { credentialStore, McpLoginRequired, oauthProvider } from "./oauth.ts";
 * const dir = await Deno.makeTempDir();
 * const provider = oauthProvider({
 *   server: "linear",
 *   url: "https://mcp.example.com/mcp",
 *   store: credentialStore(dir),
 * });
 * let refused = false;
 * try {
 *   await provider.redirectToAuthorization(new URL("https://auth.example.com/authorize"));
 * } catch (error) {
 *   refused = error instanceof McpLoginRequired;
 * }
 * await Deno.remove(dir, { recursive: true });
 * if (!refused) throw new Error("a headless run started a login");
 * ```
 */
export function oauthProvider(options: OAuthProviderOptions): McpOAuthProvider {
  if (options.grant === "client_credentials") return _machineProvider(options);
  const { store, url } = options;
  const documented = _metadataDocument(options.client);
  const configured = documented ? undefined : options.client;
  const kept = () => store.load(url) ?? { url };
  const update = (change: Partial<McpCredentials>) => store.save({ ...kept(), ...change, url });
  const metadata: OAuthClientMetadata = {
    client_name: "@x/agent",
    redirect_uris: options.login ? [options.login.redirectUrl] : [],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: configured?.client_secret ? "client_secret_post" : "none",
    ...(options.scope ? { scope: options.scope } : {}),
  };
  // A run that cannot log in still goes by the authorization-code flow (a provider without a
  // redirect URL is taken for client credentials): its redirect URL is one nobody is sent to.
  const redirectUrl = options.login?.redirectUrl ?? _NOWHERE;
  return {
    get redirectUrl() {
      return redirectUrl;
    },
    get clientMetadata() {
      return metadata;
    },
    ...(documented ? { clientMetadataUrl: documented } : {}),
    clientInformation() {
      if (configured) return configured;
      const client = kept().client;
      if (!options.login) {
        // No client registered from a run that could not use it: the login registers one.
        if (!client) throw new McpLoginRequired(options.server);
        return client;
      }
      // A client registered for another loopback port is registered again for this one.
      const uris = (client as { redirect_uris?: string[] } | undefined)?.redirect_uris;
      return uris && !uris.includes(redirectUrl) ? undefined : client;
    },
    saveClientInformation: (client) => update({ client }),
    tokens: () => kept().tokens,
    saveTokens: (tokens) =>
      update({
        tokens,
        expiresAt: tokens.expires_in ? Date.now() + tokens.expires_in * 1000 : undefined,
      }),
    askedFor(scope) {
      if (kept().scope !== scope) update({ scope });
    },
    async redirectToAuthorization(authorizationUrl) {
      if (!options.login) {
        // The next login asks for what the server asked for here.
        const scope = scopeOf(authorizationUrl.searchParams.get("scope"));
        const { tokens, scope: before } = kept();
        if (scope && scope !== before) update({ scope });
        throw new McpLoginRequired(options.server, scope, tokens !== undefined);
      }
      // Only a web page is opened: the metadata names the address, and a `file:` or another
      // scheme's handler is no login page.
      if (!webAddress(authorizationUrl)) {
        throw new Error(
          `the authorization server of "${options.server}" gave a login address that is not a ` +
            `web page (${authorizationUrl.protocol}); it is not opened`,
        );
      }
      await options.login.open(authorizationUrl);
    },
    saveCodeVerifier: (verifier) => update({ verifier }),
    codeVerifier() {
      const verifier = kept().verifier;
      if (!verifier) throw new Error(`No login to ${options.server} is going on`);
      return verifier;
    },
    saveDiscoveryState: (discovery) => update({ discovery }),
    discoveryState: () => kept().discovery,
    invalidateCredentials(scope) {
      if (scope === "all") store.remove(url);
      else if (scope === "client") update({ client: undefined, tokens: undefined });
      else if (scope === "tokens") update({ tokens: undefined, expiresAt: undefined });
      else if (scope === "verifier") update({ verifier: undefined });
      else if (scope === "discovery") update({ discovery: undefined });
    },
  };
}

/**
 * What an MCP server answers an `initialize` sent without a token (with `headers`, when it is
 * configured with some): a 401 with `WWW-Authenticate` when it asks for a login. Undefined when it
 * cannot be reached. The body is not read.
 *
 * @example
 * ```ts
 * import { initializeAnswer } from "./oauth.ts";
 * const answer = await initializeAnswer("http://127.0.0.1:9/mcp");
 * if (answer !== undefined) throw new Error("nothing listens there");
 * ```
 */
export async function initializeAnswer(
  url: string,
  headers: Record<string, string> = {},
): Promise<Response | undefined> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: {
        ...headers,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "@x/agent", version: "0" },
        },
      }),
      signal: AbortSignal.timeout(10_000),
    });
    await response.body?.cancel();
    return response;
  } catch {
    return undefined;
  }
}

/** The client-credentials grant: no person, no redirect, tokens kept in memory. */
function _machineProvider(options: OAuthProviderOptions): OAuthClientProvider {
  const client = options.client;
  if (!client?.client_secret) {
    throw new Error(`the MCP server "${options.server}": client_credentials needs a client secret`);
  }
  let tokens: OAuthTokens | undefined;
  return {
    get redirectUrl() {
      return undefined;
    },
    get clientMetadata() {
      return {
        client_name: "@x/agent",
        redirect_uris: [],
        grant_types: ["client_credentials"],
        token_endpoint_auth_method: "client_secret_basic",
        ...(options.scope ? { scope: options.scope } : {}),
      };
    },
    clientInformation: () => client,
    tokens: () => tokens,
    saveTokens: (given) => void (tokens = given),
    redirectToAuthorization() {
      throw new Error(`the MCP server "${options.server}" logs in with client credentials only`);
    },
    saveCodeVerifier() {},
    codeVerifier() {
      throw new Error(`the MCP server "${options.server}" logs in with client credentials only`);
    },
    prepareTokenRequest(scope) {
      const params = new URLSearchParams({ grant_type: "client_credentials" });
      const asked = scope ?? options.scope;
      if (asked) params.set("scope", asked);
      return params;
    },
  };
}

/**
 * The URL of the client's metadata document that `client` names (an HTTPS `client_id` with a
 * path, and no secret), if it names one.
 */
function _metadataDocument(client: OAuthProviderOptions["client"]): string | undefined {
  if (!client || client.client_secret !== undefined) return undefined;
  try {
    const url = new URL(client.client_id);
    return url.protocol === "https:" && url.pathname !== "/" ? client.client_id : undefined;
  } catch {
    return undefined;
  }
}

/** The redirect URL of a provider that never sends anyone to log in. */
const _NOWHERE = "http://127.0.0.1/callback";

/** A short, stable name for a URL: the file name of its credentials. */
function _digest(url: string): string {
  // FNV-1a over the URL, twice with different seeds: a name, not a secret.
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < url.length; i++) {
    const c = url.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x5bd1e995) >>> 0;
  }
  return `${a.toString(16).padStart(8, "0")}${b.toString(16).padStart(8, "0")}`;
}

/** Options of {@link loginMcpServer}. */
export interface LoginOptions {
  /** The server's name in the configuration. */
  server: string;
  /** Its URL. */
  url: string;
  /** Where the login is kept. */
  store: McpCredentialStore;
  /** Opens the authorization URL for the user (a browser), or says it. */
  open(url: URL): void | Promise<void>;
  /** The client registered ahead of time, from the configuration, if any. */
  client?: { client_id: string; client_secret?: string };
  /**
   * Scopes to ask for: the configuration's, or those a server asked for during a session. Those
   * a run that could not log in was asked for are asked for too.
   */
  scope?: string;
  /**
   * Logs in afresh even when the tokens kept could be refreshed: the server asked for more
   * access than they give (a 403 `insufficient_scope`), which a refresh does not add.
   */
  renew?: boolean;
  /** Stops waiting for the user. */
  signal?: AbortSignal;
  /** How long to wait for the user, in ms (default 5 minutes). */
  timeoutMs?: number;
}

/**
 * Logs in to an MCP server over OAuth: discovers its authorization server, registers a client
 * (unless one is configured), opens the authorization URL for the user, takes the code at a
 * loopback redirect (`http://127.0.0.1:<port>/callback`, the `state` checked), trades it for
 * tokens with the PKCE verifier, and keeps them. Resolves to `"logged in"`, or `"already"` when
 * the tokens kept still work or could be refreshed.
 */
export async function loginMcpServer(options: LoginOptions): Promise<"logged in" | "already"> {
  const { auth, extractWWWAuthenticateParams } = await loadLazy("mcp_sdk");
  const state = crypto.randomUUID();
  const callback = Promise.withResolvers<string>();
  const listener = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const url = new URL(request.url);
    if (url.pathname !== "/callback") return new Response("Not found", { status: 404 });
    const error = url.searchParams.get("error");
    if (url.searchParams.get("state") !== state) {
      return new Response("This login is not the one the agent started.", { status: 400 });
    }
    if (error) {
      // An error code as OAuth writes them, or none: its words reach the user's terminal.
      const said = /^[\x20\x21\x23-\x5b\x5d-\x7e]{1,100}$/.test(error) ? error : "an error";
      callback.reject(new Error(`the authorization server said: ${said}`));
      return new Response(`The login failed: ${said}. You can close this page.`);
    }
    const code = url.searchParams.get("code");
    if (!code) return new Response("No code in the redirect.", { status: 400 });
    callback.resolve(code);
    return new Response("Logged in. You can close this page and go back to the agent.");
  });
  const redirectUrl = `http://127.0.0.1:${listener.addr.port}/callback`;
  const asking = options.store.load(options.url)?.scope;
  const wanted = _scopes(options.scope, asking);
  const provider = oauthProvider({
    server: options.server,
    url: options.url,
    store: options.store,
    client: options.client,
    scope: wanted,
    login: { redirectUrl, open: options.open },
  });
  provider.state = () => state;
  // For more access than the tokens kept give (asked for now, or of a run that could not log
  // in), they are neither used nor refreshed: the login's own replace them.
  if (options.renew || asking) provider.tokens = () => undefined;
  // One deadline for the whole login (discovery, registration, the user, the tokens), which the
  // caller's signal ends too; every request of the flow is cut off by it.
  const stop = new AbortController();
  const timer = setTimeout(
    () => stop.abort(new Error("nobody logged in within the time given")),
    options.timeoutMs ?? 300_000,
  );
  const onAbort = () => stop.abort(options.signal!.reason);
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  stop.signal.addEventListener("abort", () => callback.reject(stop.signal.reason), { once: true });
  callback.promise.catch(() => {}); // rejected before it is awaited, when the login ends early
  const fetchFn = (url: string | URL, init?: RequestInit) =>
    fetch(url, {
      ...init,
      signal: init?.signal ? AbortSignal.any([init.signal, stop.signal]) : stop.signal,
    });
  /** `step`, ended by the deadline with its reason. */
  const bounded = <T>(step: Promise<T>): Promise<T> =>
    Promise.race([step, callback.promise.then(() => step)]);
  try {
    stop.signal.throwIfAborted();
    // What the server says when asked without a token: where its metadata is, which scopes.
    const answer = await bounded(initializeAnswer(options.url));
    const asked: { resourceMetadataUrl?: URL; scope?: string } = answer?.status === 401
      ? extractWWWAuthenticateParams(answer)
      : {};
    const flow = {
      serverUrl: options.url,
      fetchFn,
      ...(asked.resourceMetadataUrl ? { resourceMetadataUrl: asked.resourceMetadataUrl } : {}),
      // Asked for in the flow: the SDK would prefer the resource's `scopes_supported` to the
      // client's own scope.
      ...(wanted ?? asked.scope ? { scope: wanted ?? asked.scope } : {}),
    };
    const first = await bounded(auth(provider, flow));
    if (first === "AUTHORIZED") return "already";
    const code = await callback.promise;
    const second = await bounded(auth(provider, { ...flow, authorizationCode: code }));
    if (second !== "AUTHORIZED") throw new Error("the authorization server gave no tokens");
    options.store.save({
      ...options.store.load(options.url)!,
      verifier: undefined,
      scope: undefined,
    });
    return "logged in";
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
    await listener.shutdown();
  }
}

/** The scopes of `lists` together (space-separated, each once), or undefined when none. */
function _scopes(...lists: (string | undefined)[]): string | undefined {
  const scopes = new Set(lists.flatMap((list) => list?.split(" ").filter(Boolean) ?? []));
  return scopes.size > 0 ? [...scopes].join(" ") : undefined;
}
