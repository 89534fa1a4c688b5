import "./isolated_env.ts";
import assert from "node:assert/strict";
import { parseRule } from "../lib/permissions/mod.ts";
import { runToolCall } from "../lib/tool_runner.ts";
import type { ToolOutput } from "../mod.ts";
import { toolRegistry } from "../lib/tool.ts";
import { permissionPolicy } from "../lib/permissions/policy.ts";
import { createFetchTool, type FetchToolOptions } from "../tools/fetch.ts";

interface TestServer extends AsyncDisposable {
  url: string;
  /** Bytes the endless route produced before the client stopped reading. */
  endlessBytes: () => number;
  /** Whether the client cancelled the endless body. */
  endlessCancelled: () => boolean;
}

function startServer(): TestServer {
  let endlessBytes = 0;
  let endlessCancelled = false;
  const hanging = Promise.withResolvers<void>();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const { pathname } = new URL(request.url);
      switch (pathname) {
        case "/page":
          return new Response(
            `<!doctype html><html><head><title>The &amp; Page</title>
            <style>body { color: red }</style><script>alert("x")</script></head>
            <body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
            <h1>Welcome</h1><p>Some <b>bold</b> text and a <a href="/doc">link</a>.</p>
            <script>trackVisitor()</script></body></html>`,
            { headers: { "content-type": "text/html; charset=utf-8" } },
          );
        case "/data":
          return new Response('{"name":"agent","tags":["a","b"]}', {
            headers: { "content-type": "application/json" },
          });
        case "/notes.txt":
          return new Response("plain *text*\n  kept as is\n", {
            headers: { "content-type": "text/plain" },
          });
        case "/missing":
          return new Response("<html><body><h1>Not here</h1></body></html>", {
            status: 404,
            headers: { "content-type": "text/html" },
          });
        case "/old":
          return new Response(null, { status: 302, headers: { location: "/notes.txt" } });
        case "/image.png":
          return new Response(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), {
            headers: { "content-type": "image/png" },
          });
        case "/agent":
          return new Response(request.headers.get("user-agent"), {
            headers: { "content-type": "text/plain" },
          });
        case "/endless": {
          const chunk = new TextEncoder().encode("x".repeat(16_384));
          const body = new ReadableStream<Uint8Array>({
            pull(controller) {
              // Bounded so that a client that reads everything ends instead of hanging.
              if (endlessBytes >= 64_000_000) return controller.close();
              endlessBytes += chunk.length;
              controller.enqueue(chunk);
            },
            cancel() {
              endlessCancelled = true;
            },
          });
          return new Response(body, { headers: { "content-type": "text/plain" } });
        }
        case "/to": {
          // Redirects to the URL in `?url=`, with the status in `?status=` (default 302).
          const params = new URL(request.url).searchParams;
          const status = Number(params.get("status") ?? 302);
          return new Response(null, { status, headers: { location: params.get("url")! } });
        }
        case "/loop":
          return new Response(null, { status: 301, headers: { location: "/loop" } });
        case "/hang":
          await hanging.promise;
          return new Response("too late");
        default:
          return new Response("no route", { status: 500 });
      }
    },
  );
  const { port } = server.addr as Deno.NetAddr;
  return {
    url: `http://127.0.0.1:${port}`,
    endlessBytes: () => endlessBytes,
    endlessCancelled: () => endlessCancelled,
    async [Symbol.asyncDispose]() {
      hanging.resolve();
      await server.shutdown();
    },
  };
}

async function get(url: string, options: FetchToolOptions = {}): Promise<ToolOutput> {
  const tool = createFetchTool(options);
  const checked = tool.parse!({ url });
  assert.ok(checked.success);
  const result = await tool.execute(checked.data, {
    cwd: ".",
    signal: new AbortController().signal,
    toolCallId: "f1",
  });
  assert.ok(typeof result !== "string");
  return result;
}

