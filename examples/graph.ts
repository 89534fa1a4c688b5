/**
 * A graph of agents: a researcher gathers facts with the calculator, a writer drafts an answer,
 * a reviewer checks it; the draft goes back to the writer until a model judges that the review
 * approved it, then a code step publishes it.
 *
 * ```sh
 * OPENAI_API_KEY=sk-… deno run -A examples/graph.ts "How many seconds are there in a leap year?"
 * AGENT_MODEL=ollama/qwen3 deno run -A examples/graph.ts
 * ```
 *
 * It prints the published answer and exits 0, or says why the graph failed on stderr and
 * exits 1.
 *
 * @module
 */

import type { Model } from "@x/agent";
import { AgentBuilder } from "@x/agent/graph";
import { resolveModel } from "@x/agent/providers";
import { calculator } from "./calculator.ts";

/** Builds the example graph on `model`. */
export function reviewGraph(model: Model): ReturnType<AgentBuilder["build"]> {
  return new AgentBuilder("research-write-review")
    .description("Researches a question, drafts an answer, and revises it until it is approved")
    .maxIterations(12)
    .timeout(300_000)
    .addLLMNode(
      "research",
      "Gather the facts and numbers the question needs",
      model,
      [calculator],
      "You are a researcher. Work out the facts; use the calculator for every computation.",
    )
    .addLLMNode(
      "write",
      "Write a short, clear answer from the research",
      model,
      [],
      "You are a writer. Answer in at most three sentences, using the research above.",
    )
    .addLLMNode(
      "review",
      "Review the latest draft: reply APPROVED if it is correct and clear, else say what to fix",
      model,
      [calculator],
      "You are a strict reviewer. Check every number with the calculator.",
    )
    .addNode("keep", (state) => ({ data: { ...state.data, draft: state.output } }))
    .addNode("publish", (state) => ({ output: String(state.data.draft) }))
    .addEdge("research", "write")
    .addEdge("write", "keep")
    .addEdge("keep", "review")
    .addConditionalEdge("review", "publish", "the reviewer approved the draft")
    .addEdge("review", "write")
    .setEntryPoint("research")
    .setEndPoints("publish")
    .build();
}

if (import.meta.main) {
  const model = resolveModel(Deno.env.get("AGENT_MODEL") ?? "openai/gpt-4.1-mini");
  const question = Deno.args.join(" ") || "How many seconds are there in a leap year?";
  const execution = reviewGraph(model).execute("research", question);
  for await (const event of execution.events) {
    if (event.type === "node_start") console.error(`▶ ${event.node}`);
    if (event.type === "edge") console.error(`  → ${event.edge.to} (${event.edge.reason})`);
    if (event.type === "node_event" && event.event.type === "tool_call") {
      console.error(`    ${event.event.name} ${JSON.stringify(event.event.input)}`);
    }
  }
  const result = await execution.result;
  if (result.success) {
    console.log(result.finalMessage);
  } else {
    console.error(`${result.status}: ${result.error ?? "the graph did not reach its end"}`);
    Deno.exitCode = 1;
  }
}
