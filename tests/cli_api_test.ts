/**
 * Choosing the wire protocol through the real CLI: `--api`, the settings' `api` of a provider or
 * a model, and OpenAI's own API root, where the reasoning models speak Responses. A session
 * begun over one API goes on over the other and back, each API getting only its own data.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { resolveModel } from "../lib/providers/resolve.ts";
import {
  startMockAnthropicServer,
  startMockOpenAIServer,
  startMockResponsesServer,
} from "../lib/testing/mod.ts";
import { runCli, tempDir } from "./terminal_support.ts";

/** A place whose sessions and settings outlive one CLI run. */
async function place(): Promise<{ cwd: string; env: Record<string, string> }> {
  const cwd = await tempDir();
  const home = await Deno.makeTempDir({ prefix: "agent_home_" });
  return {
    cwd,
    env: {
      HOME: home,
      AGENT_DATA_DIR: await Deno.makeTempDir({ prefix: "agent_data_" }),
      AGENT_CONFIG_DIR: join(home, "config"),
      OPENAI_API_KEY: "sk-test",
    },
  };
}

function run(where: { cwd: string; env: Record<string, string> }, args: string[], url: string) {
  return runCli(["--cwd", where.cwd, "--sandbox", "off", "--output", "json", ...args], {
    cwd: where.cwd,
    env: { ...where.env, OPENAI_BASE_URL: url },
  });
}

/** The input items of a Responses request. */
function inputOf(body: Record<string, unknown>): Record<string, unknown>[] {
  return body.input as Record<string, unknown>[];
}

Deno.test("cli: --api openai-responses speaks Responses, and a session goes on over Chat Completions and back", async () => {
  const where = await place();
  await using responses = startMockResponsesServer({
    replies: (_body, index) => ({
      reasoning: [`Thinking ${index + 1}.`],
      text: `Responses answer ${index + 1}.`,
    }),
  });
  await using chat = startMockOpenAIServer({ replies: () => ({ text: "Chat answer." }) });

  const first = await run(
    where,
    ["-m", "openai/gpt-5", "--api", "openai-responses", "One"],
    responses.url,
  );
  assert.equal(first.code, 0, first.stderr);
  assert.equal(JSON.parse(first.stdout).text, "Responses answer 1.");
  assert.equal(responses.requests.length, 1);
  const sent = responses.requests[0].body;
  assert.equal(sent.store, false);
  assert.deepEqual(sent.include, ["reasoning.encrypted_content"]);
  assert.deepEqual(sent.reasoning, { summary: "auto" });

  // The same session over Chat Completions: the history goes, the Responses items do not.
  const second = await run(where, ["-c", "-m", "openai/gpt-5", "--api", "openai", "Two"], chat.url);
  assert.equal(second.code, 0, second.stderr);
  assert.equal(JSON.parse(second.stdout).text, "Chat answer.");
  const wire = JSON.stringify(chat.requests[0].body);
  assert.match(wire, /Responses answer 1\./);
  assert.doesNotMatch(wire, /encrypted_content|rs_|msg_/);

  // And back: the first answer's reasoning item goes back as it came, and the server accepts it.
  const third = await run(
    where,
    ["-c", "-m", "openai/gpt-5", "--api", "openai-responses", "Three"],
    responses.url,
  );
  assert.equal(third.code, 0, third.stderr);
  assert.equal(JSON.parse(third.stdout).text, "Responses answer 2.");
  const input = inputOf(responses.requests[1].body);
  const reasoning = input.filter((item) => item.type === "reasoning");
  assert.equal(reasoning.length, 1);
  assert.equal(typeof reasoning[0].encrypted_content, "string");
  const texts = JSON.stringify(input);
  for (const text of ["One", "Responses answer 1.", "Two", "Chat answer.", "Three"]) {
    assert.ok(texts.includes(text), `${text} is missing from ${texts}`);
  }

  // A session keeps its model, not the API: the hint to go on says it.
  const fourth = await runCli(
    ["--cwd", where.cwd, "--sandbox", "off", "-c", "--api", "openai-responses", "Four"],
    { cwd: where.cwd, env: { ...where.env, OPENAI_BASE_URL: responses.url } },
  );
  assert.equal(fourth.code, 0, fourth.stderr);
  assert.match(fourth.stderr, /go on with: deno run -A \S*mod\.ts --api openai-responses -c\)/);
});

