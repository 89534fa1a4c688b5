/**
 * What the CLI says a run cost when prices step up with the size of a request: a known model's
 * long-request tier, and tiers of the user's own in the settings' `models` entries, each
 * applied request by request.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { type MockReply, type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { type CliRun, runCli, tempDir } from "./terminal_support.ts";

/** Runs the CLI headless against `server`, with `settings` as the user's settings file. */
async function runAgainst(
  server: MockServer,
  args: string[],
  settings?: unknown,
): Promise<CliRun> {
  const config = await tempDir();
  if (settings !== undefined) {
    await Deno.writeTextFile(join(config, "settings.json"), JSON.stringify(settings));
  }
  return await runCli(["--no-session", ...args], {
    env: {
      OPENAI_API_KEY: "sk-test",
      OPENAI_BASE_URL: server.url,
      AGENT_CONFIG_DIR: config,
      NO_COLOR: "1",
    },
  });
}

/** A reply reporting `prompt` input and `completion` output tokens. */
function reply(prompt: number, completion: number, text = "done"): MockReply {
  return { text, usage: { prompt_tokens: prompt, completion_tokens: completion } };
}

/** Dollar amounts compared to a billionth. */
function usd(amount: number): number {
  return Math.round(amount * 1e9) / 1e9;
}

Deno.test("cli cost: a request past gpt-5.4's 272K threshold is charged at the long-request prices", async () => {
  await using server = startMockOpenAIServer({
    replies: [reply(300_000, 1_000), reply(100_000, 1_000)],
  });
  const long = await runAgainst(server, ["-m", "openai/gpt-5.4", "--output", "json", "read it"]);
  assert.equal(long.code, 0, long.stderr);
  // Past 272K input tokens: $5 in and $22.50 out per million, not $2.50 and $15.
  assert.equal(JSON.parse(long.stdout).costUsd, usd((300_000 * 5 + 1_000 * 22.5) / 1e6));

  const short = await runAgainst(server, ["-m", "openai/gpt-5.4", "--output", "json", "read it"]);
  assert.equal(short.code, 0, short.stderr);
  assert.equal(JSON.parse(short.stdout).costUsd, usd((100_000 * 2.5 + 1_000 * 15) / 1e6));
});

Deno.test("cli cost: tiers from the settings apply request by request, in every output", async () => {
  const settings = {
    models: {
      "openai/test": {
        pricing: {
          input: 100,
          output: 100,
          tiers: [{ above: 1_000, input: 1_000, output: 1_000 }],
        },
      },
    },
  };
  // Two requests: 900 input tokens (under the threshold), then 1,500 (past it).
  const replies = (): MockReply[] => [
    {
      toolCalls: [{ name: "ls", arguments: {} }],
      usage: { prompt_tokens: 900, completion_tokens: 10 },
    },
    reply(1_500, 10, "two files"),
  ];
  const first = usd((900 * 100 + 10 * 100) / 1e6);
  const second = usd((1_500 * 1_000 + 10 * 1_000) / 1e6);

  await using streamed = startMockOpenAIServer({ replies: replies() });
  const run = await runAgainst(
    streamed,
    ["-m", "openai/test", "--output", "stream-json", "list"],
    settings,
  );
  assert.equal(run.code, 0, run.stderr);
  const events = run.stdout.trim().split("\n").map((line) => JSON.parse(line));
  const turns = events.filter((event) => event.type === "turn_end");
  assert.deepEqual(turns.map((turn) => turn.costUsd), [first, second]);
  // The sum of 2,400 tokens would pass the threshold: priced by the sum, both would be tiered.
  assert.equal(events.at(-1).costUsd, usd(first + second));

  await using text = startMockOpenAIServer({ replies: replies() });
  const shown = await runAgainst(text, ["-m", "openai/test", "list"], settings);
  assert.equal(shown.code, 0, shown.stderr);
  assert.equal(shown.stdout.trim(), "two files");
  assert.match(shown.stderr, /2400 in \/ 20 out tokens · \$1\.60 ·/);
});

Deno.test("cli cost: bad tiers in the settings are a clear error naming the file and the field", async () => {
  await using server = startMockOpenAIServer({ replies: [reply(10, 1)] });
  const cases: Array<[unknown, RegExp]> = [
    [{ above: 1_000, input: 10 }, /at models\["openai\/test"\]\.pricing\.tiers\[0\]\.output/],
    [
      { above: -1, input: 1, output: 1 },
      /Too small[^\n]*\n.*at models\["openai\/test"\]\.pricing\.tiers\[0\]\.above/,
    ],
    [{ above: 1_000, input: 1, output: 1, per: "request" }, /Unrecognized key: "per"/],
  ];
  for (const [tier, field] of cases) {
    const settings = {
      models: { "openai/test": { pricing: { input: 1, output: 2, tiers: [tier] } } },
    };
    const run = await runAgainst(server, ["-m", "openai/test", "hi"], settings);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /Bad settings in .*settings\.json/);
    assert.match(run.stderr, field);
  }
  const twice = {
    models: {
      "openai/test": {
        pricing: {
          input: 1,
          output: 2,
          tiers: [{ above: 1_000, input: 5, output: 5 }, { above: 1_000, input: 9, output: 9 }],
        },
      },
    },
  };
  const run = await runAgainst(server, ["-m", "openai/test", "hi"], twice);
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stderr, /two tiers have the same threshold/);
  assert.equal(server.requests.length, 0, "no request is sent with bad settings");
});
