/**
 * `--thinking <tokens>` through the real CLI: a model that takes a thinking budget gets it; one
 * that cannot use it runs on, and stderr says so, naming the model and what does take one.
 */

import assert from "node:assert/strict";
import { startMockAnthropicServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { type CliRun, runCli as runCliAs, tempDir } from "./terminal_support.ts";

/** Runs the CLI with nothing saved and no sandbox, in a directory of its own. */
async function runCli(args: string[], env: Record<string, string>): Promise<CliRun> {
  const cwd = await tempDir();
  return await runCliAs(["--cwd", cwd, "--no-session", "--sandbox", "off", ...args], {
    env,
    cwd,
  });
}

Deno.test("cli: --thinking on a model without a thinking budget warns, names the model, and runs on", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ text: "answered" }) });
  const env = { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url };

  const plain = await runCli(["-m", "openai/gpt-4.1-mini", "--thinking", "4000", "hi"], env);
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(plain.stdout, /answered/);
  assert.match(
    plain.stderr,
    /agent: --thinking 4000 is ignored: openai\/gpt-4\.1-mini .*; .*anthropic\//,
  );

  // OpenAI's reasoning models think on their own; the budget still does not apply.
  const reasoning = await runCli(["-m", "openai/o3", "--thinking", "4000", "hi"], env);
  assert.equal(reasoning.code, 0, reasoning.stderr);
  assert.match(reasoning.stderr, /--thinking 4000 is ignored: openai\/o3 reasons on its own/);

  // Any OpenAI-compatible preset.
  const deepseek = await runCli(["-m", "deepseek/deepseek-v4-pro", "--thinking", "4000", "hi"], {
    DEEPSEEK_API_KEY: "sk-test",
    DEEPSEEK_BASE_URL: server.url,
  });
  assert.equal(deepseek.code, 0, deepseek.stderr);
  assert.match(deepseek.stderr, /--thinking 4000 is ignored: deepseek\/deepseek-v4-pro /);

  // No budget asked, nothing said.
  const off = await runCli(["-m", "openai/gpt-4.1-mini", "--thinking", "0", "hi"], env);
  assert.equal(off.code, 0, off.stderr);
  assert.doesNotMatch(off.stderr, /thinking/);
  for (const request of server.requests) {
    assert.equal(request.body.thinking, undefined);
    assert.equal(request.body.reasoning_effort, undefined);
  }
});

Deno.test("cli: --thinking on an Anthropic model that has extended thinking says nothing and sends it", async () => {
  await using server = startMockAnthropicServer({
    replies: () => ({ thinking: { text: "Hmm.", signature: "sig" }, text: "answered" }),
  });
  const run = await runCli(["-m", "anthropic/claude-sonnet-5", "--thinking", "4000", "hi"], {
    ANTHROPIC_API_KEY: "sk-ant-test",
    ANTHROPIC_BASE_URL: server.url,
  });
  assert.equal(run.code, 0, run.stderr);
  assert.doesNotMatch(run.stderr, /ignored/);
  assert.deepEqual(server.requests[0].body.thinking, { type: "enabled", budget_tokens: 4000 });
});

Deno.test("cli: --thinking on a Claude model without extended thinking warns and leaves it out", async () => {
  await using server = startMockAnthropicServer({ replies: () => ({ text: "answered" }) });
  const run = await runCli(
    ["-m", "anthropic/claude-3-5-haiku-latest", "--thinking", "4000", "hi"],
    {
      ANTHROPIC_API_KEY: "sk-ant-test",
      ANTHROPIC_BASE_URL: server.url,
    },
  );
  assert.equal(run.code, 0, run.stderr);
  assert.match(
    run.stderr,
    /--thinking 4000 is ignored: anthropic\/claude-3-5-haiku-latest has no extended thinking/,
  );
  assert.equal(server.requests[0].body.thinking, undefined);
});
