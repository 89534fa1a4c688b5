/**
 * What `agent serve` sends keeps its secrets out: the service's own token, the run's keys and
 * whatever has the shape of a key, in the answer and in every streamed event. A real child
 * process, the real OpenAI SDK against the loopback mock model.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { denoDir, MOD } from "./terminal_support.ts";

const KEY = "sk-serve-redaction-key";
const SHAPED = "ghp_0123456789abcdefghijABCDEFGHIJ";

Deno.test("agent serve: the token it made, the run's key and key-shaped values never leave it", async () => {
  /** The token the service made, read from the file its start line names. */
  let token = "";
  // The model repeats them all, the token also as JSON writes it inside a quoted string.
  await using model = startMockOpenAIServer({
    replies: () => ({
      text: `token ${token}, key ${KEY}, shaped ${SHAPED}, quoted ${JSON.stringify(token)}`,
    }),
  });
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_serve_redact_" }));
  for (const dir of ["home", "data", "work"]) await Deno.mkdir(join(root, dir));
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "serve", "--port", "0", "-m", "openai/test", "--sandbox", "off"],
    cwd: join(root, "work"),
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: join(root, "home"),
      DENO_DIR: await denoDir(),
      OPENAI_API_KEY: KEY,
      OPENAI_BASE_URL: model.url,
      AGENT_DATA_DIR: join(root, "data"),
      AGENT_CONFIG_DIR: join(root, "home", "config"),
      NO_COLOR: "1",
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  try {
    let stderr = "";
    let url: string | undefined;
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderr += chunk;
      url = /serving \S+ on (http:\/\/\S+) /.exec(stderr)?.[1];
      if (url) break;
    }
    assert.ok(url, `agent serve did not listen:\n${stderr}`);
    const tokenFile = /bearer token in (\S+), readable by you alone/.exec(stderr)?.[1];
    assert.ok(tokenFile, stderr);
    token = (await Deno.readTextFile(tokenFile)).trim();
    const post = (stream: boolean) =>
      fetch(`${url}/v1/runs`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ message: "Say it", stream }),
      }).then((response) => response.text());
    const answer = JSON.parse(await post(false));
    assert.equal(
      answer.run.result.text,
      'token [redacted], key [redacted], shaped [redacted], quoted "[redacted]"',
    );
    const events = await post(true);
    assert.match(events, /"type":"result"/);
    for (const secret of [token, KEY, SHAPED]) assert.ok(!events.includes(secret), secret);
    assert.match(events, /token \[redacted\]/);
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await child.stderr.cancel().catch(() => {});
    await Deno.remove(root, { recursive: true });
  }
});
