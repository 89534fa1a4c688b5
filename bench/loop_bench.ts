import { deltaRun, toolRun } from "./common.ts";

Deno.bench("loop: 1,000 turns with one tool call each", { group: "loop" }, async () => {
  await toolRun(1_000);
});

Deno.bench("loop: 100,000 text deltas in one answer", { group: "stream" }, async () => {
  await deltaRun(100_000);
});
