import "./isolated_env.ts";
import assert from "node:assert/strict";
import { runToolCall } from "../lib/tool_runner.ts";
import type { Tool, ToolOutput } from "../mod.ts";
import { toolRegistry } from "../lib/tool.ts";
import { createWebSearchTool, webSearchFromEnv } from "../tools/web_search.ts";

interface SeenRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Headers;
  body: string;
}

interface StandIn extends AsyncDisposable {
  url: string;
  requests: SeenRequest[];
}

/** A loopback stand-in for a search API: records each request and answers with `reply`. */
function startStandIn(reply: (request: SeenRequest) => Response): StandIn {
  const requests: SeenRequest[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const url = new URL(request.url);
      const seen = {
        method: request.method,
        path: url.pathname,
        query: url.searchParams,
        headers: request.headers,
        body: await request.text(),
      };
      requests.push(seen);
      return reply(seen);
    },
  );
  const { port } = server.addr as Deno.NetAddr;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

async function search(tool: Tool, input: unknown): Promise<ToolOutput> {
  const checked = tool.parse!(input);
  assert.ok(checked.success);
  const result = await tool.execute(checked.data, {
    cwd: ".",
    signal: new AbortController().signal,
    toolCallId: "s1",
  });
  assert.ok(typeof result !== "string");
  return result;
}

const tavilyReply = () =>
  Response.json({
    query: "deno sqlite",
    answer: "Deno ships node:sqlite.",
    results: [
      {
        title: "node:sqlite | Deno Docs",
        url: "https://docs.deno.com/api/node/sqlite/",
        content: "The node:sqlite module gives access to SQLite databases.",
        score: 0.91,
        raw_content: null,
      },
      {
        title: "SQLite in Deno",
        url: "https://example.com/sqlite",
        content: "A tutorial.",
        score: 0.52,
        raw_content: null,
      },
    ],
    response_time: "1.2",
  });

Deno.test("createWebSearchTool() calls the Tavily API and lists the results", async () => {
  await using api = startStandIn(tavilyReply);
  const tool = createWebSearchTool({ provider: "tavily", apiKey: "tvly-key", baseURL: api.url });
  const result = await search(tool, { query: "deno sqlite", max_results: 2 });

  assert.equal(api.requests.length, 1);
  const [request] = api.requests;
  assert.equal(request.method, "POST");
  assert.equal(request.path, "/search");
  assert.equal(request.headers.get("authorization"), "Bearer tvly-key");
  assert.equal(request.headers.get("content-type"), "application/json");
  assert.deepEqual(JSON.parse(request.body), {
    query: "deno sqlite",
    max_results: 2,
    search_depth: "basic",
  });

  assert.equal(
    result.output,
    "Answer: Deno ships node:sqlite.\n\n" +
      "1. node:sqlite | Deno Docs\n   https://docs.deno.com/api/node/sqlite/\n" +
      "   The node:sqlite module gives access to SQLite databases.\n\n" +
      "2. SQLite in Deno\n   https://example.com/sqlite\n   A tutorial.",
  );
  assert.equal(result.display, 'Searched "deno sqlite": 2 results (Tavily)');
  assert.deepEqual(result.metadata, {
    provider: "tavily",
    results: [
      { title: "node:sqlite | Deno Docs", url: "https://docs.deno.com/api/node/sqlite/" },
      { title: "SQLite in Deno", url: "https://example.com/sqlite" },
    ],
  });
});

Deno.test("createWebSearchTool() calls the Brave Search API and lists the results", async () => {
  await using api = startStandIn(() =>
    Response.json({
      type: "search",
      query: { original: "deno & node" },
      web: {
        type: "search",
        results: [
          {
            title: "Deno vs <strong>Node</strong>",
            url: "https://example.com/deno-node",
            description: "Compare <strong>Deno</strong> &amp; Node.js &#x2014; runtimes.",
            age: "2 days ago",
          },
        ],
      },
    })
  );
  const tool = createWebSearchTool({
    provider: "brave",
    apiKey: "brave-key",
    baseURL: `${api.url}/`,
    maxResults: 3,
  });
  const result = await search(tool, { query: "deno & node" });

  const [request] = api.requests;
  assert.equal(request.method, "GET");
  assert.equal(request.path, "/res/v1/web/search");
  assert.equal(request.query.get("q"), "deno & node");
  assert.equal(request.query.get("count"), "3");
  assert.equal(request.headers.get("x-subscription-token"), "brave-key");
  assert.equal(request.headers.get("accept"), "application/json");
  assert.equal(request.body, "");

  assert.equal(
    result.output,
    "1. Deno vs Node\n   https://example.com/deno-node\n   Compare Deno & Node.js — runtimes.",
  );
  assert.equal(result.display, 'Searched "deno & node": 1 result (Brave Search)');
});

