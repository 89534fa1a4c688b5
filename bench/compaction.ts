/**
 * Context compaction figures: `deno run -A bench/compaction.ts`.
 *
 * 1. What importing the tokenizer costs (a cold import in a fresh process), which is why it is
 *    loaded only when a request gets near its budget.
 * 2. Request sizes before and after compaction in a 200-turn scripted session of `read` calls
 *    (outputs of 1,000 to 16,000 characters, a 300-character remark before each call), against
 *    windows of 8k, 32k and 128k tokens. Sizes are counted with the tokenizer on the requests
 *    the model received.
 * 3. The overhead of the estimate per turn (µs/turn), on turns that compact nothing, and the
 *    cost of a compaction itself (the summarizer answers at once, so this is our own work).
 */

import { fileURLToPath } from "node:url";
import { z } from "zod";
import { type AgentEvent, defineTool, type Message, type ModelInfo, runAgent } from "../mod.ts";
import { loadTokenCounter, requestTokens, type TokenCounter } from "../lib/compaction/mod.ts";
import { SUMMARY_SYSTEM_PROMPT } from "../lib/compaction/summary.ts";
import { toolDefinitions } from "../lib/tool.ts";
import { scriptedModel } from "../lib/testing/mod.ts";
import { createCompactor } from "../lib/compaction/compact.ts";
import { median, random } from "./stats.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TURNS = 200;
const WINDOWS = [8_000, 32_000, 128_000];
const SYSTEM = "You are a coding agent. You read files to answer questions about a codebase.";

/** A source-like file of 1,000 to 16,000 characters, the same for the same path. */
function fileText(path: string): string {
  const next = random([...path].reduce((hash, c) => hash * 31 + c.charCodeAt(0), 7));
  const size = 1_000 + Math.floor(next() * 15_000);
  const words = ["record", "fetch", "parse", "config", "user", "cache", "value", "index"];
  const lines: string[] = [];
  let length = 0;
  for (let i = 0; length < size; i++) {
    const word = words[Math.floor(next() * words.length)];
    const line = `  const ${word}${i} = await ${word}Of(${Math.floor(next() * 1e4)}, "${path}");`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join("\n");
}

/** What the model says before each call: about 300 characters, as agents do. */
function remark(turn: number): string {
  return `Module ${turn - 1} loads its records through fetchOf, then caches them with cacheOf; ` +
    `the keys come from the config. Next I read src/module_${turn}.ts to see whether it ` +
    `follows the same pattern or builds its own index, which would explain the duplicates.`;
}

const read = defineTool({
  name: "read",
  description: "Reads a file of the project",
  parameters: z.object({ path: z.string() }),
  execute: ({ path }) => fileText(path),
});

const SUMMARY = `## Goal\nAnswer questions about the codebase.\n## Instructions\nNone.\n` +
  `## Discoveries\n${"The loaders call fetchOf and cacheOf in turn. ".repeat(20)}\n` +
  `## Work done\nRead the files under src/.\n## Files touched\nsrc/ (read only)\n` +
  `## Next steps\nRead on.`;

function info(contextWindow: number): ModelInfo {
  return { contextWindow, maxOutputTokens: Math.min(16_000, contextWindow / 8) };
}

// 1. The tokenizer's import cost, cold, in fresh processes (median of 5).
async function importCost(): Promise<number> {
  const code = `const t = performance.now(); await import("gpt-tokenizer/encoding/o200k_base"); ` +
    `console.log(performance.now() - t);`;
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const { stdout, success } = await new Deno.Command(Deno.execPath(), {
      args: ["eval", code],
      cwd: ROOT,
      stdout: "piped",
      stderr: "inherit",
    }).output();
    if (!success) throw new Error("the tokenizer import failed");
    times.push(Number(new TextDecoder().decode(stdout).trim()));
  }
  return times.sort((a, b) => a - b)[2];
}

const imported = await importCost();
const started = performance.now();
const counter: TokenCounter = await loadTokenCounter();
const inProcess = performance.now() - started;
console.log(
  `tokenizer (${counter.name}): cold import ${imported.toFixed(0)} ms in a fresh process ` +
    `(median of 5), ${inProcess.toFixed(0)} ms here; loaded only once a request nears its budget`,
);

// 2. Request sizes in a long session.
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

