/**
 * What the Anthropic SDK would do on its own, held to the library's rules: it writes nothing
 * to the user's terminal, and the request body holds only what its API version accepts.
 *
 * @module
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import type { MessageCreateParamsStreaming } from "@anthropic-ai/sdk/resources/messages";
import { runAnthropic } from "./anthropic_support.ts";

/** Runs `work` with the console's writers replaced, and returns what they were given. */
async function consoleOutput(work: () => Promise<void>): Promise<string[]> {
  const written: string[] = [];
  const names = ["log", "info", "warn", "error", "debug"] as const;
  const saved = names.map((name) => console[name]);
  for (const name of names) {
    console[name] = (...args: unknown[]) => written.push(`${name}: ${args.join(" ")}`);
  }
  try {
    await work();
  } finally {
    names.forEach((name, i) => console[name] = saved[i]);
  }
  return written;
}

Deno.test("anthropic provider: a deprecated model id writes nothing to the terminal", async () => {
  const written = await consoleOutput(async () => {
    // The SDK keeps a list of deprecated ids, claude-sonnet-4-5 among them.
    const run = await runAnthropic([{ text: "Hi." }], { model: { model: "claude-sonnet-4-5" } });
    assert.equal(run.result.status, "success", run.result.error?.message);
    assert.equal(run.requests[0].body.model, "claude-sonnet-4-5");
  });
  assert.deepEqual(written, []);
});

Deno.test("anthropic provider: thinking of type enabled on a model the SDK warns about writes nothing", async () => {
  const written = await consoleOutput(async () => {
    const run = await runAnthropic([{ text: "Hi." }], {
      model: { model: "claude-opus-4-6", thinking: { budgetTokens: 1024 } },
    });
    assert.equal(run.result.status, "success", run.result.error?.message);
    assert.deepEqual(run.requests[0].body.thinking, { type: "enabled", budget_tokens: 1024 });
  });
  assert.deepEqual(written, []);
});

Deno.test("anthropic provider: no temperature, which the SDK's API version has no field for", async () => {
  const run = await runAnthropic([{ text: "a" }], { temperature: 0.2 });
  assert.equal(run.result.status, "success", run.result.error?.message);
  // The version the SDK sends refuses sampling parameters, even at their defaults.
  assert.equal(run.requests[0].headers.get("anthropic-version"), "2026-10-21");
  assert.equal("temperature" in run.requests[0].body, false);
  const body: MessageCreateParamsStreaming = {
    model: "claude-test",
    max_tokens: 1,
    messages: [],
    stream: true,
    // Should the SDK's request type gain the field again, this stops compiling: send it then.
    // @ts-expect-error: `temperature` is not a field of the request
    temperature: 0.2,
  };
  assert.equal(body.max_tokens, 1);
});
