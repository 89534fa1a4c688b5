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
 * With `--base <checkout>` (another checkout of the repository, e.g. a `git worktree`), it runs
 * the figures `--rounds` times in child processes, alternating that checkout and this one, and
 * prints the range of each figure's medians for both: paired runs, so that the machine's load
 * weighs on both alike.
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
  if (only !== "large") Object.assign(figures, await _upkeep(lib));
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

async function _upkeep(lib: _Library): Promise<Figures> {
  const tool = lib.defineTool({
    name: "look",
    description: "Shows a file",
    parameters: z.object({ path: z.string() }),
    execute: () => toolOutput(),
  });
  const dir = await Deno.makeTempDir({ prefix: "session_upkeep_" });
  try {
    const fresh = join(dir, "fresh");
    const kept = join(dir, "kept");
    // Warm-up: the modules' first use is no part of a session's cost.
    const warm = lib.fileSessionStore({ dir: join(dir, "warm") });
    for (let i = 0; i < 3; i++) await _run(lib, warm, tool);
    await warm.close?.();
    const onNew: number[] = [];
    const onKept: number[] = [];
    const opening: number[] = [];
    const firstCreate: number[] = [];
    const keptStore = lib.fileSessionStore({ dir: kept });
    for (let i = 0; i < RUNS; i++) {
      // A CLI process: a store of its own, closed when the run is over.
      let start = performance.now();
      const store = lib.fileSessionStore({ dir: fresh });
      await _run(lib, store, tool);
      await store.close?.();
      onNew.push(performance.now() - start);
      onKept.push(await _run(lib, keptStore, tool));
      // Making a store, and its first session, apart.
      start = performance.now();
      const again = lib.fileSessionStore({ dir: fresh });
      opening.push(performance.now() - start);
      start = performance.now();
      const writer = await again.create({ cwd: "/bench/other", model: "openai/gpt-4.1-mini" });
      firstCreate.push(performance.now() - start);
      await writer.close();
      await again.close?.();
    }
    await keptStore.close?.();
    return {
      "run, memory off, a new store each (as the CLI)": median(onNew),
      "run, memory off, one store kept (as the service)": median(onKept),
      "making a store": median(opening),
      "its first create()": median(firstCreate),
    };
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
  const session = flags.values.only === "upkeep" ? undefined : await _largeSession(lib, MB);
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
          ...(flags.values.only ? ["--only", flags.values.only] : []),
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
  console.log(
    `paired runs, ${rounds} rounds: base ${base} | this checkout (ms, min–max of medians)`,
  );
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
