/**
 * What `bench/longevity.ts` writes: runs as the CLI does them (against the scripted model), and
 * the sessions and run loops of a long-lived data directory, written through the real stores.
 */

import { z } from "zod";
import { defineTool } from "../mod.ts";
import { startConversation } from "../lib/conversation/mod.ts";
import type { MemoryStore } from "../lib/memory/mod.ts";
import { runLoops } from "../lib/runloop/mod.ts";
import type { SessionStore } from "../lib/session/mod.ts";
import { scriptedModel } from "../lib/testing/mod.ts";
import {
  answer,
  archivedRunLoop,
  prompt,
  sentence,
  sessionMessages,
  toolOutput,
  zipfIndex,
} from "./longevity_workload.ts";

const _seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const _thousands = (n: number) => n.toLocaleString("en-US");

const _lookTool = defineTool({
  name: "look",
  description: "Shows a file",
  parameters: z.object({ path: z.string() }),
  execute: () => toolOutput(),
});

/**
 * One run as the CLI does it: with a memory, memories recalled for the prompt and the `recall`
 * tool offered; the run saved as a session; its run loop archived once the answer is out. The
 * model looks at a file, then answers. Resolves to its time in ms.
 */
export async function run(
  store: SessionStore,
  memory: MemoryStore | undefined,
  cwd: string,
): Promise<number> {
  const start = performance.now();
  const model = scriptedModel(
    (_request, call) =>
      call === 0
        ? { reasoning: sentence(), toolCalls: [{ name: "look", input: { path: "src/main.ts" } }] }
        : { text: answer() },
    { record: false },
  );
  const loops = runLoops({ memory, deferArchive: true });
  const driver = startConversation({
    model,
    modelSpec: "openai/gpt-4.1-mini",
    tools: [_lookTool],
    store,
    memory,
    runLoops: loops,
    cwd,
  });
  try {
    const events = driver.send(prompt(), { complete: true });
    let step = await events.next();
    while (!step.done) step = await events.next();
    if (step.value.status !== "success") {
      throw new Error(`A run ended ${step.value.status}: ${step.value.error ?? ""}`);
    }
    await loops.archivePending();
  } finally {
    await driver.close();
  }
  return performance.now() - start;
}

/** Runs' times in ms: whole, and what recalling (`retrieve`) and archiving took of it. */
export interface RunTimes {
  /** Each run, whole. */
  total: number[];
  /** Each run's calls of `retrieve` (the memories offered for the prompt). */
  recall: number[];
  /** Each run's calls of `archive` (its run loop, once the answer is out). */
  archive: number[];
}

/** Up to `n` runs one after another (at least 30, then until `budgetMs`); their times. */
export async function runs(
  n: number,
  options: {
    store: SessionStore;
    memory?: MemoryStore;
    cwd: string;
    budgetMs?: number;
    log: (text: string) => void;
  },
): Promise<RunTimes> {
  const { store, cwd, budgetMs = Infinity, log } = options;
  const spent = { retrieve: 0, archive: 0 };
  const memory = options.memory && _timed(options.memory, spent);
  const times: RunTimes = { total: [], recall: [], archive: [] };
  const begun = performance.now();
  for (let i = 0; i < n; i++) {
    spent.retrieve = spent.archive = 0;
    times.total.push(await run(store, memory, cwd));
    times.recall.push(spent.retrieve);
    times.archive.push(spent.archive);
    if ((i + 1) % 250 === 0) log(`  ${i + 1} runs, ${_seconds(performance.now() - begun)}`);
    if (i >= 30 && performance.now() - begun > budgetMs) break;
  }
  return times;
}

/** Where a run runs: a session store, a memory or none, a project. */
export interface RunPlace {
  /** The session store. */
  store: SessionStore;
  /** The memory; none: memory off. */
  memory?: MemoryStore;
  /** The project. */
  cwd: string;
}

/**
 * Runs in each place in turn, `n` rounds (at least 30, then until `budgetMs`), the order of
 * the places turned each round, so that the machine's load weighs on all alike; their times,
 * place by place.
 */