Deno.test("createFetchTool() turns HTML into markdown with the title and without scripts", async () => {
  await using server = startServer();
  const result = await get(`${server.url}/page`);
  assert.equal(result.isError, undefined);
  assert.ok(result.output.startsWith(`URL: ${server.url}/page\nStatus: 200 OK\n`));
  assert.match(result.output, /^Content-Type: text\/html$/m);
  assert.match(result.output, /^Title: The & Page$/m);
  assert.match(result.output, /# Welcome\n\nSome \*\*bold\*\* text and a \[link\]\(\/doc\)\./);
  for (const noise of ["alert", "trackVisitor", "color: red", "About"]) {
    assert.ok(!result.output.includes(noise), `no "${noise}" in the output`);
  }
  assert.equal(result.metadata?.title, "The & Page");
  assert.match(result.display ?? "", /^GET .*\/page → 200 OK, text\/html, /);
});

Deno.test("createFetchTool() pretty-prints JSON and keeps plain text as is", async () => {
  await using server = startServer();
  const json = await get(`${server.url}/data`);
  assert.ok(
    json.output.endsWith('\n\n{\n  "name": "agent",\n  "tags": [\n    "a",\n    "b"\n  ]\n}'),
  );
  const text = await get(`${server.url}/notes.txt`);
  assert.equal(
    text.output,
    `URL: ${server.url}/notes.txt\nStatus: 200 OK\nContent-Type: text/plain\n\n` +
      "plain *text*\n  kept as is\n",
  );
});

Deno.test("createFetchTool() gives a 404 as an error result with the status", async () => {
  await using server = startServer();
  const result = await get(`${server.url}/missing`);
  assert.equal(result.isError, true);
  assert.equal(result.output, `Error: HTTP 404 Not Found from ${server.url}/missing\n\n# Not here`);
  assert.equal(result.metadata?.status, 404);
});

Deno.test("createFetchTool() follows redirects and shows the final URL", async () => {
  await using server = startServer();
  const result = await get(`${server.url}/old`);
  assert.ok(
    result.output.startsWith(
      `URL: ${server.url}/notes.txt (redirected from ${server.url}/old)\nStatus: 200 OK\n`,
    ),
  );
  assert.ok(result.output.endsWith("kept as is\n"));
  assert.equal(result.metadata?.finalUrl, `${server.url}/notes.txt`);
});

Deno.test("createFetchTool() stops reading a huge body at the byte cap", async () => {
  await using server = startServer();
  const result = await get(`${server.url}/endless`, { maxBytes: 100_000 });
  assert.match(
    result.output,
    /Note: the body is larger than 100 kB; only its first 100 kB were read/,
  );
  assert.equal(result.metadata?.bytes, 100_000);
  assert.equal(result.metadata?.truncated, true);
  // Cut by the default output limit, keeping head and tail.
  assert.match(result.output, /characters cut/);
  // The body was not read to its end: socket buffers let the server run a few MB ahead at most.
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(server.endlessBytes() < 16_000_000, `server produced ${server.endlessBytes()} bytes`);
  assert.ok(server.endlessCancelled(), "the body stream was cancelled");
});

Deno.test("createFetchTool() times out on a server that never answers", async () => {
  await using server = startServer();
  const started = performance.now();
  const tool = createFetchTool({ timeoutMs: 200 });
  const result = await runToolCall(
    { type: "tool_call", id: "c1", name: "fetch", input: { url: `${server.url}/hang` } },
    toolRegistry([tool]),
    { cwd: ".", signal: new AbortController().signal },
  );
  assert.ok(performance.now() - started < 2_000);
  assert.equal(result.isError, true);
  assert.equal(
    result.output,
    `Error: Timed out after 0.2 s getting ${server.url}/hang: the server did not answer in ` +
      "time. Try again later or try another URL.",
  );
});

Deno.test("createFetchTool() refuses binary content types", async () => {
  await using server = startServer();
  await assert.rejects(
    () => get(`${server.url}/image.png`),
    /\/image\.png is image\/png, not text: this tool reads only HTML, JSON and text/,
  );
});

Deno.test("createFetchTool() refuses URLs that are not http or https", async () => {
  await assert.rejects(() => get("file:///etc/passwd"), /Only http and https URLs.*not file/);
  await assert.rejects(() => get("ftp://example.com/x"), /not ftp/);
  await assert.rejects(() => get("not a url"), /"not a url" is not a valid URL/);
});

Deno.test("createFetchTool() sends a User-Agent and uses the fetch it is given", async () => {
  await using server = startServer();
  const result = await get(`${server.url}/agent`);
  assert.match(result.output, /\n\nMozilla\/5\.0 \(compatible; x-agent-fetch/);
  const seen: string[] = [];
  const swapped = await get("https://example.com/x", {
    fetch: (input) => {
      seen.push(String(input));
      return Promise.resolve(new Response("hi", { headers: { "content-type": "text/plain" } }));
    },
  });
  assert.deepEqual(seen, ["https://example.com/x"]);
  assert.ok(swapped.output.endsWith("\n\nhi"));
});

Deno.test("createFetchTool() explains a connection failure", async () => {
  // A port that was free a moment ago: nothing listens there.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  await assert.rejects(
    () => get(`http://127.0.0.1:${port}/`),
    new RegExp(`Could not get http://127\\.0\\.0\\.1:${port}/: .*Check the URL and try again\\.`),
  );
});

/** A server that counts the requests it gets: the host a redirect must not reach. */
function startTarget(): { port: number; hits: () => number } & AsyncDisposable {
  let hits = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
    hits++;
    return new Response("reached", { headers: { "content-type": "text/plain" } });
  });
  return {
    port: server.addr.port,
    hits: () => hits,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** Runs the fetch tool as the loop does, with the checks of a policy of these deny rules. */
async function fetchRuled(url: string, ...deny: string[]): Promise<[string, boolean]> {
  const policy = permissionPolicy({
    rules: deny.map((text) => parseRule(text, "deny", "--deny")),
    mode: () => "default",
    roots: ["."],
  });
  const result = await runToolCall(
    { type: "tool_call", id: "f1", name: "fetch", input: { url } },
    toolRegistry([createFetchTool()]),
    { cwd: ".", signal: new AbortController().signal, checks: policy.checks },
  );
  return [result.output, result.isError];
}

Deno.test("fetch checks every redirect hop: a hop to a denied host is not requested", async () => {
  await using server = startServer();
  await using target = startTarget();
  const hops = [
    [`http://localhost:${target.port}/secret`, "domain:localhost"],
    [`http://LOCALHOST.:${target.port}/secret`, "domain:localhost"],
    [`http://user@localhost:${target.port}/secret`, "domain:localhost"],
    [`http://0x7f.1:${target.port}/secret`, "domain:127.0.0.1"],
    [`http://2130706433:${target.port}/secret`, "domain:127.0.0.1"],
  ];
  for (const [hop, domain] of hops) {
    const start = `${server.url}/to?url=${encodeURIComponent(hop)}`;
    // The first URL's own host (127.0.0.1) is what the rule names in the last two: only hops
    // are checked here, as the call itself was decided before the tool ran.
    const [output, isError] = await fetchRuled(start, `fetch(${domain})`);
    assert.equal(isError, true, output);
    assert.match(output, /^Error: http:\/\/127\.0\.0\.1:\d+\/to\?url=\S+ redirected to /);
    assert.match(output, /which was not followed: permission denied: reaching /);
    assert.ok(output.endsWith(`is denied by --deny "fetch(${domain})"`), output);
  }
  assert.equal(target.hits(), 0, "a denied hop was requested");
  // Every status that redirects is checked; a hop the rules leave alone is followed.
  for (const status of [301, 303, 307, 308]) {
    const hop = `http://localhost:${target.port}/x`;
    const start = `${server.url}/to?status=${status}&url=${encodeURIComponent(hop)}`;
    assert.equal((await fetchRuled(start, "fetch(domain:localhost)"))[1], true, `${status}`);
  }
  assert.equal(target.hits(), 0);
  const open = `${server.url}/to?url=${encodeURIComponent(`http://localhost:${target.port}/x`)}`;
  const [output, isError] = await fetchRuled(open, "fetch(domain:evil.io)");
  assert.equal(isError, false, output);
  assert.match(output, /redirected from .*\n[\s\S]*\nreached$/);
  assert.equal(target.hits(), 1);
});

Deno.test("fetch stops at a redirect loop, and at a redirect to another scheme", async () => {
  await using server = startServer();
  const [loop, loopError] = await fetchRuled(`${server.url}/loop`);
  assert.equal(loopError, true);
  assert.match(loop, /redirected more than 10 times .*; not followed further/);
  const file = `${server.url}/to?url=${encodeURIComponent("file:///etc/passwd")}`;
  const [scheme, schemeError] = await fetchRuled(file);
  assert.equal(schemeError, true);
  assert.match(scheme, /redirected to file:\/\/\/etc\/passwd, which is not http or https/);
});
