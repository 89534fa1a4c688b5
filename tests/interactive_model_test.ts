/**
 * `/model` across providers in the interactive session: a switch goes to the new provider's own
 * API root with its own key, or says why it cannot and keeps the model; `--base-url` stays with
 * the provider it was given for.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import {
  type MockServer,
  startMockAnthropicServer,
  startMockOpenAIServer,
} from "../lib/testing/mod.ts";
import { childEnv, MOD, tempDir, Terminal } from "./terminal_support.ts";

/** The CLI on `openai/test` with `--base-url` at the OpenAI mock server. */
async function startOnOpenAI(
  openai: MockServer,
  env: Record<string, string>,
): Promise<Terminal> {
  const cwd = await tempDir();
  const terminal = await Terminal.start(
    [
      Deno.execPath(),
      "run",
      "-A",
      MOD,
      "-m",
      "openai/test",
      "--base-url",
      openai.url,
      "--sandbox",
      "off",
    ],
    await childEnv({ OPENAI_API_KEY: "sk-test", ...env }),
    cwd,
  );
  await terminal.waitFor(/agent · openai\/test/);
  return terminal;
}

/** The `model` of the requests a server got. */
function models(server: { requests: { body: Record<string, unknown> }[] }): unknown[] {
  return server.requests.map((request) => request.body.model);
}

Deno.test("interactive: /model to a provider without its key says so and keeps the model", async () => {
  await using openai = startMockOpenAIServer({ replies: () => ({ text: "still openai" }) });
  await using terminal = await startOnOpenAI(openai, {});

  await terminal.type("/model anthropic/claude-sonnet-5");
  await terminal.keys("Enter");
  await terminal.waitFor(
    /\/model: No API key for anthropic: set ANTHROPIC_API_KEY.*\. Still on openai\/test\./,
  );
  await terminal.type("/model");
  await terminal.keys("Enter");
  const shown = await terminal.waitFor(/ANTHROPIC_API_KEY[\s\S]*Model: /);
  assert.match(shown, /ANTHROPIC_API_KEY[\s\S]*Model: openai\/test\n/);
  assert.doesNotMatch(shown, /Model: anthropic/);

  // The session goes on with the model it had.
  await terminal.type("hello");
  await terminal.keys("Enter");
  await terminal.waitFor(/still openai/);
  assert.ok(models(openai).includes("test"));
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});

Deno.test("interactive: /model to another provider uses its own API root, --base-url stays with openai", async () => {
  await using openai = startMockOpenAIServer({
    replies: (body) => ({ text: `openai answers as ${body.model}` }),
  });
  await using anthropic = startMockAnthropicServer({
    replies: (body) => ({ text: `anthropic answers as ${body.model}` }),
  });
  await using terminal = await startOnOpenAI(openai, {
    ANTHROPIC_API_KEY: "sk-ant-test",
    ANTHROPIC_BASE_URL: anthropic.url,
  });

  await terminal.type("/model anthropic/claude-sonnet-5");
  await terminal.keys("Enter");
  await terminal.waitFor(/Model: anthropic\/claude-sonnet-5/);
  await terminal.type("hello");
  await terminal.keys("Enter");
  await terminal.waitFor(/anthropic answers as claude-sonnet-5/);
  assert.ok(models(anthropic).includes("claude-sonnet-5"));
  assert.equal(anthropic.requests[0].headers.get("x-api-key"), "sk-ant-test");
  assert.ok(!models(openai).includes("claude-sonnet-5"), "nothing for anthropic went to openai");

  // Back on openai, the --base-url given for it applies again.
  await terminal.type("/model openai/other");
  await terminal.keys("Enter");
  await terminal.waitFor(/Model: openai\/other/);
  await terminal.type("and again");
  await terminal.keys("Enter");
  await terminal.waitFor(/openai answers as other/);
  assert.ok(models(openai).includes("other"));
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});
