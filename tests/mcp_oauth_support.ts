/**
 * An MCP server behind OAuth 2.1, in the test's own process, as remote servers are: the MCP
 * endpoint (the SDK's server side, stateless) answers 401 with `WWW-Authenticate` naming its
 * protected-resource metadata; an authorization server beside it publishes its metadata,
 * registers clients dynamically, authorizes at once (the user says yes), checks PKCE and the
 * `resource`, gives access tokens that expire when the test says and refresh tokens that trade
 * for new ones. Its tool `publish` needs the scope `mcp:write` besides `mcp`: a token without it
 * gets a 403 `insufficient_scope` asking for both (step-up), and a refresh keeps a token's scopes.
 *
 * @module
 */

// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";

/** The running servers. */
export interface OAuthMcp extends AsyncDisposable {
  /** The MCP endpoint. */
  url: string;
  /** Ends every access token given so far (they are refused from now on). */
  expireTokens(): void;
  /**
   * What happened, in order: `register`, `authorize`, `token:authorization_code`, `401` (a
   * request without a valid token), `mcp` (one with), …
   */
  log: string[];
  /** The access tokens given, in order. */
  accessTokens: string[];
  /** The scopes asked for at each authorization, in order. */
  scopesAsked: string[];
}

async function _s256(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return btoa(String.fromCharCode(...new Uint8Array(digest)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** How the servers misbehave, for the tests of a hostile or broken server. */
export interface OAuthMcpFaults {
  /** The authorization server's metadata names this as its authorization endpoint. */
  authorizationEndpoint?: string;
  /** Client registration never answers. */
  hangRegistration?: boolean;
  /** The token endpoint refuses every code with this `error_description`. */
  tokenError?: string;
  /** Every `tools/call` is refused with a 401, whatever the token. */
  refuseCalls?: boolean;
}

/** Starts them on a free loopback port. */
export function startOAuthMcp(faults: OAuthMcpFaults = {}): OAuthMcp {
  const log: string[] = [];
  const accessTokens: string[] = [];
  const scopesAsked: string[] = [];
  /** The live access tokens and refresh tokens, with the scopes each gives. */
  const live = new Map<string, string[]>();
  const refreshTokens = new Map<string, string[]>();
  const clients = new Map<string, { redirect_uris: string[] }>();
  /** A client registered ahead of time for machine use, and its secret. */
  const machine = { id: "machine", secret: "machine-secret-0123456789" };
  const codes = new Map<
    string,
    { challenge: string; redirect: string; resource?: string; scopes: string[] }
  >();
  let base = "";
  const issue = (scopes: string[]) => {
    const access = `at-${crypto.randomUUID()}`;
    const refresh = `rt-${crypto.randomUUID()}`;
    live.set(access, scopes);
    refreshTokens.set(refresh, scopes);
    accessTokens.push(access);
    return Response.json({
      access_token: access,
      token_type: "Bearer",
      expires_in: 3600,
      refresh_token: refresh,
    });
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const url = new URL(request.url);
    const path = url.pathname;
    if (path.startsWith("/.well-known/oauth-protected-resource")) {
      return Response.json({
        resource: `${base}/mcp`,
        authorization_servers: [base],
        scopes_supported: ["mcp"],
      });
    }
    if (path === "/.well-known/oauth-authorization-server") {
      return Response.json({
        issuer: base,
        authorization_endpoint: faults.authorizationEndpoint ?? `${base}/authorize`,
        token_endpoint: `${base}/token`,
        registration_endpoint: `${base}/register`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token", "client_credentials"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none", "client_secret_basic"],
      });
    }
    if (path === "/register" && faults.hangRegistration) {
      return await new Promise<Response>((resolve) =>
        request.signal.addEventListener("abort", () => resolve(new Response(null)))
      );
    }
    if (path === "/register" && request.method === "POST") {
      const body = await request.json();
      const id = `client-${crypto.randomUUID()}`;
      clients.set(id, { redirect_uris: body.redirect_uris });
      log.push("register");
      return Response.json({ ...body, client_id: id }, { status: 201 });
    }
    if (path === "/authorize") {
      const client = clients.get(url.searchParams.get("client_id") ?? "");
      const redirect = url.searchParams.get("redirect_uri") ?? "";
      if (!client || !client.redirect_uris.includes(redirect)) {
        return new Response("unknown client or redirect", { status: 400 });
      }
      if (url.searchParams.get("code_challenge_method") !== "S256") {
        return new Response("PKCE S256 is required", { status: 400 });
      }
      const code = `code-${crypto.randomUUID()}`;
      const scope = url.searchParams.get("scope") ?? "";
      scopesAsked.push(scope);
      codes.set(code, {
        challenge: url.searchParams.get("code_challenge") ?? "",
        redirect,
        resource: url.searchParams.get("resource") ?? undefined,
        scopes: scope.split(" ").filter(Boolean),
      });
      log.push("authorize");
      const back = new URL(redirect);
      back.searchParams.set("code", code);
      const state = url.searchParams.get("state");
      if (state) back.searchParams.set("state", state);
      return Response.redirect(back, 302);
    }
    if (path === "/token" && request.method === "POST") {
      const form = new URLSearchParams(await request.text());
      const grant = form.get("grant_type");
      log.push(`token:${grant}`);
      if (grant === "authorization_code" && faults.tokenError !== undefined) {
        return Response.json(
          { error: "invalid_grant", error_description: faults.tokenError },
          { status: 400 },
        );
      }
      if (grant === "authorization_code") {
        const given = codes.get(form.get("code") ?? "");
        codes.delete(form.get("code") ?? "");
        if (
          !given || given.redirect !== form.get("redirect_uri") ||
          given.challenge !== await _s256(form.get("code_verifier") ?? "") ||
          given.resource !== `${base}/mcp`
        ) {
          return Response.json({ error: "invalid_grant" }, { status: 400 });
        }
        return issue(given.scopes);
      }
      const refreshed = refreshTokens.get(form.get("refresh_token") ?? "");
      if (grant === "refresh_token" && refreshed) {
        refreshTokens.delete(form.get("refresh_token") ?? "");
        return issue(refreshed);
      }
      if (grant === "client_credentials") {
        const basic = request.headers.get("authorization") ?? "";
        if (basic !== `Basic ${btoa(`${machine.id}:${machine.secret}`)}`) {
          return Response.json({ error: "invalid_client" }, { status: 401 });
        }
        return issue(["mcp"]);
      }
      return Response.json({ error: "invalid_grant" }, { status: 400 });
    }
    if (path === "/mcp") {
      const token = request.headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
      if (!live.has(token)) {
        log.push("401");
        return new Response(JSON.stringify({ error: "invalid_token" }), {
          status: 401,
          headers: {
            "content-type": "application/json",
            "www-authenticate":
              `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
          },
        });
      }
      if (request.method !== "POST") {
        log.push("mcp");
        return new Response(null, { status: 405 });
      }
      const body = await request.clone().json();
      if (faults.refuseCalls && body?.method === "tools/call") {
        log.push("401");
        return new Response(JSON.stringify({ error: "invalid_token" }), {
          status: 401,
          headers: {
            "content-type": "application/json",
            "www-authenticate":
              `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
          },
        });
      }
      if (
        body?.method === "tools/call" && body.params?.name === "publish" &&
        !live.get(token)!.includes("mcp:write")
      ) {
        log.push("403");
        return new Response(JSON.stringify({ error: "insufficient_scope" }), {
          status: 403,
          headers: {
            "content-type": "application/json",
            "www-authenticate": `Bearer error="insufficient_scope", scope="mcp mcp:write", ` +
              `resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
          },
        });
      }
      log.push("mcp");
      const mcp = new McpServer({ name: "protected", version: "1.0.0" });
      mcp.registerTool(
        "whoami",
        {
          description: "Says the caller is logged in",
          inputSchema: { note: z.string().optional() },
        },
        () => ({ content: [{ type: "text", text: "logged in" }] }),
      );
      mcp.registerTool(
        "publish",
        { description: "Publishes (needs the scope mcp:write)", inputSchema: {} },
        () => ({ content: [{ type: "text", text: "published" }] }),
      );
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      await mcp.connect(transport);
      return await transport.handleRequest(request);
    }
    return new Response("not found", { status: 404 });
  });
  base = `http://127.0.0.1:${server.addr.port}`;
  return {
    url: `${base}/mcp`,
    expireTokens: () => live.clear(),
    log,
    accessTokens,
    scopesAsked,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}
