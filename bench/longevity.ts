/**
 * Longevity figures: `deno task bench:longevity [--sessions N] [--runs M] [--first F]
 * [--after A] [--cli C] [--retention cli|none] [--keep]` (`--help` says what each does).
 * Whether the CLI and the service stay as fast after 100,000 runs as after the first.
 *
 * In a temporary data directory it runs `--first` (default 1,000) runs the way a CLI run does
 * with memory on (the project's memory recalled for the prompt, the run saved as a session, its
 * run loop archived), against the scripted model; then builds, through the real stores, `N`
 * sessions (default 100,000; a few messages each, over 20 projects and a few models) and an
 * archive of `M` run loops (default 100,000, realistic text, the last 3,000 after a recall for
 * their goal as runs do; a fifth of the goals, and of the prompts of the runs, are prompts users
 * repeat); then measures, as median and p95 of repeated samples: a session read by id and by an
 * 8-character prefix, a listing page (the first and a deep one, where the store pages; the whole
 * listing otherwise), `latest(cwd)`, and `--after` (default 200) more runs, each beside a run on
 * the memory as it was halfway through the first runs. The same runs then end to end, as users
 * see them: through `agent serve` (a service on each data directory) and as `--cli` (default 20)
 * rounds of one-shot CLI processes, against a loopback server speaking OpenAI's streaming
 * format. It prints the bytes
 * per archived run and the data directory's size, and the load average, since the machine's
 * other work shows in every figure; and the run-latency ratio of each block of 50 rounds, whose
 * spread is how far one run of the benchmark can be trusted.
 */

import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_RETENTION, memoryPath } from "../lib/cli/memory.ts";
import { openMemory } from "../lib/memory/mod.ts";
import { fileSessionStore, type SessionStore } from "../lib/session/mod.ts";
import { buildArchive, buildSessions, pairedRuns, runs } from "./longevity_build.ts";
import { du, figures, pagingOf, sample } from "./longevity_measure.ts";
import { cliRuns, serviceRuns } from "./longevity_e2e.ts";
import { below, toolOutput } from "./longevity_workload.ts";
import { median } from "./stats.ts";

const flags = _flags(() =>
  parseArgs({
    args: Deno.args,
    options: {
      sessions: { type: "string", default: "100000" },
      runs: { type: "string", default: "100000" },
      first: { type: "string", default: "1000" },
      after: { type: "string", default: "200" },
      cli: { type: "string", default: "20" },
      retention: { type: "string", default: "cli" },
      keep: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  })
);
if (flags.values.help) {
  console.log(`deno task bench:longevity [options]

Runs the way a CLI run does with memory on, builds a long-lived data directory through the real
stores, and times session reads, listing pages, latest(cwd) and runs against it. In a temporary
directory, removed at the end.

  --sessions N     sessions to build (default 100000)
  --runs M         run loops to archive (default 100000)
  --first F        runs on an empty memory first (default 1000); a copy of the memory halfway
                   through them ("the memory of run F/2") is run beside the whole archive at the end
  --after A        rounds of runs measured at the end (default 200): in this process, and
                   through agent serve (one service on each data directory)
  --cli C          rounds of one-shot CLI runs measured at the end (default 20)
  --retention R    cli (the CLI's default retention policy, the default) or none (keep all)
  --keep           keep the data directory and print where it is
  -h, --help       this text`);
  Deno.exit(0);
}
/** The flags as `parse` reads them; a bad one ends the benchmark with what is wrong. */
function _flags<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    return _refuse((error as Error).message);
  }
}
/** Ends the benchmark with what is wrong in its flags. */
function _refuse(message: string): never {
  console.error(`${message} (see --help)`);
  Deno.exit(2);
}
const count = (name: keyof typeof flags.values): number => {
  const value = Number(flags.values[name]);
  if (!Number.isInteger(value) || value < 1) {
    _refuse(`Bad --${name} ${flags.values[name]}: give a whole number of 1 or more`);
  }
  return value;
};
const SESSIONS = count("sessions");
const RUNS = count("runs");
const FIRST = count("first");
const AFTER = count("after");
const CLI = count("cli");
const PAGE = 50;
if (flags.values.retention !== "cli" && flags.values.retention !== "none") {
  _refuse(`Bad --retention ${flags.values.retention}: give cli or none`);
}
/**
 * What memory keeps: the CLI's default retention policy (a CLI run opens its memory with it), or
 * everything (`--retention none`: archiving and recall against the whole archive; the CLI and the
 * service are set to keep everything too).
 */
