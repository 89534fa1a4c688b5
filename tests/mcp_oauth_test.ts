/**
 * OAuth for MCP servers over HTTP, against a protected server and its authorization server in
 * the test's own process (mcp_oauth_support.ts), through the MCP SDK's client: a login at a
 * loopback redirect kept for the user alone, the tokens used, refreshed when they expire, and a
 * run that cannot log in saying how to.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  credentialStore,
  loginMcpServer,
  McpLoginRequired,
  oauthProvider,
} from "../lib/mcp/oauth.ts";
import { startOAuthMcp } from "./mcp_oauth_support.ts";
import { connectMcpServers } from "../lib/mcp/mod.ts";
import { parseMcpConfig } from "../lib/mcp/config.ts";
import { runSecrets } from "../lib/cli/secrets.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { wireMessages } from "./openai_support.ts";
import { childEnv, MOD, runCli, Terminal } from "./terminal_support.ts";

/** A browser whose user says yes: follows the authorization URL to the loopback redirect. */
async function browser(url: URL): Promise<void> {
  const authorized = await fetch(url, { redirect: "manual" });
  await authorized.body?.cancel();
  const back = authorized.headers.get("location");
  if (!back) throw new Error(`no redirect from ${url}: ${authorized.status}`);
  const landed = await fetch(back);
  await landed.body?.cancel();
}

/**
 * In `root`: an MCP configuration naming the server `linear` at `url`, a `$BROWSER` that follows
 * the authorization server's redirect (tests/fake_browser.ts), and the environment of a CLI run
 * there (its own HOME and data directory, that browser, and `extra`).
 */
async function loginSetup<T extends Record<string, string>>(
  root: string,
  url: string,
  extra = {} as T,
): Promise<
  {
    config: string;
    opener: string;
    env: T & { HOME: string; AGENT_DATA_DIR: string; BROWSER: string };
  }
> {
  const config = join(root, "mcp.json");
  await Deno.writeTextFile(
    config,
    JSON.stringify({ mcpServers: { linear: { type: "http", url } } }),
  );
  const opener = join(root, "browser.sh");
  await Deno.writeTextFile(
    opener,
    `#!/bin/sh\nexec "${Deno.execPath()}" run -A "${
      fileURLToPath(new URL("./fake_browser.ts", import.meta.url))
    }" "$1"\n`,
  );
  await Deno.chmod(opener, 0o755);
  const env = {
    ...extra,
    HOME: join(root, "home"),
    AGENT_DATA_DIR: join(root, "data"),
    BROWSER: opener,
  };
  await Deno.mkdir(env.HOME, { recursive: true });
  return { config, opener, env };
}

