/**
 * A conversation whose answers a server made as long as it liked still goes to a Responses
 * model: an answer of 200,000 parts becomes 200,000 input items, through the real SDK to the
 * loopback mock server.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { type Message, userMessage } from "../mod.ts";
import { inputItems, runResponses } from "./responses_support.ts";

Deno.test("agent: an answer of 200,000 parts goes to a Responses model as 200,000 items", async () => {
  const history: Message[] = [
    userMessage("Count"),
    {
      role: "assistant",
      content: Array.from({ length: 200_000 }, () => ({ type: "text" as const, text: "1" })),
    },
  ];
  const run = await runResponses([{ text: "Counted." }], {
    messages: history,
    input: "Again",
    // Room for it all: the parts themselves go, not a summary of them.
    model: { info: { contextWindow: 10_000_000, maxOutputTokens: 1_000 } },
  });
  assert.equal(run.result.status, "success", run.result.error?.message);
  assert.equal(run.result.text, "Counted.");
  const items = inputItems(run.requests[0]);
  assert.equal(items.filter((item) => item.type === "message").length, 200_000);
});
