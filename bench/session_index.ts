/**
 * Session lookups among many sessions: `deno run -A bench/session_index.ts --dir <d> --sessions N
 * [--build]`. With `--build` it writes N session files (a few messages each) into one project of
 * `<d>` (and N/10 into another), as the file store lays them out; without it, it measures, on a
 * store opened as a CLI process opens one: a read by id, by an 8-character prefix, a listing
 * page of 20 of the big project, and `latest(cwd)` (median and max of samples). Where the store
 * does not page, the page is the whole listing cut to 20, which is what showing one cost.
 *
 * Run it from two checkouts on the same directory to compare them, alternating.
 */

import { join } from "node:path";
import { parseArgs } from "node:util";
import { encodeEntry, encodeHeader } from "../lib/session/jsonl.ts";
import { fileSessionStore, projectSessionsDir, type SessionInfo } from "../lib/session/mod.ts";
import { median, random } from "./stats.ts";

const flags = parseArgs({
  args: Deno.args,
  options: {
    dir: { type: "string" },
    sessions: { type: "string", default: "10000" },
    build: { type: "boolean", default: false },
    cold: { type: "boolean", default: false },
  },
});
const dir = flags.values.dir!;
const count = Number(flags.values.sessions);
const BIG = "/bench/big";
const SMALL = "/bench/small";

if (flags.values.build) {
  const next = random(7);
  const start = Date.parse("2025-01-01T00:00:00Z");
  for (const [cwd, n] of [[BIG, count], [SMALL, Math.ceil(count / 10)]] as const) {
    const folder = projectSessionsDir(dir, cwd);
    await Deno.mkdir(folder, { recursive: true });
    for (let i = 0; i < n; i++) {
      const id = crypto.randomUUID();
      const created = new Date(start + Math.floor(next() * 3e10)).toISOString();
      let text = encodeHeader({ type: "session", version: 1, id, cwd, model: "a/b", created });
      for (let m = 1; m <= 3; m++) {
        const message = m % 2
          ? { role: "user" as const, content: `task ${i}: fix the build of module ${m}` }
          : {
            role: "assistant" as const,
            content: [{ type: "text" as const, text: "done ".repeat(40) }],
          };
        text += encodeEntry({ type: "message", message, at: created }, m);
      }
      await Deno.writeTextFile(join(folder, `${id}.jsonl`), text, { mode: 0o600 });
    }
  }
  console.log(`built ${count} + ${Math.ceil(count / 10)} sessions in ${dir}`);
  Deno.exit(0);
}

const folder = projectSessionsDir(dir, BIG);
const ids: string[] = [];
for await (const entry of Deno.readDir(folder)) {
  if (entry.name.endsWith(".jsonl")) ids.push(entry.name.slice(0, -6));
}
const pick = (() => {
  const next = random(11);
  return () => ids[Math.floor(next() * ids.length)];
})();

async function sample(work: () => Promise<unknown>, max: number, budgetMs = 60_000) {
  const times: number[] = [];
  const until = performance.now() + budgetMs;
  while (times.length < max && (times.length < 2 || performance.now() < until)) {
    const start = performance.now();
    await work();
    times.push(performance.now() - start);
  }
  return times;
}

function show(name: string, times: number[]): void {
  console.log(
    `${name.padEnd(34)} median ${median(times).toFixed(2).padStart(9)} ms  max ${
      Math.max(...times).toFixed(2).padStart(9)
    } ms  (${times.length} samples)`,
  );
}

type ListWith = (cwd?: string, options?: { limit: number }) => Promise<unknown>;

/** A page of 20: the store's own page, or the whole listing cut to 20. */
async function page(store: ReturnType<typeof fileSessionStore>): Promise<SessionInfo[]> {
  const result = await (store.list as unknown as ListWith)(BIG, { limit: 20 });
  const sessions = Array.isArray(result)
    ? result
    : (result as { sessions: SessionInfo[] }).sessions;
  return sessions.slice(0, 20);
}

// The first lookup of a process: the store is new (with an index, it is opened, or built when
// missing with --cold).
if (flags.values.cold) {
  for (const suffix of ["", "-wal", "-shm"]) {
    await Deno.remove(join(dir, `index.v2.sqlite${suffix}`)).catch(() => {});
  }
}
const first = performance.now();
await fileSessionStore({ dir }).load(pick());
console.log(
  `first load of a new store${flags.values.cold ? " (no index)" : ""}: ${
    (performance.now() - first).toFixed(1)
  } ms`,
);

show(
  "load(id), a new store each time",
  await sample(() => fileSessionStore({ dir }).load(pick()), 20),
);
const store = fileSessionStore({ dir });
show("load(id)", await sample(() => store.load(pick()), 30));
show("load(8-char prefix)", await sample(() => store.load(pick().slice(0, 8)), 30));
show("listing page of 20", await sample(() => page(store), 20));
show("latest(cwd)", await sample(() => store.latest(BIG), 20));
const { rss } = Deno.memoryUsage();
console.log(`rss ${(rss / 1e6).toFixed(0)} MB`);
