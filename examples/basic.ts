/**
 * The library's basic use: an agent with two tools, streaming its answer.
 *
 * ```sh
 * OPENAI_API_KEY=sk-… deno run -A examples/basic.ts "What is (17 + 4) * 3, and how warm is it in Paris?"
 * # any OpenAI-compatible server, e.g. a local Ollama:
 * AGENT_MODEL=openai/qwen3 OPENAI_BASE_URL=http://127.0.0.1:11434/v1 deno run -A examples/basic.ts
 * ```
 *
 * It exits 0 when the run succeeds, and 1 when it does not (the reason goes to stderr).
 *
 * @module
 */

import { Agent } from "@x/agent";
import { calculator } from "./calculator.ts";
import { createWeatherTool } from "./weather.ts";

const agent = new Agent({
  model: Deno.env.get("AGENT_MODEL") ?? "openai/gpt-4.1-mini",
  systemPrompt: "You are a helpful assistant. Use the calculator for arithmetic and " +
    "get_weather for the weather; never guess either.",
  tools: [calculator, createWeatherTool()],
});

const prompt = Deno.args.join(" ") || "What is (17 + 4) * 3, and how warm is it in Paris?";
const encoder = new TextEncoder();
for await (const event of agent.stream(prompt)) {
  if (event.type === "text_delta") await Deno.stdout.write(encoder.encode(event.text));
  if (event.type === "tool_call") console.error(`→ ${event.name} ${JSON.stringify(event.input)}`);
  if (event.type === "tool_result") console.error(`← ${event.output}`);
  if (event.type === "result") {
    console.log();
    if (event.status !== "success") {
      console.error(`${event.status}: ${event.error?.message ?? "the run did not finish"}`);
      Deno.exitCode = 1;
    }
  }
}
