/**
 * The MCP client under the official conformance suite (`npm:@modelcontextprotocol/conformance`):
 * the program the suite runs as `--command`, with the test server's URL as the last argument and
 * the scenario in `MCP_CONFORMANCE_SCENARIO`. It does what each scenario asks of a client through
 * this package's own client, `connectMcpServers`, and a run of the agent whose scripted model calls
 * the server's tool, so that the call goes the whole way a model's call goes. It exits 0 when the
 * client did what it should (its last line then `nothing failed: <scenario>`), 1 with the reason
 * on stderr when not, 2 for a scenario it does not play.
 *
 * @module
 */

import { runAgent } from "../mod.ts";
import { connectMcpServers, type McpLoginRequest } from "../lib/mcp/mod.ts";
import { scriptedModel } from "../lib/testing/mod.ts";
import { credentialStore, loginMcpServer, oauthProvider } from "../lib/mcp/oauth.ts";

/** The word on stderr when the process outlives its closed connection. */
const LINGERING = "lingering";

/** What a scenario asks of the client: connect, and maybe call one tool and read its answer. */
interface Play {
  /** The server's tool to call (none: connecting and listing the tools is the whole scenario). */
  tool?: string;
  /** Its arguments. */
  input?: Record<string, unknown>;
  /** What its result must say. */
  expect?: RegExp;
  /** Whether a person accepts the server's form as it comes (its defaults). */
  acceptForms?: boolean;
}

/** The client scenarios played, by the suite's name for them. */
const PLAYS: Record<string, Play> = {
  // The handshake (initialize, initialized) and the listing of the tools.
  initialize: {},
  // A stateless server (no session, 404 on the GET stream) with a tool of two numbers.
  tools_call: { tool: "add_numbers", input: { a: 2, b: 3 }, expect: /^The sum of 2 and 3 is 5$/ },
  // The call's SSE stream closes before its answer: the answer comes on the GET stream opened
  // again after the stream's `retry` delay, with `Last-Event-ID`.
  "sse-retry": {
    tool: "test_reconnection",
    input: {},
    expect: /^Reconnection test completed successfully$/,
  },
  // The tool asks for a form with a default for each field; accepted as it comes, the answer
  // carries every default.
  "elicitation-sep1034-client-defaults": {
    tool: "test_client_elicitation_defaults",
    input: {},
    expect: /^Elicitation completed: .*"name":"John Doe"/,
    acceptForms: true,
  },
  // Listing needs one scope, the call two: the call's 403 `insufficient_scope` asks for both,
  // and the person logs in again for them.
  "auth/scope-step-up": { tool: "test-tool", input: {}, expect: /^test$/ },
};

/**
 * The client's metadata document (a URL as its id) of a scenario where the authorization server
 * takes such documents, as a user's configuration would name it.
 */
const DOCUMENTS: Record<string, string> = {
  "auth/basic-cimd": "https://conformance-test.local/client-metadata.json",
};

/**
 * The OAuth scenarios played: the server asks for a login, which a person gives in the browser
 * (the authorization server says yes at once), or the machine gives with its client's secret.
 */
const AUTH_PLAYS: Record<string, "login" | "machine"> = {
  "auth/metadata-default": "login",
  "auth/metadata-var1": "login",
  "auth/metadata-var2": "login",
  "auth/metadata-var3": "login",
  "auth/basic-cimd": "login",
  "auth/scope-step-up": "login",
  // The server refuses every request for more access, whatever the login: the client stops
  // after one more login instead of looping.
  "auth/scope-retry-limit": "login",
  "auth/scope-from-scopes-supported": "login",
  "auth/scope-omitted-when-undefined": "login",
  "auth/token-endpoint-auth-none": "login",
  "auth/token-endpoint-auth-basic": "login",
  "auth/token-endpoint-auth-post": "login",
  "auth/scope-from-www-authenticate": "login",
  "auth/pre-registration": "login",
  "auth/2025-03-26-oauth-metadata-backcompat": "login",
  "auth/2025-03-26-oauth-endpoint-fallback": "login",
  "auth/resource-mismatch": "login",
  "auth/offline-access-scope": "login",
  "auth/offline-access-not-supported": "login",
  "auth/client-credentials-basic": "machine",
};

const scenario = Deno.env.get("MCP_CONFORMANCE_SCENARIO") ?? "";
const url = Deno.args.at(-1);
const auth = Object.hasOwn(AUTH_PLAYS, scenario) ? AUTH_PLAYS[scenario] : undefined;
const play = Object.hasOwn(PLAYS, scenario) ? PLAYS[scenario] : auth ? {} : undefined;
const document = Object.hasOwn(DOCUMENTS, scenario) ? DOCUMENTS[scenario] : undefined;
if (!play || !url) {
  console.error(
    !url
      ? "usage: mcp_conformance_client.ts <server-url> (with MCP_CONFORMANCE_SCENARIO set)"
      : `scenario not played: ${JSON.stringify(scenario)} (played: ${
        Object.keys(PLAYS).join(", ")
      })`,
  );
  Deno.exit(2);
}

