/**
 * The graph engine's own cost per node: loops of code nodes that do nothing, without
 * checkpoints, with in-memory checkpoints, and with file checkpoints (written after every
 * node). Run with `deno run -A bench/graph.ts`.
 */

import {
  AgentBuilder,
  type CheckpointStore,
  fileCheckpoints,
  memoryCheckpoints,
} from "../lib/graph/mod.ts";

function graph(iterations: number) {
  return new AgentBuilder("bench")
    .maxIterations(iterations + 1)
    .timeout(600_000)
    .addNode("step", (state) => ({ data: { n: Number(state.data.n ?? 0) + 1 } }))
    .addNode("end", () => {})
    .addConditionalEdge("step", "end", (state) => Number(state.data.n) >= iterations - 1)
    .addEdge("step", "step")
    .setEntryPoint("step")
    .setEndPoints("end")
    .build();
}

/** Median µs per node over `runs` executions of `iterations` nodes each. */
async function perNode(
  iterations: number,
  runs: number,
  checkpoints?: CheckpointStore,
): Promise<number> {
  const built = graph(iterations);
  const times: number[] = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    const outcome = await built.execute("step", {}, { checkpoints }).result;
    if (outcome.iterations !== iterations) throw new Error(`ran ${outcome.iterations} nodes`);
    times.push((performance.now() - started) * 1000 / iterations);
  }
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)];
}

await perNode(1_000, 3); // warm up
const dir = await Deno.makeTempDir();
const rows: Array<[string, number]> = [
  ["5,000 nodes, no checkpoints", await perNode(5_000, 5)],
  ["50 nodes, no checkpoints", await perNode(50, 101)],
  ["50 nodes, checkpoints in memory", await perNode(50, 101, memoryCheckpoints())],
  ["50 nodes, checkpoints in files", await perNode(50, 101, fileCheckpoints(dir))],
];
await Deno.remove(dir, { recursive: true });
console.log(
  "graph engine overhead per node (median over executions of no-op nodes; target ≤ 0.5 ms):",
);
for (const [name, us] of rows) console.log(`  ${name.padEnd(34)} ${us.toFixed(1)} µs/node`);