console.log(`\n${TURNS}-turn session of read calls (tokens counted with ${counter.name}):`);
for (const contextWindow of WINDOWS) {
  let turn = 0;
  const model = Object.assign(
    scriptedModel((request) => {
      if (request.system === SUMMARY_SYSTEM_PROMPT) {
        return { text: SUMMARY, usage: { inputTokens: 1, outputTokens: 1 } };
      }
      turn++;
      // Report the request's size, as a provider does.
      const usage = { inputTokens: requestTokens(request, counter), outputTokens: 20 };
      return turn <= TURNS
        ? {
          text: remark(turn),
          toolCalls: [{ name: "read", input: { path: `src/module_${turn}.ts` } }],
          usage,
        }
        : { text: "Done.", usage };
    }),
    { info: info(contextWindow) },
  );
  const events: AgentEvent[] = [];
  let result;
  const run = runAgent({
    model,
    systemPrompt: SYSTEM,
    input: "Read every module under src/ and tell me how they load records.",
    tools: [read],
    maxTurns: 0,
  });
  for (let step = await run.next();; step = await run.next()) {
    if (step.done) {
      result = step.value;
      break;
    }
    events.push(step.value);
  }
  if (result.status !== "success") throw new Error(`the run failed: ${result.error?.message}`);
  const main = model.requests.filter((request) => request.system !== SUMMARY_SYSTEM_PROMPT);
  const summaryRequests = model.requests.filter((r) => r.system === SUMMARY_SYSTEM_PROMPT);
  const sizes = main.map((request) => requestTokens(request, counter));
  const whole = requestTokens({
    system: SYSTEM,
    messages: result.messages,
    tools: main[0].tools,
  }, counter);
  const compactions = events.filter((e) => e.type === "compaction");
  const drops = compactions.filter((e) => e.summarizedMessages === 0);
  const summaries = compactions.filter((e) => e.summarizedMessages > 0);
  const limits = { budget: contextWindow - info(contextWindow).maxOutputTokens };
  const range = (list: typeof compactions) =>
    list.length
      ? ` (median ${fmt(median(list.map((e) => e.tokensBefore)))} → ${
        fmt(median(list.map((e) => e.tokensAfter)))
      } tokens)`
      : "";
  console.log(
    `  window ${fmt(contextWindow)} (budget ${fmt(limits.budget)}): ${main.length} requests; ` +
      `the whole history would be ${fmt(whole)} tokens; largest request sent ${
        fmt(Math.max(...sizes))
      }, median ${fmt(median(sizes))}`,
  );
  console.log(
    `    ${drops.length} compactions dropping old tool outputs${range(drops)}; ` +
      `${summaries.length} summarizing${range(summaries)}` + (summaryRequests.length
        ? `, in ${summaryRequests.length} summary requests of at most ${
          fmt(Math.max(...summaryRequests.map((r) =>
            requestTokens(r, counter)
          )))
        } tokens`
        : ""),
  );
}

// 3. The estimate's overhead per turn, measured on the compactor alone.
console.log(`\nestimate overhead (${TURNS} turns, new messages each turn, usage reported):`);
const definitions = toolDefinitions([read]);
// The provider's count uses its own cache, so that it does not warm the compactor's.
const provider: TokenCounter = { name: "provider", count: (text) => counter.count(text) };
for (const contextWindow of WINDOWS) {
  const quiet: number[] = [];
  const compacting: number[] = [];
  for (let round = 0; round < 5; round++) {
    const model = Object.assign(
      scriptedModel(() => ({ text: SUMMARY }), { record: false }),
      { info: info(contextWindow) },
    );
    const compactor = createCompactor({ model, systemPrompt: SYSTEM, tools: definitions });
    const signal = new AbortController().signal;
    const history: Message[] = [{ role: "user", content: "Read every module." }];
    for (let turn = 1; turn <= TURNS; turn++) {
      const path = `src/module_${turn}.ts`;
      history.push(
        {
          role: "assistant",
          content: [
            { type: "text", text: remark(turn) },
            { type: "tool_call", id: `c${turn}`, name: "read", input: { path } },
          ],
        },
        {
          role: "tool",
          toolCallId: `c${turn}`,
          name: "read",
          content: fileText(path),
          isError: false,
        },
      );
      const start = performance.now();
      const prepare = compactor.prepare(history, signal);
      let compacted = false;
      let step = await prepare.next();
      while (!step.done) {
        compacted ||= step.value.type === "compaction";
        step = await prepare.next();
      }
      const elapsed = performance.now() - start;
      if (round > 0) (compacted ? compacting : quiet).push(elapsed);
      const sent = { system: SYSTEM, messages: step.value!.messages, tools: definitions };
      compactor.observe({ inputTokens: requestTokens(sent, provider), outputTokens: 20 });
    }
  }
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / (values.length || 1);
  console.log(
    `  window ${fmt(contextWindow)}: ${(mean(quiet) * 1_000).toFixed(1)} µs/turn on ${
      quiet.length / 4
    } turns that compact nothing (median ${(median(quiet) * 1_000).toFixed(1)} µs); ` +
      `${(mean(compacting)).toFixed(2)} ms per compaction (${compacting.length / 4} per session)`,
  );
}