const RETENTION = flags.values.retention === "none" ? undefined : DEFAULT_RETENTION;

const MODELS = [
  "openai/gpt-4.1-mini",
  "openai/gpt-5",
  "anthropic/claude-sonnet-4-5",
  "ollama/qwen3",
];

const log = (text: string) => console.error(text);
const load = () => loadavg().map((value) => value.toFixed(2)).join(", ");
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const thousands = (n: number) => n.toLocaleString("en-US");

// Main ----------------------------------------------------------------------------------------

// Side by side in a temporary directory (its real path, as the CLI sees its working directory):
// the data directory as the CLI and the service keep it (AGENT_DATA_DIR), a second one, "early",
// for the memory as it was halfway through the first runs, the agent's settings, and the
// projects, the busiest (where runs run) a real directory.
const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "longevity_bench_" }));
const dataDir = join(root, "data");
const sessionsDir = join(dataDir, "sessions");
const earlyDir = join(root, "early");
const configDir = join(root, "config");
const PROJECTS = Array.from({ length: 20 }, (_, i) => join(root, "projects", `app-${i + 1}`));
const runCwd = PROJECTS[0];
const memoryFile = memoryPath(dataDir, runCwd);
const earlyMemoryFile = memoryPath(earlyDir, runCwd);
for (const dir of [dataDir, earlyDir, dirname(memoryFile), dirname(earlyMemoryFile), configDir]) {
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
}
await Deno.mkdir(join(runCwd, "src"), { recursive: true });
await Deno.writeTextFile(join(runCwd, "src", "main.ts"), toolOutput());
if (!RETENTION) {
  await Deno.writeTextFile(
    join(configDir, "settings.json"),
    JSON.stringify({ memory: { retention: false } }),
  );
}
console.log(
  `longevity: ${thousands(SESSIONS)} sessions, ${thousands(RUNS)} archived run loops, ` +
    `memory kept ${
      RETENTION ? `by the CLI's default retention ${JSON.stringify(RETENTION)}` : "whole"
    }, in ${root}; load average at start ${load()} (${navigator.hardwareConcurrency} cores)`,
);
// Ctrl+C leaves nothing behind either. The services and CLI runs get it from the terminal too:
// what they still write as they stop is removed on a second try.
Deno.addSignalListener("SIGINT", async () => {
  for (let tries = 0; !flags.values.keep && tries < 20; tries++) {
    try {
      await Deno.remove(root, { recursive: true });
      break;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  Deno.exit(130);
});
const started = performance.now();
const figure = figures(log);
try {
  const store = fileSessionStore({ dir: sessionsDir });
  const openOptions = { path: memoryFile, ...(RETENTION ? { retention: RETENTION } : {}) };
  let memory = await openMemory(openOptions);

  log(`${thousands(FIRST)} runs on an empty memory…`);
  const half = Math.ceil(FIRST / 2);
  const firstHalf = await runs(half, { store, memory, cwd: runCwd, log });
  // The memory as it was halfway through the first runs, kept to run beside the whole archive.
  await memory.close();
  await Deno.copyFile(memoryFile, earlyMemoryFile);
  memory = await openMemory(openOptions);
  const secondHalf = await runs(FIRST - half, { store, memory, cwd: runCwd, log });
  const firstRuns = {
    total: [...firstHalf.total, ...secondHalf.total],
    recall: [...firstHalf.recall, ...secondHalf.recall],
    archive: [...firstHalf.archive, ...secondHalf.archive],
  };
  const firstStats = memory.stats();

  log(`building ${thousands(SESSIONS)} sessions…`);
  let begun = performance.now();
  const { ids, perProject } = await buildSessions(store, SESSIONS, {
    projects: PROJECTS,
    models: MODELS,
    log,
  });
  const sessionsBuilt = performance.now() - begun;

  log(`building an archive of ${thousands(RUNS)} run loops…`);
  begun = performance.now();
  const archiveCosts = await buildArchive(memory, Math.max(0, RUNS - firstRuns.total.length), log);
  const archived = Math.max(RUNS, firstRuns.total.length);
  const archiveBuilt = performance.now() - begun;
  console.log(
    `built ${thousands(SESSIONS)} sessions in ${seconds(sessionsBuilt)}, ${
      thousands(RUNS)
    } run loops in ${seconds(archiveBuilt)} (an archive: ${
      archiveCosts[0]?.toFixed(2)
    } ms each in the first ${thousands(Math.min(5000, archived - firstRuns.total.length))}, ${
      archiveCosts.at(-1)?.toFixed(2)
    } ms in the last)`,
  );

  console.log(`load average before measuring: ${load()}`);
  const biggest = [...perProject].sort((a, b) => b[1] - a[1])[0];
  const [bigCwd, bigCount] = biggest;
  const pick = () => ids[below(ids.length)];

  // Session reads.
  log("session reads…");
  const byId = await sample(() => store.load(pick()), { max: 40 });
  figure.add("session read by id: load(id)", byId.times, 5);
  const byPrefix = await sample(() => store.load(pick().slice(0, 8)), { max: 40 });
  figure.add("session read by prefix: load(8 chars)", byPrefix.times, 10);
  const cold = await sample(async () => {
    // A store that holds something open (an index) says so with close().
    const fresh = fileSessionStore({ dir: sessionsDir }) as SessionStore & {
      close?: () => unknown;
    };
    try {
      await fresh.load(pick());
    } finally {
      await fresh.close?.();
    }
  }, {
    max: 20,
  });
  figure.add("session read by id, on a new store each time (as a CLI run)", cold.times);
  console.log(
    `the first read after the build: ${byId.first.toFixed(1)} ms; the first on a new store: ${
      cold.first.toFixed(1)
    } ms`,
  );

  // Listings.
  log("listings…");
  const smallest = [...perProject].filter(([, n]) => n > 2).sort((a, b) => a[1] - b[1])[0];
  const paging = smallest ? await pagingOf(store, smallest[0]) : undefined;
  if (paging) {
    const by = [paging.offset && "offset", paging.cursor && "cursor"].filter(Boolean).join(" and ");
    console.log(`the listing pages (by ${by}): pages of ${PAGE} are timed`);
    const all = ids.length + FIRST;
    for (
      const [what, cwd, n] of [["all sessions", undefined, all], [
        `project of ${thousands(bigCount)}`,
        bigCwd,
        bigCount,
      ]] as const
    ) {
      const depth = Math.max(PAGE, Math.min(10_000, Math.floor(n / 2 / PAGE) * PAGE));
      const timePage = async (name: string, start?: { offset?: number; cursor?: unknown }) => {
        const timed = await sample(async () => {
          const page = await paging.page(cwd, PAGE, start);
          if (page.items.length === 0) throw new Error(`${name}: an empty page`);
        }, { max: 30 });
        figure.add(name, timed.times, 50);
      };
      await timePage(`listing page, ${what}, first`);
      if (paging.cursor) {
        const cursor = await paging.cursorAt(cwd, PAGE, depth);
        await timePage(`listing page, ${what}, at ${thousands(depth)} by cursor`, { cursor });
      }
      if (paging.offset) {
        await timePage(`listing page, ${what}, at ${thousands(depth)} by offset`, {
          offset: depth,
        });
      }
    }
  } else {
    console.log("the listing does not page: the whole list(cwd) and list() are timed");
    const project = await sample(() => store.list(bigCwd), { max: 10, budgetMs: 30_000 });
    figure.add(`whole listing, project of ${thousands(bigCount)}: list(cwd)`, project.times, 50);
    const all = await sample(() => store.list(), { max: 5, min: 2, budgetMs: 60_000 });
    figure.add(`whole listing, all sessions: list()`, all.times, 50);
  }
  const latest = await sample(() => store.latest(bigCwd), { max: 20, budgetMs: 30_000 });
  figure.add(`latest(cwd), project of ${thousands(bigCount)}`, latest.times);

  // Memory: opening it (every CLI run does), runs after the whole archive, size.
  log("memory…");
  await memory.close();
  const opened = await sample(async () => {
    const again = await openMemory(openOptions);
    await again.close();
  }, { max: 20 });
  figure.add(`open the memory of ${thousands(RUNS)} run loops`, opened.times);
  memory = await openMemory(openOptions);
  // Runs on the whole archive, alternated with runs on the memory as it was halfway through the
  // first runs (and an empty session store), so that the machine's load weighs on both alike.
  const early = await openMemory({ ...openOptions, path: earlyMemoryFile });
  const earlyStore = fileSessionStore({ dir: join(earlyDir, "sessions") });
  log(`${thousands(AFTER)} rounds of runs, the whole archive beside the early memory…`);
  const [lateOn, earlyOn, lateOff, earlyOff] = await pairedRuns(AFTER, [
    { store, memory, cwd: runCwd },
    { store: earlyStore, memory: early, cwd: runCwd },
    { store, cwd: runCwd },
    { store: earlyStore, cwd: runCwd },
  ], { budgetMs: 180_000, log });
  const after = memory.stats();
  await memory.close();
  await early.close();
  for (const closing of [store, earlyStore]) {
    await (closing as SessionStore & { close?: () => unknown }).close?.();
  }
  // Sizes as the runs above left them, before the runs end to end add theirs.
  const sessionsSize = await du(sessionsDir);
  const memorySize = await du(join(dataDir, "memory"));
  const total = await du(dataDir);

  // The same runs end to end, as users see them: through `agent serve`, and as one-shot CLI
  // processes, on this data directory and on the early one, alternated (nothing else has either
  // open).
  const places = { dataDirs: [dataDir, earlyDir], cwd: runCwd, configDir };
  log(`${thousands(AFTER)} rounds of runs through agent serve, on each data directory…`);
  const [lateService, earlyService] = await serviceRuns(AFTER, places, { budgetMs: 90_000, log });
  log(`${thousands(CLI)} rounds of one-shot CLI runs, on each data directory…`);
  const [lateCli, earlyCli] = await cliRuns(CLI, places, { budgetMs: 120_000, log });

  const firstN = thousands(firstRuns.total.length);
  const pairs = thousands(lateOn.total.length);
  const wholeN = thousands(archived);
  const first = figure.add(`run, the first ${firstN} runs (as they ran)`, firstRuns.total);
  figure.add(`  of which recall`, firstRuns.recall);
  figure.add(`  of which archive`, firstRuns.archive);
  const earlyFigure = figure.add(
    `run, memory of run ${thousands(half)} (${pairs}, alternated)`,
    earlyOn.total,
  );
  figure.add(`  of which recall`, earlyOn.recall);
  figure.add(`  of which archive`, earlyOn.archive);
  const late = figure.add(
    `run, memory of ${wholeN} run loops (${pairs}, alternated)`,
    lateOn.total,
  );
  late.target = `≤ ${(earlyFigure.median * 1.2).toFixed(1)} ms`;
  late.ok = late.median <= earlyFigure.median * 1.2;
  figure.add(`  of which recall`, lateOn.recall);
  figure.add(`  of which archive`, lateOn.archive);
  figure.add(`run, memory off, a new session store (alternated)`, earlyOff.total);
  figure.add(`run, memory off, ${thousands(SESSIONS)} sessions (alternated)`, lateOff.total);
  const endToEnd = [
    ["agent serve: POST /v1/runs", lateService, earlyService],
    ["one-shot CLI process", lateCli, earlyCli],
  ] as const;
  const endToEndRatios = endToEnd.map(([what, lateTimes, earlyTimes]) => {
    const before = figure.add(`${what}, the early data directory`, earlyTimes);
    const now = figure.add(`${what}, ${thousands(SESSIONS)} sessions and the archive`, lateTimes);
    now.target = `≤ ${(before.median * 1.2).toFixed(1)} ms`;
    now.ok = now.median <= before.median * 1.2;
    const blocks = _blockRatios(lateTimes, earlyTimes, 50);
    const spread = blocks.length > 1
      ? ` (blocks of 50 rounds: ${blocks[0].toFixed(2)}x to ${blocks.at(-1)!.toFixed(2)}x)`
      : "";
    return `${what} ${(now.median / before.median).toFixed(2)}x ${
      now.ok ? "ok" : "MISSED"
    }${spread}`;
  });

  // The table.
  console.log(`\nload average after measuring: ${load()}`);
  console.log(figure.table());
  const ratio = late.median / earlyFigure.median;
  const free = (after as { freeBytes?: number }).freeBytes;
  console.log(
    `run p50 on the whole archive / on the memory of run ${thousands(half)}, alternated: ${
      ratio.toFixed(2)
    }x (target ≤ 1.20x) ${
      ratio <= 1.2 ? "ok" : "MISSED"
    }; / the first ${firstN} runs as they ran: ${(late.median / first.median).toFixed(2)}x`,
  );
  console.log(
    `end to end, on the whole data directory / on the early one, alternated (target ≤ 1.20x): ${
      endToEndRatios.join("; ")
    }`,
  );
  const blocks = _blockRatios(lateOn.total, earlyOn.total, 50);
  if (blocks.length > 1) {
    console.log(
      `  the same ratio in ${blocks.length} blocks of 50 rounds each (the machine's drift): ${
        blocks[0].toFixed(2)
      }x to ${blocks.at(-1)!.toFixed(2)}x, median ${median(blocks).toFixed(2)}x`,
    );
  }
  console.log(
    `memory holds ${thousands(after.runLoops)} run loops, ${thousands(after.segments)} segments, ${
      (after.bytes / 1e6).toFixed(1)
    } MB: ${
      thousands(Math.round(after.bytes / (archived + lateOn.total.length)))
    } B per archived run ` +
      `(the first ${firstN} runs: ${
        thousands(Math.round(firstStats.bytes / firstRuns.total.length))
      } B each); files on disk ${(memorySize.bytes / 1e6).toFixed(1)} MB${
        free === undefined ? "" : `, ${(free / 1e6).toFixed(1)} MB of it free pages`
      }`,
  );
  console.log(
    `data directory: ${(total.bytes / 1e6).toFixed(1)} MB (sessions ${
      (sessionsSize.bytes / 1e6).toFixed(1)
    } MB in ${thousands(sessionsSize.files)} files, memory ${
      (memorySize.bytes / 1e6).toFixed(1)
    } MB), before the runs end to end; ${seconds(performance.now() - started)} in all`,
  );
} finally {
  if (flags.values.keep) console.log(`kept ${root}`);
  else await Deno.remove(root, { recursive: true });
}

/**
 * The ratio of the medians of `late` and `early`, runs of the same rounds, in each block of
 * `size` rounds (a last one shorter than half a block is left out): sorted.
 */
function _blockRatios(late: number[], early: number[], size: number): number[] {
  const ratios: number[] = [];
  for (let at = 0; at + size / 2 <= Math.min(late.length, early.length); at += size) {
    ratios.push(median(late.slice(at, at + size)) / median(early.slice(at, at + size)));
  }
  return ratios.sort((a, b) => a - b);
}
