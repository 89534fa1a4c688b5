/**
 * Long-term memory through the real CLI: a second run finds what the first one learned, and
 * the memory can be searched from the command line, with and without embeddings.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type MockServer,
  startMockEmbeddingsServer,
  startMockOpenAIServer,
} from "../lib/testing/mod.ts";
import { runCli } from "./cli_run_support.ts";

function cli(
  server: MockServer,
  dirs: { cwd: string; data: string; config: string },
  args: string[],
) {
  const { data, config } = dirs;
  return runCli(["-m", "openai/test", "--cwd", dirs.cwd, ...args], {
    data,
    config,
    url: server.url,
  });
}

async function dirs() {
  return {
    cwd: await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_mem_cwd_" })),
    data: await Deno.makeTempDir({ prefix: "agent_mem_data_" }),
    config: await Deno.makeTempDir({ prefix: "agent_mem_config_" }),
  };
}

function firstRequestText(server: MockServer, index: number): string {
  return JSON.stringify(server.requests[index].body.messages);
}

Deno.test("cli memory: a later run is offered what an earlier run found, and --recall searches it", async () => {
  const where = await dirs();
  await using server = startMockOpenAIServer({
    replies: [
      {
        toolCalls: [{
          name: "bash",
          arguments: { command: "echo 'staging database: db7.internal:6543'" },
        }],
      },
      { text: "The staging database is db7.internal on port 6543." },
      { text: "It is db7.internal:6543, as found earlier." },
    ],
  });
  const first = await cli(server, where, ["Where is the staging database?"]);
  assert.equal(first.code, 0, first.stderr);

  const second = await cli(server, where, ["Remind me: staging database host?"]);
  assert.equal(second.code, 0, second.stderr);
  const offered = firstRequestText(server, 2);
  assert.match(offered, /\[Memories from earlier work that may help\]/);
  assert.match(offered, /db7\.internal:6543/);
  assert.ok(
    (server.requests[2].body.tools as Array<{ function: { name: string } }>).some((t) =>
      t.function.name === "recall"
    ),
  );

  const recall = await cli(server, where, ["--recall", "staging database"]);
  assert.equal(recall.code, 0, recall.stderr);
  assert.match(
    recall.stdout,
    /^[0-9a-f-]{36}#\d+ {2}(user|tool_result|response|tool_call) {2}\d{4}-/m,
  );
  assert.match(recall.stdout, /db7\.internal/);

  const none = await cli(server, where, ["--recall", "kubernetes ingress"]);
  assert.match(none.stdout, /Nothing in this project's memory matches "kubernetes ingress"\./);
  // Memories are per project: another directory knows nothing of them.
  const elsewhere = await cli(server, {
    ...where,
    cwd: await Deno.realPath(await Deno.makeTempDir()),
  }, ["--recall", "staging"]);
  assert.match(elsewhere.stdout, /Nothing in this project's memory/);
});

Deno.test("cli memory: with an embeddings endpoint in the settings, segments are embedded and searched", async () => {
  const where = await dirs();
  await using embeddings = startMockEmbeddingsServer({ dimensions: 64 });
  await Deno.writeTextFile(
    join(where.config, "settings.json"),
    JSON.stringify({ memory: { embeddings: { baseURL: embeddings.url, model: "embed-test" } } }),
  );
  await using server = startMockOpenAIServer({
    replies: [{ text: "The deploy key rotates every Monday." }],
  });
  const run = await cli(server, where, ["When does the deploy key rotate?"]);
  assert.equal(run.code, 0, run.stderr);
  assert.ok(embeddings.requests.length >= 1, "the segments were embedded");
  assert.ok(
    embeddings.requests.some((request) =>
      request.inputs.some((text) => text.includes("every Monday"))
    ),
  );
  const recall = await cli(server, where, ["--recall", "deploy key rotation"]);
  assert.match(recall.stdout, /rotates every Monday/);
});

Deno.test("cli memory: --no-memory remembers nothing", async () => {
  const where = await dirs();
  await using server = startMockOpenAIServer({
    replies: [{ text: "The answer is 42." }, { text: "ok" }],
  });
  await cli(server, where, ["--no-session", "--no-memory", "What is the answer?"]);
  const recall = await cli(server, where, ["--recall", "answer"]);
  assert.match(recall.stdout, /Nothing in this project's memory matches/);
});