Deno.test("cli: the settings choose the API of a provider or of one model; a bad --api is a usage error", async () => {
  const where = await place();
  await Deno.mkdir(where.env.AGENT_CONFIG_DIR, { recursive: true });
  await using responses = startMockResponsesServer({
    replies: () => ({ text: "From Responses." }),
  });
  await Deno.writeTextFile(
    join(where.env.AGENT_CONFIG_DIR, "settings.json"),
    JSON.stringify({
      providers: {
        azure: {
          api: "openai-responses",
          baseURL: responses.url,
          apiKeyEnv: "AZURE_KEY",
          reasoning: { effort: "high", summary: "auto" },
        },
      },
      models: {
        "openai/gpt-4.1": { api: "openai-responses" },
        "openai/my-reasoner": { api: "openai-responses", reasoning: {} },
      },
    }),
  );
  const byProvider = await runCli(
    ["--cwd", where.cwd, "--no-session", "--sandbox", "off", "-m", "azure/gpt-5", "hi"],
    { cwd: where.cwd, env: { ...where.env, AZURE_KEY: "az-test" } },
  );
  assert.equal(byProvider.code, 0, byProvider.stderr);
  assert.match(byProvider.stdout, /From Responses\./);
  assert.equal(responses.requests.at(-1)?.headers.get("authorization"), "Bearer az-test");
  // A deployment's name says nothing of reasoning: the provider's settings do.
  assert.deepEqual(responses.requests.at(-1)?.body.reasoning, { effort: "high", summary: "auto" });
  assert.deepEqual(responses.requests.at(-1)?.body.include, ["reasoning.encrypted_content"]);

  const byModel = await run(where, ["--no-session", "-m", "openai/gpt-4.1", "hi"], responses.url);
  assert.equal(byModel.code, 0, byModel.stderr);
  assert.equal(responses.requests.length, 2);
  // Not a reasoning model: no reasoning options are asked for.
  assert.equal(responses.requests[1].body.reasoning, undefined);

  const reasoner = await run(
    where,
    ["--no-session", "-m", "openai/my-reasoner", "hi"],
    responses.url,
  );
  assert.equal(reasoner.code, 0, reasoner.stderr);
  assert.deepEqual(responses.requests[2].body.include, ["reasoning.encrypted_content"]);

  const bad = await run(where, ["--api", "responses", "hi"], responses.url);
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /--api must be one of openai, openai-responses, anthropic, got "responses"/,
  );
  assert.equal(responses.requests.length, 3);
});

Deno.test("resolveModel: OpenAI's reasoning models speak Responses on OpenAI's own API, Chat Completions elsewhere", async () => {
  const urls: string[] = [];
  const fetch = (input: RequestInfo | URL, _init?: RequestInit) => {
    urls.push(input instanceof Request ? input.url : String(input));
    return Promise.resolve(Response.json({ error: { message: "stop here" } }, { status: 400 }));
  };
  const ask = async (spec: string, options: Record<string, unknown> = {}) => {
    const model = resolveModel(spec, {
      apiKey: "sk-test",
      fetch,
      env: () => undefined,
      ...options,
    });
    const stream = model.stream({ messages: [{ role: "user", content: "hi" }], tools: [] });
    await assert.rejects(async () => {
      for await (const _ of stream) { /* the first request is all that matters */ }
    });
    return urls.at(-1);
  };
  assert.equal(await ask("openai/gpt-5"), "https://api.openai.com/v1/responses");
  assert.equal(await ask("openai/o4-mini"), "https://api.openai.com/v1/responses");
  assert.equal(await ask("openai/gpt-5.1-codex"), "https://api.openai.com/v1/responses");
  assert.equal(await ask("openai/gpt-4.1"), "https://api.openai.com/v1/chat/completions");
  assert.equal(
    await ask("openai/gpt-5", { baseURL: "http://127.0.0.1:9/v1" }),
    "http://127.0.0.1:9/v1/chat/completions",
  );
  // OpenAI's root however it is written.
  assert.equal(
    await ask("openai/gpt-5", { baseURL: "https://api.openai.com/v1/" }),
    "https://api.openai.com/v1/responses",
  );
  assert.equal(
    await ask("openai/gpt-5", { api: "openai" }),
    "https://api.openai.com/v1/chat/completions",
  );
  assert.equal(
    await ask("openai/gpt-4.1", { models: { "openai/gpt-4.1": { api: "openai-responses" } } }),
    "https://api.openai.com/v1/responses",
  );
});

Deno.test("cli: --thinking follows the API chosen: a Claude model behind --api anthropic takes the budget", async () => {
  const where = await place();
  await using anthropic = startMockAnthropicServer({ replies: () => ({ text: "Thought." }) });
  const run = await runCli(
    [
      "--cwd",
      where.cwd,
      "--no-session",
      "--sandbox",
      "off",
      "-m",
      "openai/claude-sonnet-4-5",
      "--api",
      "anthropic",
      "--base-url",
      anthropic.url,
      "--thinking",
      "4000",
      "hi",
    ],
    { cwd: where.cwd, env: where.env },
  );
  assert.equal(run.code, 0, run.stderr);
  assert.doesNotMatch(run.stderr, /thinking/);
  assert.deepEqual(anthropic.requests[0].body.thinking, { type: "enabled", budget_tokens: 4000 });
});

Deno.test("cli: a server without the API asked for answers 404, and the error names the address and the API", async () => {
  const where = await place();
  await using chat = startMockOpenAIServer({ replies: () => ({ text: "never" }) });
  const responses = await run(
    where,
    ["--no-session", "-m", "openai/gpt-5", "--api", "openai-responses", "hi"],
    chat.url,
  );
  assert.equal(responses.code, 1, responses.stderr);
  assert.match(
    JSON.parse(responses.stdout).error.message,
    new RegExp(
      `openai answered 404 .* for model "gpt-5" at ${chat.url}/responses: check the model name ` +
        `and the base URL, and that the server has the Responses API \\(or choose Chat ` +
        `Completions: api openai\\)`,
    ),
  );
  // Anthropic's root ends before /v1, which the SDK adds.
  await using anthropic = startMockAnthropicServer({ replies: () => ({ text: "never" }) });
  const doubled = await runCli(
    ["--cwd", where.cwd, "--no-session", "--sandbox", "off", "-m", "anthropic/claude-x", "hi"],
    {
      cwd: where.cwd,
      env: { ...where.env, ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: `${anthropic.url}/v1` },
    },
  );
  assert.equal(doubled.code, 1, doubled.stderr);
  assert.match(
    doubled.stderr,
    /at http:\/\/127\.0\.0\.1:\d+\/v1\/v1\/messages: .*ends before \/v1/,
  );
});