Deno.test("createWebSearchTool() says when nothing was found", async () => {
  await using api = startStandIn(() => Response.json({ web: { results: [] } }));
  const tool = createWebSearchTool({ provider: "brave", apiKey: "k", baseURL: api.url });
  const result = await search(tool, { query: "zzqqxx" });
  assert.equal(result.output, 'No results for "zzqqxx". Try other words.');
  assert.equal(result.isError, undefined);
});

Deno.test("createWebSearchTool() names the env var when the key is refused", async () => {
  await using api = startStandIn(() =>
    Response.json({ detail: { error: "Unauthorized: missing or invalid API key." } }, {
      status: 401,
    })
  );
  for (const provider of ["tavily", "brave"] as const) {
    const tool = createWebSearchTool({ provider, apiKey: "bad", baseURL: api.url });
    const result = await runToolCall(
      { type: "tool_call", id: "c1", name: "web_search", input: { query: "x" } },
      toolRegistry([tool]),
      { cwd: ".", signal: new AbortController().signal },
    );
    assert.equal(result.isError, true);
    const keyVar = provider === "tavily" ? "TAVILY_API_KEY" : "BRAVE_API_KEY";
    assert.match(result.output, /^Error: .* refused the API key \(HTTP 401\): .*Unauthorized/);
    assert.ok(result.output.endsWith(`Check ${keyVar}.`), result.output);
  }
});

Deno.test("createWebSearchTool() reports rate limiting", async () => {
  await using api = startStandIn(() =>
    new Response("slow down", { status: 429, headers: { "retry-after": "7" } })
  );
  const tool = createWebSearchTool({ provider: "tavily", apiKey: "k", baseURL: api.url });
  await assert.rejects(
    () => search(tool, { query: "x" }),
    /^Error: Tavily rate limited the search \(HTTP 429\); retry after 7 s\. Wait before searching again\.$/,
  );
});

Deno.test("createWebSearchTool() checks its input", () => {
  const tool = createWebSearchTool({ provider: "tavily", apiKey: "k" });
  assert.equal(tool.parse!({ query: "  " }).success, false);
  assert.equal(tool.parse!({ query: "x", max_results: 21 }).success, false);
  assert.deepEqual(tool.capabilities, ["net"]);
  assert.throws(
    () => createWebSearchTool({ provider: "brave", apiKey: "" }),
    /No API key for Brave Search: set BRAVE_API_KEY/,
  );
});

Deno.test("webSearchFromEnv() prefers Tavily, falls back to Brave, and needs a key", async () => {
  await using tavily = startStandIn(tavilyReply);
  await using brave = startStandIn(() => Response.json({ web: { results: [] } }));
  const vars: Record<string, string> = {
    TAVILY_API_KEY: "tvly-env",
    TAVILY_BASE_URL: tavily.url,
    BRAVE_API_KEY: "brave-env",
    BRAVE_BASE_URL: brave.url,
  };
  const both = webSearchFromEnv((name) => vars[name]);
  assert.ok(both);
  await search(both, { query: "q" });
  assert.equal(tavily.requests.length, 1);
  assert.equal(tavily.requests[0].headers.get("authorization"), "Bearer tvly-env");
  assert.equal(brave.requests.length, 0);

  delete vars.TAVILY_API_KEY;
  const onlyBrave = webSearchFromEnv((name) => vars[name]);
  assert.ok(onlyBrave);
  await search(onlyBrave, { query: "q" });
  assert.equal(brave.requests.length, 1);
  assert.equal(brave.requests[0].headers.get("x-subscription-token"), "brave-env");

  assert.equal(webSearchFromEnv(() => undefined), undefined);
  assert.equal(webSearchFromEnv((name) => name === "TAVILY_API_KEY" ? "" : undefined), undefined);
});
