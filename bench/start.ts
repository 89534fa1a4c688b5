/**
 * Cold start: a whole `deno run` of the CLI, from nothing to a one-turn answer printed (text
 * output, against the loopback OpenAI-compatible mock server), with `agent --version` and an
 * empty `deno run` beside it for the floor. Wall time measured here, peak RSS from
 * `/usr/bin/time -v` (Debian package `time`) when present; median and range of the runs.
 *
 * The runs use a HOME of their own (a user with a data directory, sessions and memory, as after
 * a first run), and the Deno cache this benchmark runs from.
 *
 * ```
 * deno run -A bench/start.ts                    # this checkout
 * deno run -A bench/start.ts --runs 21 /tmp/old # and another checkout, run by run in turn
 * ```
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { median } from "./stats.ts";

const { values, positionals } = parseArgs({
  args: Deno.args,
  options: { runs: { type: "string", default: "15" } },
  allowPositionals: true,
});
const RUNS = Math.max(1, Number(values.runs));
const hasTime = await Deno.stat("/usr/bin/time").then(() => true, () => false);

/** A checkout to measure: its name and its `mod.ts`. */
interface Checkout {
  name: string;
  mod: string;
}

const CHECKOUTS: Checkout[] = [
  { name: "this", mod: fileURLToPath(new URL("../mod.ts", import.meta.url)) },
  ...positionals.map((dir) => ({ name: dir, mod: join(dir, "mod.ts") })),
];

interface Sample {
  wallMs: number;
  peakRssMiB?: number;
}

/** A scenario: the `deno run` arguments after `run`, and what stdout must say. */
interface Scenario {
  name: string;
  args(mod: string, empty: string): string[];
  expect: RegExp;
  /** The same whatever the checkout: measured once. */
  floor?: boolean;
}

const SCENARIOS: Scenario[] = [
  {
    name: "one-turn answer",
    args: (mod) => ["-A", mod, "-m", "openai/bench", "say hello"],
    expect: /^Hello!\n?$/,
  },
  { name: "--version", args: (mod) => ["-A", mod, "--version"], expect: /^agent \d/ },
  { name: "empty deno run", args: (_, empty) => [empty], expect: /^$/, floor: true },
];

const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_bench_start_" }));
const server = startMockOpenAIServer({ replies: () => ({ text: "Hello!" }) });
try {
  const home = join(dir, "home");
  const cwd = join(dir, "project");
  await Deno.mkdir(home);
  await Deno.mkdir(cwd);
  const empty = join(dir, "empty.ts");
  await Deno.writeTextFile(empty, "");
  const denoDir = await _denoDir();
  const env: Record<string, string> = {
    HOME: home,
    DENO_DIR: denoDir,
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    OPENAI_API_KEY: "sk-bench",
    OPENAI_BASE_URL: server.url,
    NO_COLOR: "1",
  };

  const runOnce = async (args: string[], expect: RegExp): Promise<Sample> => {
    const command = hasTime
      ? ["/usr/bin/time", "-v", Deno.execPath(), "run", ...args]
      : [Deno.execPath(), "run", ...args];
    const started = performance.now();
    const output = await new Deno.Command(command[0], {
      args: command.slice(1),
      cwd,
      env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const wallMs = performance.now() - started;
    const stdout = new TextDecoder().decode(output.stdout);
    const stderr = new TextDecoder().decode(output.stderr);
    if (output.code !== 0 || !expect.test(stdout)) {
      throw new Error(`deno run ${args.join(" ")} failed (${output.code}):\n${stdout}${stderr}`);
    }
    const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)?.[1];
    return { wallMs, peakRssMiB: rss ? Number(rss) / 1024 : undefined };
  };

  console.log(
    `median [range] of ${RUNS} runs after one to warm up` +
      `${CHECKOUTS.length > 1 ? ", the checkouts taking turns run by run" : ""}` +
      `${hasTime ? "" : " (peak RSS needs /usr/bin/time)"}\n`,
  );
  console.log("| scenario | checkout | wall | peak RSS |");
  console.log("| --- | --- | ---: | ---: |");
  for (const scenario of SCENARIOS) {
    const measured = scenario.floor ? CHECKOUTS.slice(0, 1) : CHECKOUTS;
    const samples: Sample[][] = measured.map(() => []);
    for (let i = 0; i <= RUNS; i++) {
      for (const [c, checkout] of measured.entries()) {
        const sample = await runOnce(scenario.args(checkout.mod, empty), scenario.expect);
        if (i > 0) samples[c].push(sample);
      }
    }
    for (const [c, checkout] of measured.entries()) {
      const wall = samples[c].map((sample) => sample.wallMs);
      const rss = samples[c].flatMap((sample) => sample.peakRssMiB ?? []);
      console.log(
        `| ${scenario.name} | ${scenario.floor ? "" : checkout.name} | ${
          _figure(wall, "ms", 0)
        } | ${rss.length ? _figure(rss, "MiB", 1) : "n/a"} |`,
      );
    }
  }
} finally {
  await server.close();
  await Deno.remove(dir, { recursive: true });
}

/** `median unit [min–max]`. */
function _figure(values: number[], unit: string, digits: number): string {
  const low = Math.min(...values).toFixed(digits);
  const high = Math.max(...values).toFixed(digits);
  return `${median(values).toFixed(digits)} ${unit} [${low}–${high}]`;
}

/** The Deno cache this benchmark runs from, so that the runs load their modules from it. */
async function _denoDir(): Promise<string> {
  const info = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  return (JSON.parse(new TextDecoder().decode(info.stdout)) as { denoDir: string }).denoDir;
}
