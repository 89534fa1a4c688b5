/**
 * What `agent serve` sends keeps its secrets out: the service's own token, the run's keys and
 * whatever has the shape of a key, in the answer and in every streamed event. A real child
 * process, the real OpenAI SDK against the loopback mock model.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { startServe } from "./serve_support.ts";

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
  await using served = await startServe(model, { env: { OPENAI_API_KEY: KEY } });
  assert.ok(served.tokenFile, served.stderr());
  token = served.token!;
  const post = (stream: boolean) =>
    served.fetch("/v1/runs", {
      method: "POST",
      headers: { "content-type": "application/json" },
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
});