export async function pairedRuns(
  n: number,
  places: readonly RunPlace[],
  options: { budgetMs?: number; log: (text: string) => void },
): Promise<RunTimes[]> {
  const { budgetMs = Infinity, log } = options;
  const spent = places.map(() => ({ retrieve: 0, archive: 0 }));
  const timed = places.map((place, i) => ({
    ...place,
    memory: place.memory && _timed(place.memory, spent[i]),
  }));
  const times: RunTimes[] = places.map(() => ({ total: [], recall: [], archive: [] }));
  const begun = performance.now();
  for (let round = 0; round < n; round++) {
    for (let k = 0; k < places.length; k++) {
      const i = (round + k) % places.length;
      spent[i].retrieve = spent[i].archive = 0;
      times[i].total.push(await run(timed[i].store, timed[i].memory, timed[i].cwd));
      times[i].recall.push(spent[i].retrieve);
      times[i].archive.push(spent[i].archive);
    }
    if ((round + 1) % 50 === 0) {
      log(`  ${round + 1} rounds, ${_seconds(performance.now() - begun)}`);
    }
    if (round >= 30 && performance.now() - begun > budgetMs) break;
  }
  return times;
}

/** The memory, its `retrieve` and `archive` timed into `spent`. */
function _timed(
  memory: MemoryStore,
  spent: { retrieve: number; archive: number },
): MemoryStore {
  return new Proxy(memory, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (key !== "retrieve" && key !== "archive") return value.bind(target);
      return async (...args: unknown[]) => {
        const start = performance.now();
        try {
          return await value.apply(target, args);
        } finally {
          spent[key] += performance.now() - start;
        }
      };
    },
  });
}

/**
 * Writes `n` sessions through the store, 32 at a time, in `projects` (the first the busiest)
 * with `models`: their ids, and how many each project got.
 */
export async function buildSessions(
  store: SessionStore,
  n: number,
  options: { projects: readonly string[]; models: readonly string[]; log: (text: string) => void },
): Promise<{ ids: string[]; perProject: Map<string, number> }> {
  const { projects, models, log } = options;
  const ids: string[] = [];
  const perProject = new Map<string, number>();
  const begun = performance.now();
  const base = Date.now() - n * 60_000;
  const one = async (i: number) => {
    const cwd = projects[zipfIndex(projects.length)];
    const writer = await store.create({ cwd, model: models[zipfIndex(models.length)] });
    const messages = sessionMessages();
    for (const [k, message] of messages.entries()) {
      const at = new Date(base + i * 60_000 + k * 1000).toISOString();
      await writer.append({ type: "message", message, at });
    }
    await writer.close();
    ids.push(writer.id);
    perProject.set(cwd, (perProject.get(cwd) ?? 0) + 1);
  };
  for (let i = 0, told = 0; i < n;) {
    const batch: Promise<void>[] = [];
    for (let k = 0; k < 32 && i < n; k++, i++) batch.push(one(i));
    await Promise.all(batch);
    if (i - told >= 5000 || i === n) {
      told = i;
      const elapsed = performance.now() - begun;
      log(
        `  ${_thousands(i)} sessions, ${_seconds(elapsed)} (${(elapsed / i).toFixed(2)} ms each)`,
      );
    }
  }
  return { ids, perProject };
}

/**
 * How many of the last run loops of an archive are archived as a run archives its own: after a
 * recall of memories for its goal, as for a run's prompt. A search records the words it finds
 * too common to rank by, for about as many run loops (see lib/memory/fts_search.ts): without
 * the runs' searches, an archive built for the benchmark would be searched with none recorded,
 * which no memory of 100,000 runs is.
 */
const _RECALLING = 3_000;

/**
 * Archives `n` run loops, one after another (counted here: a retention policy may keep fewer),
 * the last {@link _RECALLING} after a recall for their goal; the ms per archive of each 5,000.
 */
export async function buildArchive(
  memory: MemoryStore,
  n: number,
  log: (text: string) => void,
): Promise<number[]> {
  const costs: number[] = [];
  const begun = performance.now();
  // The run loops of the last 90 days, a few minutes apart.
  const span = 90 * 86_400_000;
  const base = Date.now() - span;
  let windowStart = performance.now();
  let windowCount = 0;
  for (let done = 0; done < n;) {
    const loop = archivedRunLoop(base + Math.floor(done * span / n));
    if (n - done <= _RECALLING) {
      // Not an archive's cost: left out of it.
      const recalling = performance.now();
      await memory.retrieve(loop.goal, { limit: 10 });
      windowStart += performance.now() - recalling;
    }
    await memory.archive(loop);
    done++;
    windowCount++;
    if (done % 5000 === 0 || done === n) {
      const now = performance.now();
      costs.push((now - windowStart) / windowCount);
      log(
        `  ${_thousands(done)} run loops archived, ${_seconds(now - begun)} (last ${
          _thousands(windowCount)
        }: ${costs.at(-1)!.toFixed(2)} ms each)`,
      );
      windowStart = now;
      windowCount = 0;
    }
  }
  return costs;
}
