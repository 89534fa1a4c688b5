/**
 * A graph execution in a process of its own, for the checkpoint test: `crash` dies in the
 * second node (after the first node's checkpoint), `resume` goes on from the checkpoint.
 */

import { AgentBuilder, fileCheckpoints } from "../lib/graph/mod.ts";

const [dir, mode] = Deno.args;
const store = fileCheckpoints(dir);
const mark = (name: string) => (state: { data: Record<string, unknown> }) => {
  if (name === "second" && mode === "crash") Deno.exit(42);
  return { data: { ...state.data, [name]: "done" } };
};
const graph = new AgentBuilder("three steps")
  .addNode("first", mark("first"))
  .addNode("second", mark("second"))
  .addNode("third", mark("third"))
  .addEdge("first", "second")
  .addEdge("second", "third")
  .setEntryPoint("first")
  .setEndPoints("third")
  .build();

if (mode === "crash") {
  await graph.execute("first", {}, { checkpoints: store }).result;
} else {
  const [file] = [...Deno.readDirSync(dir)].map((entry) => entry.name);
  const checkpoint = (await store.load(file.replace(/\.json$/, "")))!;
  const outcome = await graph.resume(checkpoint, { checkpoints: store }).result;
  console.log(JSON.stringify({
    status: outcome.status,
    path: outcome.path.map((step) => step.node),
    data: outcome.finalState.data,
  }));
}