async function connect(url: string, provider: ReturnType<typeof oauthProvider>) {
  const client = new Client({ name: "test", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  return client;
}

Deno.test("an OAuth MCP server: log in at a loopback redirect, use the tokens, refresh them silently", async () => {
  await using server = startOAuthMcp();
  const dir = await Deno.makeTempDir({ prefix: "agent_oauth_" });
  try {
    const store = credentialStore(join(dir, "mcp-oauth"));
    const opened: URL[] = [];
    const login = () =>
      loginMcpServer({
        server: "protected",
        url: server.url,
        store,
        open: (url) => (opened.push(url), browser(url)),
      });
    assert.equal(await login(), "logged in");
    assert.deepEqual(server.log.filter((entry) => entry !== "401"), [
      "register",
      "authorize",
      "token:authorization_code",
    ]);
    // PKCE and the resource went with the authorization request.
    const asked = opened[0].searchParams;
    assert.equal(asked.get("code_challenge_method"), "S256");
    assert.equal(asked.get("resource"), server.url);
    assert.match(asked.get("redirect_uri") ?? "", /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    // Kept for the user alone, with no verifier left.
    const file = store.fileOf(server.url);
    if (Deno.build.os !== "windows") {
      assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
      assert.equal((await Deno.stat(join(dir, "mcp-oauth"))).mode! & 0o777, 0o700);
    }
    const kept = store.load(server.url)!;
    assert.equal(kept.tokens?.access_token, server.accessTokens[0]);
    assert.equal(kept.verifier, undefined);

    // A run with no way to log in uses the tokens kept.
    const headless = () => oauthProvider({ server: "protected", url: server.url, store });
    const client = await connect(server.url, headless());
    const result = await client.callTool({ name: "whoami", arguments: {} });
    assert.deepEqual(result.content, [{ type: "text", text: "logged in" }]);
    await client.close();

    // Expired: refreshed without a word, and kept.
    server.expireTokens();
    const again = await connect(server.url, headless());
    await again.listTools();
    await again.close();
    assert.ok(server.log.includes("token:refresh_token"));
    assert.equal(store.load(server.url)?.tokens?.access_token, server.accessTokens.at(-1));
    assert.equal(await login(), "already");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an OAuth MCP server with no login kept: a run that cannot open a browser says how to log in", async () => {
  await using server = startOAuthMcp();
  const dir = await Deno.makeTempDir({ prefix: "agent_oauth_" });
  try {
    const store = credentialStore(join(dir, "mcp-oauth"));
    const provider = oauthProvider({ server: "linear", url: server.url, store });
    const refused = await connect(server.url, provider).then(() => undefined, (error) => error);
    assert.ok(refused instanceof McpLoginRequired, String(refused));
    assert.match(refused.message, /agent mcp login linear/);
    assert.ok(!server.log.includes("authorize"), "no login was started");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("connectMcpServers() uses the login kept for an OAuth server, and says how to log in when there is none", async () => {
  await using server = startOAuthMcp();
  const dir = await Deno.makeTempDir({ prefix: "agent_oauth_" });
  try {
    const store = credentialStore(join(dir, "mcp-oauth"));
    const config = { mcpServers: { linear: { type: "http" as const, url: server.url } } };
    const oauth = (name: string, url: string) => oauthProvider({ server: name, url, store });
    const warnings: string[] = [];
    {
      await using none = await connectMcpServers(config, {
        oauth,
        onWarning: (message) => warnings.push(message),
      });
      assert.equal(none.tools.length, 0);
      assert.match(warnings.join("\n"), /agent mcp login linear/);
    }
    await loginMcpServer({ server: "linear", url: server.url, store, open: browser });
    server.expireTokens(); // the next run refreshes them on its way
    await using mcp = await connectMcpServers(config, { oauth });
    const whoami = mcp.tools.find((tool) => tool.name === "mcp__linear__whoami")!;
    const result = await whoami.execute({}, {
      cwd: Deno.cwd(),
      toolCallId: "c1",
      signal: new AbortController().signal,
    });
    assert.match(typeof result === "string" ? result : result.output, /logged in/);
    assert.ok(server.log.includes("token:refresh_token"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("agent mcp login, a headless run with the login (its token refreshed on the way), agent mcp logout", async () => {
  await using server = startOAuthMcp();
  await using model = startMockOpenAIServer({
    replies: (_body, index) =>
      index % 2 === 0
        ? { toolCalls: [{ id: `w${index}`, name: "mcp__linear__whoami", arguments: {} }] }
        : { text: "Done." },
  });
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_oauth_cli_" }));
  try {
    const { config, env } = await loginSetup(root, server.url, {
      OPENAI_API_KEY: "sk-oauth-test",
      OPENAI_BASE_URL: model.url,
    });
    const login = await runCli(["mcp", "login", "linear", "--mcp-config", config], { env });
    assert.equal(login.code, 0, login.stderr);
    assert.match(login.stderr, /to log in, open this address/);
    assert.match(login.stderr, /logged in to linear/);
    const kept = credentialStore(join(env.AGENT_DATA_DIR, "mcp-oauth"));
    if (Deno.build.os !== "windows") {
      assert.equal((await Deno.stat(kept.fileOf(server.url))).mode! & 0o777, 0o600);
    }

    server.expireTokens();
    const run = await runCli(
      ["-p", "Who am I?", "-m", "openai/test", "--mcp-config", config, "--output", "json"],
      { env },
    );
    assert.equal(run.code, 0, run.stderr);
    const answered = wireMessages(model.requests[1]).find((m) => m.tool_call_id === "w0");
    assert.match(String(answered?.content), /logged in/);
    assert.ok(server.log.includes("token:refresh_token"), "refreshed on the way");
    assert.ok(!run.stderr.includes(server.accessTokens.at(-1)!), "no token in the log");

    const logout = await runCli(["mcp", "logout", "linear", "--mcp-config", config], { env });
    assert.equal(logout.code, 0);
    assert.equal(kept.load(server.url), undefined);
    const after = await runCli(
      ["-p", "Who am I?", "-m", "openai/test", "--mcp-config", config],
      { env },
    );
    assert.match(after.stderr, /agent mcp login linear/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a server configured with the client_credentials grant logs in as the machine, with its secret", async () => {
  await using server = startOAuthMcp();
  const store = credentialStore(await Deno.makeTempDir({ prefix: "agent_oauth_" }));
  const config = { mcpServers: { ci: { type: "http" as const, url: server.url } } };
  const connect = (secret: string, warnings: string[] = []) =>
    connectMcpServers(config, {
      oauth: (name, url) =>
        oauthProvider({
          server: name,
          url,
          store,
          grant: "client_credentials",
          client: { client_id: "machine", client_secret: secret },
        }),
      onWarning: (message) => warnings.push(message),
    });
  {
    await using mcp = await connect("machine-secret-0123456789");
    assert.deepEqual(mcp.tools.map((tool) => tool.name), ["mcp__ci__whoami", "mcp__ci__publish"]);
    assert.ok(server.log.includes("token:client_credentials"));
    assert.ok(!server.log.includes("authorize"), "nobody was sent to log in");
  }
  const warnings: string[] = [];
  await using refused = await connect("wrong-secret", warnings);
  assert.equal(refused.tools.length, 0);
  assert.match(warnings.join("\n"), /ci/);
});

Deno.test("an HTTP server's oauth block: its secret from the environment, redacted; the machine grant needs one", () => {
  const env = (name: string) => (name === "CI_MCP_SECRET" ? "ci-mcp-secret-value-42" : undefined);
  const { config } = parseMcpConfig({
    mcpServers: {
      ci: {
        type: "http",
        url: "https://mcp.example.com/mcp",
        oauth: {
          clientId: "machine",
          clientSecret: "${CI_MCP_SECRET}",
          grant: "client_credentials",
        },
      },
    },
  }, { env });
  const ci = config.mcpServers.ci;
  assert.ok("url" in ci);
  assert.deepEqual(ci.oauth, {
    clientId: "machine",
    clientSecret: "ci-mcp-secret-value-42",
    grant: "client_credentials",
  });
  assert.equal(runSecrets(env, {}, config)("secret ci-mcp-secret-value-42"), "secret [redacted]");
  assert.throws(
    () =>
      parseMcpConfig({
        mcpServers: {
          ci: {
            type: "http",
            url: "https://mcp.example.com/mcp",
            oauth: { clientId: "machine", grant: "client_credentials" },
          },
        },
      }),
    /client_credentials grant needs clientSecret/,
  );
});

Deno.test("the terminal session logs in to an OAuth server in the browser, uses its tool, logs in again for more access", async () => {
  await using server = startOAuthMcp();
  await using model = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ id: "w1", name: "mcp__linear__whoami", arguments: {} }] },
      { text: "You are logged in." },
      { toolCalls: [{ id: "p1", name: "mcp__linear__publish", arguments: {} }] },
      { text: "It is out." },
    ],
  });
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_oauth_tty_" }));
  try {
    const { config, opener } = await loginSetup(root, server.url);
    const env = await childEnv({
      OPENAI_API_KEY: "sk-oauth-test",
      OPENAI_BASE_URL: model.url,
      BROWSER: opener,
    });
    await using terminal = await Terminal.start(
      [Deno.execPath(), "run", "-A", MOD, "-m", "openai/test", "--mcp-config", config],
      env,
      root,
    );
    await terminal.waitFor(/asks you to log in/, 60_000);
    await terminal.waitFor(/\/help for commands/, 60_000);
    const screen = await terminal.screen();
    assert.match(screen, /logged in to "linear"/);
    assert.ok(server.log.includes("token:authorization_code"));
    // Kept for the next run, for the user alone.
    const kept = credentialStore(join(env.AGENT_DATA_DIR, "mcp-oauth"));
    assert.ok(kept.load(server.url)?.tokens?.access_token);
    await terminal.type("Who am I?");
    await terminal.keys("Enter");
    await terminal.waitFor(/whoami.*Allow\? \[y\]es/);
    await terminal.type("y");
    await terminal.keys("Enter");
    await terminal.waitFor(/You are logged in\./);
    const answered = wireMessages(model.requests[1]).find((m) => m.tool_call_id === "w1");
    assert.match(String(answered?.content), /logged in/);
    // A tool that needs more access than the login gave: the browser again, then the call.
    await terminal.type("Publish it");
    await terminal.keys("Enter");
    await terminal.waitFor(/publish.*Allow\? \[y\]es/);
    await terminal.type("y");
    await terminal.keys("Enter");
    await terminal.waitFor(/It is out\./);
    assert.match(
      await terminal.screen(),
      /asks you to log in again \(for access to "mcp mcp:write"\)/,
    );
    assert.equal(server.scopesAsked.at(-1), "mcp mcp:write");
    const published = wireMessages(model.requests[3]).find((m) => m.tool_call_id === "p1");
    assert.equal(String(published?.content), "published");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("an untrusted project's .mcp.json naming a server you logged in to gets neither your token nor a login", async () => {
  await using server = startOAuthMcp();
  await using model = startMockOpenAIServer({ replies: [{ text: "Hi." }] });
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_oauth_trust_" }));
  try {
    const env = {
      HOME: join(root, "home"),
      AGENT_DATA_DIR: join(root, "data"),
      OPENAI_API_KEY: "sk-oauth-test",
      OPENAI_BASE_URL: model.url,
    };
    await Deno.mkdir(env.HOME);
    // You logged in to it, for a configuration of your own.
    const store = credentialStore(join(env.AGENT_DATA_DIR, "mcp-oauth"));
    await loginMcpServer({ server: "linear", url: server.url, store, open: browser });
    const used = server.log.length;
    // A cloned repository names the same server.
    const project = join(root, "cloned");
    await Deno.mkdir(project);
    await Deno.writeTextFile(
      join(project, ".mcp.json"),
      JSON.stringify({ mcpServers: { linear: { type: "http", url: server.url } } }),
    );
    const run = await runCli(["-p", "Hello", "-m", "openai/test"], { env, cwd: project });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /not trusted/);
    assert.deepEqual(server.log.slice(used), [], "the server heard nothing from the run");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a call that needs more access than the login gave: the session logs in again for it, once", async () => {
  await using server = startOAuthMcp();
  const dir = await Deno.makeTempDir({ prefix: "agent_oauth_stepup_" });
  try {
    const store = credentialStore(join(dir, "mcp-oauth"));
    const config = { mcpServers: { linear: { type: "http" as const, url: server.url } } };
    await loginMcpServer({ server: "linear", url: server.url, store, open: browser });
    assert.deepEqual(server.scopesAsked, ["mcp"]);
    const asked: (string | undefined)[] = [];
    const connect = (grant: (scope?: string) => string | undefined) =>
      connectMcpServers(config, {
        oauth: (name, url) => oauthProvider({ server: name, url, store }),
        login: async (name, request) => {
          asked.push(request.scope);
          await loginMcpServer({
            server: name,
            url: request.url,
            store,
            open: browser,
            scope: grant(request.scope),
            renew: true,
            signal: request.signal,
          });
        },
      });
    const call = (mcp: Awaited<ReturnType<typeof connect>>) =>
      mcp.tools.find((tool) => tool.name === "mcp__linear__publish")!.execute({}, {
        cwd: Deno.cwd(),
        toolCallId: "c1",
        signal: new AbortController().signal,
      });
    {
      // A login that does not give what the server asks for: the call fails, saying so, after
      // one login (no loop).
      await using mcp = await connect(() => "mcp");
      await assert.rejects(
        async () => await call(mcp),
        /refuses even after you logged in again.*mcp:write/,
      );
      assert.deepEqual(asked, ["mcp mcp:write"]);
      assert.deepEqual(server.scopesAsked, ["mcp", "mcp"]);
      // Nor is the browser opened again in this session for the same access.
      await assert.rejects(async () => await call(mcp), /refuses even after/);
      assert.deepEqual(asked, ["mcp mcp:write"]);
    }
    asked.length = 0;
    // The SDK first refreshes the tokens (which keeps their scopes); the server refuses again,
    // and the person logs in for both scopes.
    await using mcp = await connect((scope) => scope);
    const result = await call(mcp);
    assert.match(typeof result === "string" ? result : result.output, /published/);
    assert.deepEqual(asked, ["mcp mcp:write"]);
    assert.deepEqual(server.scopesAsked, ["mcp", "mcp", "mcp mcp:write"]);
    assert.ok(server.log.includes("token:refresh_token"));
    // The new login is kept: the next call needs none.
    await call(mcp);
    assert.equal(asked.length, 1);
    assert.equal(store.load(server.url)?.scope, undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a headless run refused for want of access says how to log in; agent mcp login then asks for it", async () => {
  await using server = startOAuthMcp();
  await using model = startMockOpenAIServer({
    replies: (_body, index) =>
      index % 2 === 0
        ? { toolCalls: [{ id: `p${index}`, name: "mcp__linear__publish", arguments: {} }] }
        : { text: "Done." },
  });
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_oauth_more_" }));
  try {
    const { config, env } = await loginSetup(root, server.url, {
      OPENAI_API_KEY: "sk-oauth-test",
      OPENAI_BASE_URL: model.url,
    });
    const login = ["mcp", "login", "linear", "--mcp-config", config];
    assert.equal((await runCli(login, { env })).code, 0);
    const publish = ["-p", "Publish", "-m", "openai/test", "--mcp-config", config];
    const refused = await runCli(publish, { env });
    assert.equal(refused.code, 0, refused.stderr);
    const answer = wireMessages(model.requests[1]).find((m) => m.tool_call_id === "p0");
    assert.match(
      String(answer?.content),
      /log in again \(OAuth, for access to "mcp mcp:write"\): run `agent mcp login linear`/,
    );
    const kept = credentialStore(join(env.AGENT_DATA_DIR, "mcp-oauth"));
    assert.equal(kept.load(server.url)?.scope, "mcp mcp:write");

    // The tokens kept could be refreshed, but they would not give the access asked for.
    const again = await runCli(login, { env });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /logged in to linear/);
    assert.equal(server.scopesAsked.at(-1), "mcp mcp:write");
    const published = await runCli(publish, { env });
    assert.equal(published.code, 0, published.stderr);
    const done = wireMessages(model.requests[3]).find((m) => m.tool_call_id === "p2");
    assert.equal(String(done?.content), "published");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a login that cannot finish ends at its deadline or when aborted, and the program goes on", async () => {
  await using server = startOAuthMcp({ hangRegistration: true });
  const store = credentialStore(await Deno.makeTempDir({ prefix: "agent_oauth_hang_" }));
  const opened: URL[] = [];
  const open = (url: URL) => void opened.push(url);
  await assert.rejects(
    loginMcpServer({ server: "slow", url: server.url, store, open, timeoutMs: 800 }),
    /nobody logged in within the time given/,
  );
  const aborted = new AbortController();
  setTimeout(() => aborted.abort(new Error("aborted by the user")), 300);
  await assert.rejects(
    loginMcpServer({ server: "slow", url: server.url, store, open, signal: aborted.signal }),
    /aborted by the user/,
  );
  assert.equal(opened.length, 0);
});

Deno.test("a login address that is not a web page is never opened", async () => {
  await using server = startOAuthMcp({ authorizationEndpoint: "file:///tmp/payload.command" });
  const store = credentialStore(await Deno.makeTempDir({ prefix: "agent_oauth_scheme_" }));
  const opened: URL[] = [];
  await assert.rejects(
    loginMcpServer({
      server: "odd",
      url: server.url,
      store,
      open: (url) => void opened.push(url),
      timeoutMs: 5_000,
    }),
    /not a web page \(file:\); it is not opened/,
  );
  assert.deepEqual(opened, []);
});

Deno.test("what the authorization server says reaches the terminal without control characters", async () => {
  const escape = "\x1b]0;PWNED\x07\x1b[41mINJECTED\x1b[0m";
  {
    await using server = startOAuthMcp();
    const store = credentialStore(await Deno.makeTempDir({ prefix: "agent_oauth_esc_" }));
    // The browser comes back with the login's state and an error full of escapes.
    const error = await loginMcpServer({
      server: "esc",
      url: server.url,
      store,
      timeoutMs: 5_000,
      open: async (url) => {
        const back = new URL(url.searchParams.get("redirect_uri")!);
        back.searchParams.set("state", url.searchParams.get("state")!);
        back.searchParams.set("error", escape);
        await (await fetch(back)).body?.cancel();
      },
    }).then(() => undefined, (error: Error) => error);
    assert.match(String(error?.message), /the authorization server said: an error/);
  }
  await using server = startOAuthMcp({ tokenError: escape });
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_oauth_esc_cli_" }));
  try {
    const { config, env } = await loginSetup(root, server.url);
    const login = await runCli(["mcp", "login", "linear", "--mcp-config", config], { env });
    assert.equal(login.code, 1);
    assert.match(login.stderr, /The login to linear failed: .*INJECTED/);
    // deno-lint-ignore no-control-regex -- control characters are what it looks for
    assert.ok(!/[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(login.stderr), JSON.stringify(login.stderr));
    assert.doesNotMatch(login.stderr, /^\s+at /m, "no stack trace");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a server that refuses every call after a login gets one more login in the session, not one per call", async () => {
  await using server = startOAuthMcp({ refuseCalls: true });
  const store = credentialStore(await Deno.makeTempDir({ prefix: "agent_oauth_loop_" }));
  await loginMcpServer({ server: "linear", url: server.url, store, open: browser });
  let logins = 0;
  await using mcp = await connectMcpServers(
    { mcpServers: { linear: { type: "http", url: server.url } } },
    {
      oauth: (name, url) => oauthProvider({ server: name, url, store }),
      login: async (name, request) => {
        logins++;
        await loginMcpServer({ server: name, url: request.url, store, open: browser, renew: true });
      },
    },
  );
  const whoami = mcp.tools.find((tool) => tool.name === "mcp__linear__whoami")!;
  for (let i = 0; i < 3; i++) {
    await assert.rejects(
      async () =>
        await whoami.execute({}, {
          cwd: Deno.cwd(),
          toolCallId: `c${i}`,
          signal: new AbortController().signal,
        }),
      /refuses even after you logged in again/,
    );
  }
  assert.equal(logins, 1);
});

Deno.test("agent mcp logout <url> forgets a login whose server left the configuration", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_oauth_gone_" }));
  try {
    const env = { HOME: join(root, "home"), AGENT_DATA_DIR: join(root, "data") };
    await Deno.mkdir(env.HOME);
    const url = "https://mcp.example.com/mcp";
    const store = credentialStore(join(env.AGENT_DATA_DIR, "mcp-oauth"));
    store.save({ url, tokens: { access_token: "a", refresh_token: "r", token_type: "Bearer" } });
    const byName = await runCli(["mcp", "logout", "old"], { env, cwd: root });
    assert.equal(byName.code, 1);
    assert.match(byName.stderr, /logged out of by its URL/);
    const byUrl = await runCli(["mcp", "logout", url], { env, cwd: root });
    assert.equal(byUrl.code, 0, byUrl.stderr);
    assert.match(byUrl.stderr, /logged out of https:\/\/mcp\.example\.com\/mcp/);
    assert.equal(store.load(url), undefined);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
