/**
 * A headless run prints its answer before it archives the run loop in the project's memory, and
 * waits for the archive before it exits. The archive is held up at the embeddings server (the
 * last thing archiving does), which answers only when the test lets it.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));
const ANSWER = "The release is on Thursday.";

/** An embeddings endpoint that holds every request embedding the answer until released. */
function heldEmbeddings() {
  const release = Promise.withResolvers<void>();
  const held = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (r) => {
    const body = await r.json() as { input: string | string[] };
    const inputs = typeof body.input === "string" ? [body.input] : body.input;
    if (inputs.some((text) => text.includes(ANSWER))) {
      held.resolve();
      await release.promise;
    }
    return Response.json({
      object: "list",
      model: "embed-test",
      data: inputs.map((_, index) => ({
        object: "embedding",
        index,
        embedding: Array.from({ length: 8 }, (_, i) => (i + index + 1) / 10),
      })),
      usage: { prompt_tokens: 1, total_tokens: 1 },
    });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/v1`,
    held: held.promise,
    release: () => release.resolve(),
    close: () => server.shutdown(),
  };
}

Deno.test("cli: the answer is printed before the run is archived, and the process waits for the archive", async () => {
  await using model = startMockOpenAIServer({ replies: () => ({ text: ANSWER }) });
  const embeddings = heldEmbeddings();
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_archive_order_" }));
  const config = join(root, "config");
  await Deno.mkdir(config);
  await Deno.mkdir(join(root, "project"));
  await Deno.writeTextFile(
    join(config, "settings.json"),
    JSON.stringify({ memory: { embeddings: { baseURL: embeddings.url, model: "embed-test" } } }),
  );
  const env = {
    OPENAI_API_KEY: "sk-test-archive-order",
    OPENAI_BASE_URL: model.url,
    AGENT_CONFIG_DIR: config,
    AGENT_DATA_DIR: join(root, "data"),
    NO_COLOR: "1",
  };
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "-m", "openai/test", "--cwd", join(root, "project"), "When?"],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let exited = false;
  const status = child.status.then((status) => (exited = true, status));
  try {
    // The answer comes while the archive is held up; it never would if the archive came first.
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let printed = "";
    const deadline = setTimeout(() => reader.cancel(), 20_000);
    while (!printed.includes(`${ANSWER}\n`)) {
      const { value, done } = await reader.read();
      if (done) break;
      printed += value;
    }
    clearTimeout(deadline);
    assert.equal(printed, `${ANSWER}\n`, "the answer is out while the archive is held up");
    await embeddings.held;
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(exited, false, "the process waits for the archive");
    embeddings.release();
    await reader.cancel();
    assert.equal((await status).code, 0, await stderr);
  } finally {
    embeddings.release();
    await status;
    await embeddings.close();
  }
  // The archive was written whole: the answer is in the project's memory.
  const recall = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "--cwd", join(root, "project"), "--recall", "release Thursday"],
    env,
    stdin: "null",
  }).output();
  assert.match(new TextDecoder().decode(recall.stdout), /release is on Thursday/);
});
