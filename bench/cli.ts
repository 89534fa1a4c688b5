/**
 * The CLI as a whole process against the loopback mock servers: wall time and peak memory
 * (from `/usr/bin/time -v`, Debian package `time`) of a one-turn task, of a 50-turn loop of read
 * calls, and of a 200-turn loop that reads the same 30 KB file every turn (with the size of its
 * last request: what a long session costs), on the OpenAI-compatible provider (Chat Completions
 * and the Responses API, whose answers each carry a reasoning item sent back on every later turn)
 * and on the Anthropic provider. Run with
 * `deno run -A bench/cli.ts [--only <scenario words>] [--runs <n>]`.
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  startMockAnthropicServer,
  startMockOpenAIServer,
  startMockResponsesServer,
} from "../lib/testing/mod.ts";
import { median } from "./stats.ts";

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));
const { values: flags } = parseArgs({
  args: Deno.args,
  options: { only: { type: "string" }, runs: { type: "string" } },
});
const RUNS = flags.runs ? Number(flags.runs) : 15;
const hasTime = await Deno.stat("/usr/bin/time").then(() => true, () => false);

interface Sample {
  wallMs: number;
  peakRssMiB?: number;
  /** The size of the run's last request body. */
  lastRequestBytes: number;
}

/** A mock server as the benchmark uses it. */
interface Server {
  url: string;
  requests: Array<{ bytes: number }>;
  close(): Promise<void>;
}

/** A provider to measure: its model, the env that points it at a mock server, the server. */
interface Target {
  name: string;
  model: string;
  start(script: (turn: number) => Step): Server;
  env(url: string): Record<string, string>;
  /** Flags the target adds. */
  args?: string[];
}

/** One scripted answer: text, or one read call. */
type Step = { text: string } | { read: { path: string; offset?: number; limit?: number } };

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

/**
 * Runs the CLI once; wall time measured here, peak RSS from GNU time when present, the last
 * request's size from the server (whose record of requests is then emptied).
 */
async function runOnce(
  target: Target,
  server: Server,
  scenario: Scenario,
  cwd: string,
): Promise<Sample> {
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
    ...scenario.args,
  ];
  const command = hasTime ? ["/usr/bin/time", "-v", ...cli] : cli;
  const started = performance.now();
  const output = await new Deno.Command(command[0], {
    args: command.slice(1),
    cwd,
    env: { ...target.env(server.url), ...scenario.env?.(cwd), NO_COLOR: "1" },
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
  const lastRequestBytes = server.requests.at(-1)?.bytes ?? 0;
  server.requests.length = 0;
  return { wallMs, peakRssMiB: rss ? Number(rss) / 1024 : undefined, lastRequestBytes };
}

/**
 * Median wall time and peak RSS of a scenario on each target. The targets take turns, run by
 * run, so that a machine that slows down or speeds up meanwhile weighs on them alike.
 */
async function measure(
  scenario: Scenario,
  cwd: string,
): Promise<Array<{ wall: number; rss?: number; lastRequestBytes: number }>> {
  const servers = TARGETS.map((target) => target.start(scenario.script));
  const runs = scenario.runs ?? RUNS;
  try {
    const samples: Sample[][] = TARGETS.map(() => []);
    for (let i = 0; i <= runs; i++) {
      for (const [t, target] of TARGETS.entries()) {
        const sample = await runOnce(target, servers[t], scenario, cwd);
        if (i > 0) samples[t].push(sample); // the first run warms the module cache
      }
    }
    return samples.map((mine) => {
      const rss = mine.map((s) => s.peakRssMiB).filter((v): v is number => v !== undefined);
      return {
        wall: median(mine.map((s) => s.wallMs)),
        rss: rss.length ? median(rss) : undefined,
        lastRequestBytes: median(mine.map((s) => s.lastRequestBytes)),
      };
    });
  } finally {
    for (const server of servers) await server.close();
  }
}

/**
 * A scenario: the model's script, the CLI's arguments, how many runs (default `RUNS`), and
 * variables the CLI gets besides the provider's (a function of the working directory).
 */
interface Scenario {
  name: string;
  script: (turn: number) => Step;
  args: string[];
  runs?: number;
  env?: (dir: string) => Record<string, string>;
}

const SCENARIOS: Scenario[] = [
  { name: "one-turn task", script: () => ({ text: "Hello!" }), args: ["say hello"] },
  {
    name: "50-turn read-tool loop",
    script: (turn) =>
      turn < 49
        ? { read: { path: "data.txt", offset: turn + 1, limit: 2 } }
        : { text: "Read it all." },
    args: ["--max-turns", "60", "read the file"],
  },
  {
    // The same 30 KB file read again every turn. The call alternates between two spellings of
    // the same read, as a model that re-reads a file it keeps working on does; a call repeated
    // word for word would be stopped by the repeat guard.
    name: "200-turn re-read loop (30 KB file)",
    script: (turn) =>
      turn < 200
        ? { read: turn % 2 === 0 ? { path: "big.txt" } : { path: "big.txt", offset: 1 } }
        : { text: "Read it often." },
    args: ["--max-turns", "210", "read the file again and again"],
    runs: Math.min(RUNS, 5),
    // Models whose window takes the whole session (as the largest do): nothing is compacted,
    // so the requests weigh what the conversation does.
    env: (dir) => ({ AGENT_CONFIG_DIR: join(dir, "config") }),
  },
];

const dir = await Deno.makeTempDir({ prefix: "agent_bench_" });
try {
  await Deno.writeTextFile(
    join(dir, "data.txt"),
    Array.from({ length: 200 }, (_, i) => `line ${i}`).join("\n"),
  );
  // 30 KB of source-like text: 600 lines of 50 bytes.
  await Deno.writeTextFile(
    join(dir, "big.txt"),
    Array.from(
      { length: 600 },
      (_, i) => `const value${String(i).padStart(4, "0")} = ${"x".repeat(28)};\n`,
    )
      .join(""),
  );
  await Deno.mkdir(join(dir, "config"));
  const wide = { contextWindow: 100_000_000 };
  await Deno.writeTextFile(
    join(dir, "config", "settings.json"),
    JSON.stringify({
      models: { "openai/bench": wide, "openai/gpt-5-bench": wide, "anthropic/bench": wide },
    }),
  );
  console.log(
    `median of ${RUNS} runs (the 200-turn loop: ${Math.min(RUNS, 5)}), the providers taking ` +
      `turns${hasTime ? "" : " (peak RSS needs /usr/bin/time)"}\n`,
  );
  console.log("| scenario | provider | wall | peak RSS | last request | vs openai |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: |");
  const only = flags.only?.toLowerCase();
  for (const scenario of SCENARIOS) {
    if (only && !scenario.name.toLowerCase().includes(only)) continue;
    const results = await measure(scenario, dir);
    const base = results[0].wall;
    for (const [t, { wall, rss, lastRequestBytes }] of results.entries()) {
      const target = TARGETS[t];
      const ratio = `${((wall / base - 1) * 100).toFixed(1)}%`;
      console.log(
        `| ${scenario.name} | ${target.name} | ${wall.toFixed(0)} ms | ${
          rss === undefined ? "n/a" : `${rss.toFixed(1)} MiB`
        } | ${_kb(lastRequestBytes)} | ${t === 0 ? "" : ratio} |`,
      );
    }
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}

/** Bytes in kB (1,000) or MB below and above a million. */
function _kb(bytes: number): string {
  return bytes < 1e6 ? `${(bytes / 1e3).toFixed(1)} kB` : `${(bytes / 1e6).toFixed(2)} MB`;
}