const failures: string[] = [];
{
  const oauth = auth ? await _oauth(auth, url) : undefined;
  await using mcp = await connectMcpServers(
    { mcpServers: { s: { type: "http", url } } },
    {
      oauth: oauth?.provider,
      login: oauth?.login,
      startupTimeoutMs: 10_000,
      callTimeoutMs: 10_000,
      onWarning: (m) => failures.push(m),
      onElicitation: play.acceptForms
        ? () => Promise.resolve({ action: "accept", content: {} })
        : undefined,
    },
  );
  const [status] = mcp.servers();
  if (status.state !== "connected") failures.push(`not connected: ${JSON.stringify(status)}`);
  else if (play.tool) {
    const name = `mcp__s__${play.tool}`;
    if (!mcp.tools.some((tool) => tool.name === name)) {
      failures.push(`no tool ${name} among ${JSON.stringify(status.tools)}`);
    } else {
      const model = scriptedModel([
        { toolCalls: [{ name, input: play.input ?? {} }] },
        { text: "Done." },
      ]);
      let output: string | undefined;
      let isError = false;
      const run = runAgent({ model, tools: mcp.tools, input: `Call ${play.tool}` });
      let next = await run.next();
      while (!next.done) {
        const event = next.value;
        if (event.type === "tool_result") ({ output, isError } = event);
        next = await run.next();
      }
      if (next.value.status !== "success") failures.push(`run ended ${next.value.status}`);
      if (output === undefined) failures.push("no tool result");
      else if (isError || !play.expect?.test(output)) {
        failures.push(`unexpected tool result${isError ? " (isError)" : ""}: ${output}`);
      }
    }
  }
  console.log(`${scenario}: ${JSON.stringify(mcp.servers())}`);
}
if (failures.length > 0) {
  console.error(failures.join("\n"));
  Deno.exit(1);
}
// The suite's `--suite` runs judge only its checks, not this exit code: this line says it too.
console.log(`nothing failed: ${scenario}`);
// The connection is closed, so nothing of it should keep the process alive; if something does
// (the suite waits for the process, and its server for the process's open streams), say so and
// end, with the code of MCP_CONFORMANCE_LINGER_EXIT (default 0: the suite judges the protocol).
Deno.unrefTimer(setTimeout(() => {
  console.error(`${LINGERING}: the process did not end within 2 s of closing the connection`);
  Deno.exit(Number(Deno.env.get("MCP_CONFORMANCE_LINGER_EXIT") ?? 0));
}, 2_000));

/**
 * The OAuth of a scenario: a person logs in first (the browser follows the authorization server's
 * redirect to the loopback callback), with the client the scenario registered ahead of time if it
 * gives one (`MCP_CONFORMANCE_CONTEXT`), and again when a server asks during the session, as the
 * terminal session does; or the machine logs in with its secret.
 */
async function _oauth(kind: "login" | "machine", server: string) {
  const context = JSON.parse(Deno.env.get("MCP_CONFORMANCE_CONTEXT") ?? "{}");
  const client = context.client_id
    ? { client_id: context.client_id as string, client_secret: context.client_secret as string }
    : document
    ? { client_id: document }
    : undefined;
  const store = credentialStore(await Deno.makeTempDir({ prefix: "conformance_oauth_" }));
  const browse = async (at: URL) => {
    const authorized = await fetch(at, { redirect: "manual" });
    await authorized.body?.cancel();
    const back = authorized.headers.get("location");
    if (!back) throw new Error(`no redirect from ${at}: ${authorized.status}`);
    await (await fetch(back)).body?.cancel();
  };
  if (kind === "login") {
    await loginMcpServer({
      server: "s",
      url: server,
      store,
      client,
      timeoutMs: 10_000,
      open: browse,
    });
  }
  return {
    provider: (name: string, at: string) =>
      oauthProvider({
        server: name,
        url: at,
        store,
        client,
        grant: kind === "machine" ? "client_credentials" : undefined,
      }),
    login: kind === "login"
      ? async (name: string, asked: McpLoginRequest) => {
        await loginMcpServer({
          server: name,
          url: asked.url,
          store,
          client,
          scope: asked.scope,
          renew: true,
          signal: asked.signal,
          timeoutMs: 10_000,
          open: browse,
        });
      }
      : undefined,
  };
}
