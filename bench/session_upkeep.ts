/**
 * What the file session store costs a run, and what reading a large session back costs:
 * `deno run -A bench/session_upkeep.ts [--runs N] [--mb M] [--base <checkout> --rounds K]`.
 *
 * (a) Runs as the CLI does them without memory (the scripted model calls one tool, then answers;
 * the run is saved as a session), in a sessions directory that starts empty: on a new
 * `fileSessionStore` each (as each CLI process opens one, closing it after), and on one store
 * kept open (as the service does). Also timed apart: making a store, and its first `create()`.
 *
 * (b) A session of about `--mb` MB (50 by default; tool outputs of a few KB, as a long session
 * holds): `load()`, `read()` entry by entry, and `resumeSession()`.
 *
 * With `--base <checkout>` (another checkout of the repository, e.g. a `git worktree`), it
 * measures both, paired so that the machine's load weighs on both alike, and prints the range of
 * each figure's medians over `--rounds` for both: (a) with both libraries in this process, their
 * runs in turns; (b) in child processes, alternating that checkout and this one, on one session
 * file written once.
 */

import { dirname, join, resolve } from "node:path";
import { fileURLToPath as fromFileUrl, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { z } from "zod";
import type { Message } from "../lib/messages.ts";
import type { SessionStore } from "../lib/session/mod.ts";
import { answer, prompt, sentence, toolOutput } from "./longevity_workload.ts";
import { median, random } from "./stats.ts";

const flags = parseArgs({
  args: Deno.args,
  options: {
    runs: { type: "string", default: "40" },
    mb: { type: "string", default: "50" },
    root: { type: "string" },
    base: { type: "string" },
    rounds: { type: "string", default: "5" },
    only: { type: "string" },
    json: { type: "boolean", default: false },
    session: { type: "string" },
  },
});
const here = resolve(dirname(fromFileUrl(import.meta.url)), "..");
const RUNS = Number(flags.values.runs);
const MB = Number(flags.values.mb);

type Figures = Record<string, number>;

if (flags.values.base) await _paired(resolve(flags.values.base), Number(flags.values.rounds));
else {
  const figures = await _measure(resolve(flags.values.root ?? here));
  if (flags.values.json) console.log(JSON.stringify(figures));
  else for (const [name, ms] of Object.entries(figures)) console.log(_line(name, [ms]));
}

/** The figures of the library at `root`, measured in this process. */
async function _measure(root: string): Promise<Figures> {
  const lib = await _library(root);
  const figures: Figures = {};
  const only = flags.values.only;
  if (only !== "large") Object.assign(figures, (await _upkeep([lib]))[0][0]);
  if (only !== "upkeep") Object.assign(figures, await _large(lib));
  return figures;
}

/** What the figures use of a checkout's library, imported from it. */
interface _Library {
  fileSessionStore(options: { dir: string }): SessionStore;
  resumeSession(
    store: SessionStore,
    id: string,
  ): Promise<{ messages: Message[]; writer: { close(): Promise<void> } }>;
  startConversation(options: Record<string, unknown>): {
    send(message: string, options?: Record<string, unknown>): AsyncGenerator<unknown, unknown>;
    close(): Promise<void>;
  };
  scriptedModel(script: unknown, options?: Record<string, unknown>): unknown;
  defineTool(tool: Record<string, unknown>): unknown;
}

async function _library(root: string): Promise<_Library> {
  const url = (path: string) => pathToFileURL(join(root, path)).href;
  const session = await import(url("lib/session/mod.ts"));
  const conversation = await import(url("lib/conversation/mod.ts"));
  const testing = await import(url("lib/testing/mod.ts"));
  const core = await import(url("mod.ts"));
  return {
    fileSessionStore: session.fileSessionStore,
    resumeSession: session.resumeSession,
    startConversation: conversation.startConversation,
    scriptedModel: testing.scriptedModel,
    defineTool: core.defineTool,
  };
}

/** One run as the CLI does it without memory; its time in ms. */
async function _run(lib: _Library, store: SessionStore, tool: unknown): Promise<number> {
  const start = performance.now();
  const model = lib.scriptedModel(
    (_request: unknown, call: number) =>
      call === 0
        ? { reasoning: sentence(), toolCalls: [{ name: "look", input: { path: "src/main.ts" } }] }
        : { text: answer() },
    { record: false },
  );
  const driver = lib.startConversation({
    model,
    modelSpec: "openai/gpt-4.1-mini",
    tools: [tool],
    store,
    cwd: "/bench/app",
  });
  try {
    const events = driver.send(prompt(), { complete: true });
    let step = await events.next();
    while (!step.done) step = await events.next();
    const result = step.value as { status: string; error?: string };
    if (result.status !== "success") throw new Error(`A run ended ${result.status}`);
  } finally {
    await driver.close();
  }
  return performance.now() - start;
}

/**
 * The upkeep figures of each library in `libs`, measured in turns run by run (so that the
 * machine's load weighs on each alike), in `rounds` blocks of `RUNS` runs: each figure's median
 * per block, for each library.
 */
async function _upkeep(libs: _Library[], rounds = 1): Promise<Figures[][]> {
  const dir = await Deno.makeTempDir({ prefix: "session_upkeep_" });
  try {
    const setups = [];
    for (const [k, lib] of libs.entries()) {
      const tool = lib.defineTool({
        name: "look",
        description: "Shows a file",
        parameters: z.object({ path: z.string() }),
        execute: () => toolOutput(),
      });
      const fresh = join(dir, `fresh${k}`);
      // Warm-up: the modules' first use is no part of a session's cost.
      const warm = lib.fileSessionStore({ dir: join(dir, `warm${k}`) });
      for (let i = 0; i < 3; i++) await _run(lib, warm, tool);
      await warm.close?.();
      setups.push({ lib, tool, fresh, kept: lib.fileSessionStore({ dir: join(dir, `kept${k}`) }) });
    }
    const results: Figures[][] = libs.map(() => []);
    for (let round = 0; round < rounds; round++) {
      const samples = libs.map(() => ({ onNew: [0], onKept: [0], opening: [0], first: [0] }));
      for (const s of samples) for (const list of Object.values(s)) list.length = 0;
      for (let i = 0; i < RUNS; i++) {
        const order = setups.map((_, k) => k);
        if (i % 2) order.reverse();
        for (const k of order) {
          const { lib, tool, fresh, kept } = setups[k];
          const s = samples[k];
          // A CLI process: a store of its own, closed when the run is over.
          let start = performance.now();
          const store = lib.fileSessionStore({ dir: fresh });
          await _run(lib, store, tool);
          await store.close?.();
          s.onNew.push(performance.now() - start);
          s.onKept.push(await _run(lib, kept, tool));
          // Making a store, and its first session, apart.
          start = performance.now();
          const again = lib.fileSessionStore({ dir: fresh });
          s.opening.push(performance.now() - start);
          start = performance.now();
          const writer = await again.create({ cwd: "/bench/other", model: "openai/gpt-4.1-mini" });
          s.first.push(performance.now() - start);
          await writer.close();
          await again.close?.();
        }
      }
      for (const [k, s] of samples.entries()) {
        results[k].push({
          "run, memory off, a new store each (as the CLI)": median(s.onNew),
          "run, memory off, one store kept (as the service)": median(s.onKept),
          "making a store": median(s.opening),
          "its first create()": median(s.first),
        });
      }
    }
    for (const { kept } of setups) await kept.close?.();
    return results;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A session of about `mb` MB in a sessions directory of its own: its directory and id. */
async function _largeSession(lib: _Library, mb: number): Promise<{ dir: string; id: string }> {
  const dir = await Deno.makeTempDir({ prefix: "session_large_" });
  const store = lib.fileSessionStore({ dir });
  const writer = await store.create({ cwd: "/bench/large", model: "openai/gpt-4.1-mini" });
  const next = random(3);
  const at = () => new Date().toISOString();
  let bytes = 0;
  for (let i = 0; bytes < mb * 1024 * 1024; i++) {
    let message: Message;
    if (i % 40 === 0) message = { role: "user", content: sentence() };
    else if (i % 2 === 1) {
      message = {
        role: "assistant",
        content: [
          { type: "reasoning", text: sentence() + " " + sentence(), signature: "s".repeat(120) },
          { type: "text", text: sentence() },
          { type: "tool_call", id: `call_${i}`, name: "read", input: { path: `src/f${i}.ts` } },
        ],
      };
    } else {
      const content = Array.from({ length: 1 + Math.floor(next() * 6) }, toolOutput).join("\n");
      message = {
        role: "tool",
        toolCallId: `call_${i - 1}`,
        name: "read",
        content,
        isError: false,
      };
    }
    await writer.append({ type: "message", message, at: at() });
    bytes += JSON.stringify(message).length + 60;
  }
  await writer.close();
  await store.close?.();
  return { dir, id: writer.id };
}

async function _large(lib: _Library): Promise<Figures> {
  // The session is written once, by this checkout, and read by both in paired runs.
  const given = flags.values.session?.split(":");
  const made = given ? undefined : await _largeSession(lib, MB);
  const { dir, id } = made ?? { dir: given![0], id: given![1] };
  try {
    const loads: number[] = [];
    const reads: number[] = [];
    const resumes: number[] = [];
    let messages = 0;
    for (let i = 0; i < 3; i++) {
      const store = lib.fileSessionStore({ dir });
      let start = performance.now();
      const loaded = await store.load(id);
      loads.push(performance.now() - start);
      messages = loaded.messages.length;
      if (store.read) {
        start = performance.now();
        const reader = await store.read(id);
        let entries = 0;
        for await (const _ of reader) entries++;
        reads.push(performance.now() - start);
        if (entries < messages) throw new Error("read() saw fewer entries than load()");
      } else reads.push(-1);
      start = performance.now();
      const resumed = await lib.resumeSession(store, id);
      resumes.push(performance.now() - start);
      if (resumed.messages.length !== messages) throw new Error("resume lost messages");
      await resumed.writer.close();
      await store.close?.();
    }
    const size = (await Deno.stat(join(dir, ...(await _find(dir, id))))).size;
    const what = `${(size / 1024 / 1024).toFixed(0)} MB, ${messages} messages`;
    return {
      [`load() of a session of ${what}`]: median(loads),
      [`read() of it, entry by entry`]: median(reads),
      [`resumeSession() of it`]: median(resumes),
    };
  } finally {
    if (made) await Deno.remove(dir, { recursive: true });
  }
}

async function _find(dir: string, id: string): Promise<string[]> {
  for await (const folder of Deno.readDir(dir)) {
    if (!folder.isDirectory) continue;
    try {
      await Deno.stat(join(dir, folder.name, `${id}.jsonl`));
      return [folder.name, `${id}.jsonl`];
    } catch { /* not here */ }
  }
  throw new Error(`No session file ${id} in ${dir}`);
}

/** Rounds of child processes alternating the base checkout and this one; ranges printed. */
async function _paired(base: string, rounds: number): Promise<void> {
  const lib = await _library(here);
  if (flags.values.only !== "large") {
    // Both libraries in this process, their runs in turns.
    const [ofBase, ofThis] = await _upkeep([await _library(base), lib], rounds);
    _print(base, rounds, { base: ofBase, this: ofThis });
    if (flags.values.only === "upkeep") return;
  }
  const session = await _largeSession(lib, MB);
  const results: Record<"base" | "this", Figures[]> = { base: [], this: [] };
  try {
    for (let round = 0; round < rounds; round++) {
      for (const [name, root] of [["base", base], ["this", here]] as const) {
        const args = [
          "run",
          "-A",
          fromFileUrl(import.meta.url),
          "--json",
          "--root",
          root,
          "--runs",
          String(RUNS),
          "--only",
          "large",
          ...(session ? ["--session", `${session.dir}:${session.id}`] : []),
        ];
        const out = await new Deno.Command(Deno.execPath(), { args, stderr: "inherit" }).output();
        if (!out.success) throw new Error(`The ${name} run failed`);
        const text = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!;
        results[name].push(JSON.parse(text));
        console.error(`round ${round + 1}/${rounds}: ${name} done`);
      }
    }
  } finally {
    if (session) await Deno.remove(session.dir, { recursive: true });
  }
  _print(base, rounds, results);
}

function _print(base: string, rounds: number, results: Record<"base" | "this", Figures[]>): void {
  console.log(`paired, ${rounds} rounds: base ${base} | this checkout (ms, min–max of medians)`);
  for (const name of Object.keys(results.this[0])) {
    const range = (all: Figures[]) => all.map((figures) => figures[name]).filter((n) => n >= 0);
    console.log(`${_line(name, range(results.base))} | ${_range(range(results.this))}`);
  }
}

function _range(values: number[]): string {
  if (!values.length) return "–";
  const sorted = [...values].sort((a, b) => a - b);
  const fmt = (n: number) => n < 10 ? n.toFixed(2) : n.toFixed(0);
  return `${fmt(sorted[0])}–${fmt(sorted.at(-1)!)} (median ${fmt(median(sorted))})`;
}

function _line(name: string, values: number[]): string {
  return `${name.padEnd(58)} ${_range(values)}`;
}
