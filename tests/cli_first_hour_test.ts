/**
 * What a first-time user meets in their first hour with the CLI: session titles that are what
 * they wrote, one short line for a server that answers with a web page, the cost shown whatever
 * the flags and without float noise, counts that agree with their nouns, and a warning that says
 * which Deno grant is missing.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { Agent, ProviderError } from "../mod.ts";
import { anthropicModel, openaiModel } from "../lib/providers/mod.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { httpError } from "../lib/providers/http_errors.ts";
import { collect, eventsOf, FAST_RETRY } from "./run_support.ts";
import { type CliRun, runCli as runCliAs, tempDir } from "./terminal_support.ts";

/** Runs the CLI with a key for openai, in `cwd`, with `permissions` (default -A). */
function runCli(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string; permissions?: string[] } = {},
): Promise<CliRun> {
  return runCliAs(args, { ...options, env: { OPENAI_API_KEY: "sk-test", ...options.env } });
}

/** The page Python's `http.server` answers a POST with. */
const PYTHON_501_PAGE = `<!DOCTYPE HTML>
<html lang="en">
    <head>
        <meta charset="utf-8">
        <title>Error response</title>
    </head>
    <body>
        <h1>Error response</h1>
        <p>Error code: 501</p>
        <p>Message: Unsupported method ('POST').</p>
        <p>Error code explanation: 501 - Server does not support this operation.</p>
    </body>
</html>
`;

/** A server that is not an LLM API: it answers every request with `status` and `body`. */
function notAnApi(status: number, body: string, type: string) {
  let requests = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
    requests++;
    return new Response(body, { status, headers: { "content-type": type } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/v1`,
    requests: () => requests,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

Deno.test("cli first hour: --sessions titles each session with the user's first message, not the memories offered", async () => {
  await using server = startMockOpenAIServer({
    replies: [
      { text: "The staging database is db7.internal on port 6543." },
      { text: "It is db7.internal:6543, as found earlier." },
    ],
  });
  const cwd = await tempDir();
  const env = { OPENAI_BASE_URL: server.url, AGENT_DATA_DIR: await tempDir("agent_data_") };
  const first = await runCli(["-m", "openai/test", "Where is the staging database?"], { cwd, env });
  assert.equal(first.code, 0, first.stderr);
  const second = await runCli(["-m", "openai/test", "Remind me: staging database host?"], {
    cwd,
    env,
  });
  assert.equal(second.code, 0, second.stderr);
  assert.match(
    JSON.stringify(server.requests[1].body.messages),
    /\[Memories from earlier work that may help\]/,
    "the second run was offered memories",
  );

  const listed = await runCli(["--sessions"], { cwd, env });
  assert.equal(listed.code, 0, listed.stderr);
  const titles = listed.stdout.trim().split("\n").map((line) => line.split("  ").at(-1));
  assert.deepEqual(titles.sort(), [
    "Remind me: staging database host?",
    "Where is the staging database?",
  ]);
});

Deno.test("cli first hour: a 501 web page from a wrong base URL is one short line, not retried", async () => {
  await using server = notAnApi(501, PYTHON_501_PAGE, "text/html;charset=utf-8");
  const run = await runCli(["-m", "openai/test", "--no-session", "--base-url", server.url, "hi"]);
  assert.equal(run.code, 1, run.stderr);
  assert.equal(server.requests(), 1, "501 is not retried");
  assert.doesNotMatch(run.stderr, /retry/);
  assert.doesNotMatch(run.stderr, /<!DOCTYPE|<html|<title>/i);
  const lines = run.stderr.trim().split("\n");
  assert.equal(lines.length, 1, run.stderr);
  assert.ok(lines[0].length <= 300, lines[0]);
  assert.match(lines[0], /openai failed with 501\b.*Error response/);
  // The URL called may be named, and its port may hold the same digits.
  const said = lines[0].replaceAll(server.url.replace(/\/$/, ""), "<url>");
  assert.equal(said.match(/501/g)?.length, 1, `the status once: ${lines[0]}`);
});

Deno.test("cli first hour: a plain-text 404 says its status once", async () => {
  await using server = notAnApi(404, "404 page not found\n", "text/plain; charset=utf-8");
  const run = await runCli(["-m", "openai/test", "--no-session", "--base-url", server.url, "hi"]);
  assert.equal(run.code, 1, run.stderr);
  assert.equal(server.requests(), 1);
  assert.match(run.stderr, /openai answered 404 \(page not found\) for model "test"/);
  // The URL called is named, and its port may hold the same digits.
  const said = run.stderr.replaceAll(server.url.replace(/\/$/, ""), "<url>");
  assert.equal(said.match(/404/g)?.length, 1, run.stderr);
});

/** The page nginx answers when what it fronts is down. */
const NGINX_502_PAGE = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n" +
  "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

Deno.test("providers: a web page from a server fault is retried, and said by its title", async () => {
  await using server = notAnApi(502, NGINX_502_PAGE, "text/html");
  for (
    const model of [
      openaiModel({ model: "m", baseURL: server.url, apiKey: "k" }),
      anthropicModel({ model: "m", baseURL: server.url, apiKey: "k" }),
    ]
  ) {
    const agent = new Agent({ model, retry: { ...FAST_RETRY, maxRetries: 1 } });
    const { events, result } = await collect(agent.stream("Hi"));
    assert.equal(result.status, "error");
    assert.equal(eventsOf(events, "retry").length, 1, "502 is retried");
    assert.equal(
      result.error?.message,
      `${model.provider} failed with 502: Bad Gateway (a web page, not the API's answer: ` +
        "check the base URL)",
    );
  }
});

