/**
 * The CLI as a whole process against the loopback mock servers: wall time and peak memory
 * (from `/usr/bin/time -v`, Debian package `time`) of a one-turn task, and of a 50-turn loop
 * of read calls, on the OpenAI-compatible provider (Chat Completions and the Responses API, whose
 * answers each carry a reasoning item sent back on every later turn) and on the Anthropic
 * provider. Run with
 * `deno run -A bench/cli.ts`.
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  startMockAnthropicServer,
  startMockOpenAIServer,
  startMockResponsesServer,
} from "../lib/testing/mod.ts";
import { median } from "./stats.ts";

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));
const RUNS = 15;
const hasTime = await Deno.stat("/usr/bin/time").then(() => true, () => false);

interface Sample {
  wallMs: number;
  peakRssMiB?: number;
}

/** A provider to measure: its model, the env that points it at a mock server, the server. */
interface Target {
  name: string;
  model: string;
  start(script: (turn: number) => Step): { url: string; close(): Promise<void> };
  env(url: string): Record<string, string>;
  /** Flags the target adds. */
  args?: string[];
}

/** One scripted answer: text, or one read call. */
type Step = { text: string } | { read: { path: string; offset: number; limit: number } };

const TARGETS: Target[] = [
  {
    name: "openai",
    model: "openai/bench",
    start: (script) =>
      startMockOpenAIServer({
        replies: (body) => {
          const step = script(_turns(body));
          return "text" in step
            ? { text: step.text }
            : { toolCalls: [{ name: "read", arguments: step.read }] };
        },
      }),
    env: (url) => ({ OPENAI_API_KEY: "sk-bench", OPENAI_BASE_URL: url }),
  },
  {
    name: "openai-responses",
    // A reasoning model: each answer's encrypted reasoning goes back with every later turn.
    model: "openai/gpt-5-bench",
    args: ["--api", "openai-responses"],
    start: (script) =>
      startMockResponsesServer({
        replies: (body) => {
          const input = body.input as Array<{ type?: string; role?: string }>;
          const turns = input.filter((item) =>
            item.type === "function_call" || (item.type === "message" && item.role === "assistant")
          ).length;
          const step = script(turns);
          return "text" in step
            ? { reasoning: ["Answering."], text: step.text }
            : { reasoning: ["Reading on."], toolCalls: [{ name: "read", arguments: step.read }] };
        },
      }),
    env: (url) => ({ OPENAI_API_KEY: "sk-bench", OPENAI_BASE_URL: url }),
  },
  {
    name: "anthropic",
    model: "anthropic/bench",
    start: (script) =>
      startMockAnthropicServer({
        replies: (body) => {
          const step = script(_turns(body));
          return "text" in step
            ? { text: step.text }
            : { toolCalls: [{ name: "read", input: step.read }] };
        },
      }),
    env: (url) => ({ ANTHROPIC_API_KEY: "sk-ant-bench", ANTHROPIC_BASE_URL: url }),
  },
];

/** How many answers the model gave before this request. */
function _turns(body: Record<string, unknown>): number {
  return (body.messages as Array<{ role: string }>).filter((m) => m.role === "assistant").length;
}

/** Runs the CLI once; wall time measured here, peak RSS from GNU time when present. */
async function runOnce(target: Target, url: string, args: string[], cwd: string): Promise<Sample> {
  const cli = [
    Deno.execPath(),
    "run",
    "-A",
    MOD,
    "-m",
    target.model,
    "--output",
    "json",
    ...target.args ?? [],
    ...args,
  ];
  const command = hasTime ? ["/usr/bin/time", "-v", ...cli] : cli;
  const started = performance.now();
  const output = await new Deno.Command(command[0], {
    args: command.slice(1),
    cwd,
    env: { ...target.env(url), NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const wallMs = performance.now() - started;
  const stderr = new TextDecoder().decode(output.stderr);
  if (output.code !== 0) throw new Error(`the CLI failed (${output.code}):\n${stderr}`);
  const status = JSON.parse(new TextDecoder().decode(output.stdout)).status;
  if (status !== "success") throw new Error(`the run ended with ${status}`);
  const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)?.[1];
  return { wallMs, peakRssMiB: rss ? Number(rss) / 1024 : undefined };
}

/**
 * Median wall time and peak RSS of a scenario on each target. The targets take turns, run by
 * run, so that a machine that slows down or speeds up meanwhile weighs on them alike.
 */
async function measure(
  script: (turn: number) => Step,
  args: string[],
  cwd: string,
): Promise<Array<{ wall: number; rss?: number }>> {
  const servers = TARGETS.map((target) => target.start(script));
  try {
    const samples: Sample[][] = TARGETS.map(() => []);
    for (let i = 0; i <= RUNS; i++) {
      for (const [t, target] of TARGETS.entries()) {
        const sample = await runOnce(target, servers[t].url, args, cwd);
        if (i > 0) samples[t].push(sample); // the first run warms the module cache
      }
    }
    return samples.map((mine) => {
      const rss = mine.map((s) => s.peakRssMiB).filter((v): v is number => v !== undefined);
      return {
        wall: median(mine.map((s) => s.wallMs)),
        rss: rss.length ? median(rss) : undefined,
      };
    });
  } finally {
    for (const server of servers) await server.close();
  }
}

const SCENARIOS: Array<{ name: string; script: (turn: number) => Step; args: string[] }> = [
  { name: "one-turn task", script: () => ({ text: "Hello!" }), args: ["say hello"] },
  {
    name: "50-turn read-tool loop",
    script: (turn) =>
      turn < 49
        ? { read: { path: "data.txt", offset: turn + 1, limit: 2 } }
        : { text: "Read it all." },
    args: ["--max-turns", "60", "read the file"],
  },
];

const dir = await Deno.makeTempDir({ prefix: "agent_bench_" });
try {
  await Deno.writeTextFile(
    join(dir, "data.txt"),
    Array.from({ length: 200 }, (_, i) => `line ${i}`).join("\n"),
  );
  console.log(
    `median of ${RUNS} runs, the providers taking turns` +
      `${hasTime ? "" : " (peak RSS needs /usr/bin/time)"}\n`,
  );
  console.log("| scenario | provider | wall | peak RSS | vs openai |");
  console.log("| --- | --- | ---: | ---: | ---: |");
  for (const scenario of SCENARIOS) {
    const results = await measure(scenario.script, scenario.args, dir);
    const base = results[0].wall;
    for (const [t, { wall, rss }] of results.entries()) {
      const target = TARGETS[t];
      const ratio = `${((wall / base - 1) * 100).toFixed(1)}%`;
      console.log(
        `| ${scenario.name} | ${target.name} | ${wall.toFixed(0)} ms | ${
          rss === undefined ? "n/a" : `${rss.toFixed(1)} MiB`
        } | ${t === 0 ? "" : ratio} |`,
      );
    }
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}
