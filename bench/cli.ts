/**
 * The CLI as a whole process against the loopback mock server: wall time and peak memory
 * (from `/usr/bin/time -v`, Debian package `time`) of a one-turn task, and of a 50-turn loop
 * of read calls. Run with `deno run -A bench/cli.ts`.
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type MockReply, startMockOpenAIServer } from "../testing.ts";

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));
const RUNS = 15;
const hasTime = await Deno.stat("/usr/bin/time").then(() => true, () => false);

interface Sample {
  wallMs: number;
  peakRssMiB?: number;
}

/** Runs the CLI once; wall time measured here, peak RSS from GNU time when present. */
async function runOnce(url: string, args: string[], cwd: string): Promise<Sample> {
  const cli = [
    Deno.execPath(),
    "run",
    "-A",
    MOD,
    "-m",
    "openai/bench",
    "--output",
    "json",
    ...args,
  ];
  const command = hasTime ? ["/usr/bin/time", "-v", ...cli] : cli;
  const started = performance.now();
  const output = await new Deno.Command(command[0], {
    args: command.slice(1),
    cwd,
    env: { OPENAI_API_KEY: "sk-bench", OPENAI_BASE_URL: url, NO_COLOR: "1" },
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

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function measure(
  name: string,
  replies: (index: number) => MockReply,
  args: string[],
  cwd: string,
) {
  await using server = startMockOpenAIServer({
    replies: (body) =>
      replies(
        (body.messages as unknown[]).filter((m) => (m as { role: string }).role === "assistant")
          .length,
      ),
  });
  await runOnce(server.url, args, cwd); // the module cache is warm from here on
  const samples: Sample[] = [];
  for (let i = 0; i < RUNS; i++) samples.push(await runOnce(server.url, args, cwd));
  const wall = median(samples.map((s) => s.wallMs));
  const rss = samples[0].peakRssMiB === undefined
    ? "n/a (install the time package)"
    : `${median(samples.map((s) => s.peakRssMiB!)).toFixed(1)} MiB`;
  console.log(
    `${name.padEnd(34)} wall ${
      wall.toFixed(0).padStart(5)
    } ms (median of ${RUNS}), peak RSS ${rss}`,
  );
}

const dir = await Deno.makeTempDir({ prefix: "agent_bench_" });
try {
  await Deno.writeTextFile(
    join(dir, "data.txt"),
    Array.from({ length: 200 }, (_, i) => `line ${i}`).join("\n"),
  );
  await measure("one-turn task", () => ({ text: "Hello!" }), ["say hello"], dir);
  await measure(
    "50-turn read-tool loop",
    (turn) =>
      turn < 49
        ? {
          toolCalls: [{
            name: "read",
            arguments: { path: "data.txt", offset: turn + 1, limit: 2 },
          }],
        }
        : { text: "Read it all." },
    ["--max-turns", "60", "read the file"],
    dir,
  );
} finally {
  await Deno.remove(dir, { recursive: true });
}