Deno.test("providers: a long plain-text body is cut to its first line, at most 200 characters", () => {
  const error = httpError({
    provider: "openai",
    status: 500,
    message: "",
    body: `500 ${"x".repeat(1_000)}\nand more`,
  });
  assert.equal(error.message, `openai failed with 500: ${"x".repeat(199)}…`);
});

Deno.test("providers: waiting mends rate limits and most server faults, not 501 or 505", () => {
  const retryable = (status: number) => {
    const error = httpError({ provider: "p", status, message: "m" });
    return error instanceof ProviderError && error.retryable;
  };
  for (const status of [408, 409, 429, 500, 502, 503, 504, 529]) {
    assert.ok(retryable(status), `${status} is retried`);
  }
  for (const status of [400, 501, 505]) assert.ok(!retryable(status), `${status} is not`);
});

Deno.test("cli first hour: -v keeps the cost, in the text summary and the json result", async () => {
  await using server = startMockOpenAIServer({
    replies: () => ({ text: "42", usage: { prompt_tokens: 167, completion_tokens: 50 } }),
  });
  const env = { OPENAI_BASE_URL: server.url };
  const json = await runCli(["-m", "openai/gpt-4.1-mini", "-v", "--output", "json", "hi"], { env });
  assert.equal(json.code, 0, json.stderr);
  assert.ok(JSON.parse(json.stdout).costUsd > 0, json.stdout);
  const text = await runCli(["-m", "openai/gpt-4.1-mini", "-v", "hi"], { env });
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stderr, /· \$0\.0001/);
});

Deno.test("cli first hour: the json cost carries no float noise", async () => {
  // 167 in and 50 out at $0.4 and $1.6 a million: 0.00014680000000000002 in floats.
  await using server = startMockOpenAIServer({
    replies: () => ({ text: "42", usage: { prompt_tokens: 167, completion_tokens: 50 } }),
  });
  const run = await runCli(["-m", "openai/gpt-4.1-mini", "--output", "json", "hi"], {
    env: { OPENAI_BASE_URL: server.url },
  });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /"costUsd":0\.0001468,/);
});

Deno.test("cli first hour: --sessions says 1 message for a session of one", async () => {
  await using server = notAnApi(501, PYTHON_501_PAGE, "text/html");
  const cwd = await tempDir();
  const env = { AGENT_DATA_DIR: await tempDir("agent_data_") };
  const failed = await runCli(
    ["-m", "openai/test", "--no-memory", "--base-url", server.url, "hello there"],
    { cwd, env },
  );
  assert.equal(failed.code, 1, failed.stderr);
  const listed = await runCli(["--sessions"], { cwd, env });
  assert.ok(listed.stdout.endsWith("  1 message  openai/test  hello there\n"), listed.stdout);
});

Deno.test("cli first hour: -v counts one tool as 1 tool", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ text: "42" }) });
  const run = await runCli(
    ["-m", "openai/test", "-v", "--no-session", "--no-memory", "--tools", "read", "hi"],
    { env: { OPENAI_BASE_URL: server.url } },
  );
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /\[request 1\] openai\/test: 1 message, 1 tool, /);
});

Deno.test("cli first hour: with HOME set but not granted, the sessions warning names the missing grant", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ text: "fine" }) });
  const cwd = await tempDir();
  const narrow = {
    cwd,
    env: { OPENAI_BASE_URL: server.url },
    permissions: [
      `--allow-read=${cwd}`,
      "--allow-net=127.0.0.1",
      "--allow-env=OPENAI_API_KEY,OPENAI_BASE_URL",
    ],
  };
  const run = await runCli(["-m", "openai/test", "hi"], narrow);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, "fine\n");
  assert.doesNotMatch(run.stderr, /no data directory/);
  assert.match(
    run.stderr,
    /sessions are not saved: Deno does not grant reading HOME: add --allow-env=HOME \(or --allow-env\), or set AGENT_DATA_DIR and grant it/,
  );
  const again = await runCli(["-m", "openai/test", "-c", "and again"], narrow);
  assert.notEqual(again.code, 0);
  assert.match(again.stderr, /No data directory for sessions: Deno does not grant reading HOME/);
});
