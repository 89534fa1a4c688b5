/**
 * Workloads shared by the benchmarks: a long tool-calling run and a long streamed answer,
 * both against the scripted model so that only the loop's own work is measured.
 */

import { z } from "zod";
import { defineTool, runAgent, type RunResult } from "../mod.ts";
import { scriptedModel } from "../lib/testing/mod.ts";

const echo = defineTool({
  name: "echo",
  description: "Echoes its input",
  parameters: z.object({ n: z.number() }),
  execute: ({ n }) => `echo ${n}`,
});

/** A run of `turns` turns, each with one tool call, then a final answer. */
export async function toolRun(turns: number): Promise<RunResult> {
  const model = scriptedModel(
    (_request, call) =>
      call < turns - 1
        ? {
          toolCalls: [{ name: "echo", input: { n: call } }],
          usage: { inputTokens: 1, outputTokens: 1 },
        }
        : { text: "done", usage: { inputTokens: 1, outputTokens: 1 } },
    { record: false },
  );
  const run = runAgent({ model, input: "go", tools: [echo], maxTurns: 0, nudge: false });
  let step = await run.next();
  while (!step.done) step = await run.next();
  if (step.value.turns !== turns) {
    throw new Error(`expected ${turns} turns, got ${step.value.turns}`);
  }
  return step.value;
}

/** One answer streamed as `count` text deltas; resolves to the deltas the consumer saw. */
export async function deltaRun(count: number): Promise<number> {
  const deltas = Array.from({ length: count }, (_, i) => `t${i % 10} `);
  const model = scriptedModel([{ text: deltas }], { record: false });
  let seen = 0;
  for await (const event of runAgent({ model, input: "go" })) {
    if (event.type === "text_delta") seen++;
  }
  if (seen !== count) throw new Error(`expected ${count} deltas, got ${seen}`);
  return seen;
}
