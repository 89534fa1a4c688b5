/**
 * Long-term memory figures: `deno run -A bench/memory.ts`. Builds a database of 100,000
 * segments (a few thousand run loops of realistic text: words drawn with Zipfian frequencies,
 * prose, code-like tool output, paths), then prints:
 *
 * (a) retrieval latency p50/p95/p99 over a few hundred varied queries, full-text only
 *     (target p95 ≤ 20 ms);
 * (b) the time to archive a 50-iteration run loop (median; target ≤ 50 ms);
 * (c) the database size per segment, without vectors and with them;
 * (d) with embeddings (vectors made in-process by a local `fetch`, no HTTP): the time to embed
 *     everything, to load the vector cache, fused retrieval latency, and the vector scan alone
 *     at 384 and 1,536 dimensions;
 * (e) what a run costs the memory as the archive grows: a service's short "hello" runs archived
 *     until the memory holds 1,000, 10,000 and `runs` (default 100,000; the first argument) run
 *     loops, and at each size the median of a run's memory work (the memories offered for its
 *     message, its run loop archived, the counts read, as `agent serve` does), opening the
 *     database and reading its counts, and the bytes per archived run; then the default
 *     retention of the CLI applied to it, and a run's work once the memory is kept at that size.
 */

import { join } from "node:path";
import { DEFAULT_RETENTION } from "../lib/cli/memory.ts";
import { openMemory, type RunLoop } from "../lib/memory/mod.ts";
import { memoryContext } from "../lib/runloop/recall.ts";
import { vectorIndex } from "../lib/memory/vector_index.ts";
import { hashedEmbedding } from "../lib/testing/mod.ts";
import { median, random } from "./stats.ts";
import { zipfText } from "./zipf_text.ts";

const SEGMENTS = 100_000;
const RUNS = Number(Deno.args[0] ?? 100_000);
const QUERIES = 300;
const DIMENSIONS = 384;

const { next, pick, word, vocabulary: VOCABULARY } = zipfText(42);

function sentence(): string {
  const words = Array.from({ length: 6 + Math.floor(next() * 14) }, word);
  return words.join(" ").replace(/^./, (c) => c.toUpperCase()) + pick([".", ".", ".", "?", "!"]);
}

function prose(chars: number): string {
  const paragraphs: string[] = [];
  for (let size = 0; size < chars;) {
    const paragraph = Array.from({ length: 2 + Math.floor(next() * 4) }, sentence).join(" ");
    paragraphs.push(paragraph);
    size += paragraph.length + 2;
  }
  return paragraphs.join("\n\n");
}

/** A word that is not one of the common English ones at the head of the vocabulary. */
function name(): string {
  for (;;) {
    const candidate = word();
    if (VOCABULARY.indexOf(candidate) >= 45) return candidate;
  }
}

const path = () => `src/${name()}/${name()}_${name()}.ts`;

function code(chars: number): string {
  const lines: string[] = [];
  for (let n = 1, size = 0; size < chars; n++) {
    const line = `${String(n).padStart(5)}\t  const ${word()}${
      word().replace(/^./, (c) => c.toUpperCase())
    } = await ${word()}("${word()} ${word()}", ${Math.floor(next() * 1000)});`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n");
}

let loopCount = 0;

function runLoop(iterations: number): RunLoop {
  const id = `run-${++loopCount}`;
  const start = Date.UTC(2025, 0, 1) + loopCount * 3_600_000;
  const at = (minute: number) => new Date(start + minute * 60_000).toISOString();
  const goal = sentence();
  return {
    id,
    goal,
    status: "completed",
    createdAt: at(0),
    completedAt: at(iterations),
    iterations: Array.from({ length: iterations }, (_, index) => {
      const calls = Array.from({ length: 1 + Math.floor(next() * 3) }, (_, k) => ({
        id: `${id}-${index}-${k}`,
        name: pick(["read", "bash", "grep", "edit"]),
        input: { path: path(), pattern: word() },
      }));
      return {
        index,
        userMessage: index === 0 ? goal : next() < 0.4 ? sentence() : undefined,
        reasoning: Array.from(
          { length: 1 + Math.floor(next() * 2) },
          () => prose(100 + next() * 600),
        ),
        toolCalls: calls,
        toolResults: calls.map((call) => ({
          id: call.id,
          name: call.name,
          output: call.name === "bash" ? prose(200 + next() * 1500) : code(300 + next() * 3000),
          isError: next() < 0.05,
        })),
        response: prose(80 + next() * 800),
        startedAt: at(index),
        endedAt: at(index + 0.5),
      };
    }),
  };
}

function query(): string {
  const kind = next();
  const words = (n: number) => Array.from({ length: n }, word).join(" ");
  if (kind < 0.4) return words(2 + Math.floor(next() * 3));
  if (kind < 0.7) return `how did we fix the ${words(2)} ${pick(["error", "test", "timeout"])}?`;
  if (kind < 0.9) return `${path()} ${word()}`;
  return `"${word()}" AND (${word()} OR ${word()}*) -${word()} NEAR(${words(2)}) ^col:x`;
}

function percentiles(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return `p50 ${at(0.5).toFixed(2)} ms, p95 ${at(0.95).toFixed(2)} ms, p99 ${
    at(0.99).toFixed(2)
  } ms`;
}

/** A fetch that answers `/embeddings` in-process, with hashed bag-of-words vectors. */
const localFetch: typeof fetch = (_input, init) => {
  const body = JSON.parse(String(init?.body));
  const inputs: string[] = typeof body.input === "string" ? [body.input] : body.input;
  const data = inputs.map((text, index) => {
    const vector = Float32Array.from(hashedEmbedding(text, body.dimensions ?? DIMENSIONS));
    const bytes = new Uint8Array(vector.buffer);
    let binary = "";
    for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
    return { object: "embedding", index, embedding: btoa(binary) };
  });
  return Promise.resolve(Response.json({ object: "list", data, model: body.model, usage: {} }));
};

const dir = await Deno.makeTempDir({ prefix: "memory_bench_" });
const file = join(dir, "memory.db");
try {
  // Build.
  const queries = Array.from({ length: QUERIES }, query);
  let memory = await openMemory({ path: file });
  const buildStart = performance.now();
  let segments = 0;
  while (segments < SEGMENTS) {
    segments += (await memory.archive(runLoop(2 + Math.floor(next() * 7)))).segments;
  }
  const built = memory.stats();
  console.log(
    `built ${built.segments.toLocaleString("en")} segments in ${
      built.runLoops.toLocaleString("en")
    } run loops in ${((performance.now() - buildStart) / 1000).toFixed(1)} s`,
  );

  // (a) Full-text retrieval.
  const search = async (memory: Awaited<ReturnType<typeof openMemory>>) => {
    for (const text of queries.slice(0, 30)) await memory.retrieve(text); // warm up
    const times: number[] = [];
    let empty = 0;
    for (const text of queries) {
      const start = performance.now();
      const found = await memory.retrieve(text);
      times.push(performance.now() - start);
      if (found.length === 0) empty++;
    }
    return { times, empty };
  };
  const fts = await search(memory);
  console.log(
    `retrieve, full-text, ${QUERIES} queries over ${built.segments.toLocaleString("en")} ` +
      `segments: ${percentiles(fts.times)} (${fts.empty} found nothing); target p95 ≤ 20 ms`,
  );

  // (b) Archiving a 50-iteration run loop.
  const archives: number[] = [];
  let archived = 0;
  for (let run = 0; run < 15; run++) {
    const loop = runLoop(50);
    const start = performance.now();
    archived = (await memory.archive(loop)).segments;
    archives.push(performance.now() - start);
  }
  console.log(
    `archive a 50-iteration run loop (${archived} segments): median ${
      median(archives).toFixed(1)
    } ms over ${archives.length} runs; target ≤ 50 ms`,
  );

  // (c) Size without vectors.
  const plain = memory.stats();
  await memory.close();
  console.log(
    `database size per segment, no vectors: ${Math.round(plain.bytes / plain.segments)} B`,
  );

  // (d) With embeddings.
  memory = await openMemory({
    path: file,
    embeddings: { baseURL: "http://local.invalid/v1", model: "hashed", fetch: localFetch },
  });
  let start = performance.now();
  const { embedded } = await memory.reindex();
  console.log(
    `reindex: embedded ${embedded.toLocaleString("en")} segments (${DIMENSIONS} dimensions) in ${
      ((performance.now() - start) / 1000).toFixed(1)
    } s`,
  );
  const withVectors = memory.stats();
  console.log(
    `database size per segment, with ${DIMENSIONS}-dimension vectors: ${
      Math.round(withVectors.bytes / withVectors.segments)
    } B`,
  );
  start = performance.now();
  await memory.retrieve("first query loads the vector cache");
  console.log(
    `first fused retrieve (loads the vector cache): ${(performance.now() - start).toFixed(0)} ms`,
  );
  const fused = await search(memory);
  console.log(
    `retrieve, full-text + vectors fused (query embedded by a local fetch), ${QUERIES} queries: ` +
      percentiles(fused.times),
  );
  const archivesWithVectors: number[] = [];
  for (let run = 0; run < 9; run++) {
    const loop = runLoop(50);
    start = performance.now();
    await memory.archive(loop);
    archivesWithVectors.push(performance.now() - start);
  }
  console.log(
    `archive a 50-iteration run loop with embedding (local fetch): median ${
      median(archivesWithVectors).toFixed(1)
    } ms`,
  );
  await memory.close();

  // The vector scan alone, over 100,000 vectors.
  for (const dimensions of [384, 1536]) {
    const gen = random(dimensions);
    const index = vectorIndex(dimensions);
    const vector = new Float32Array(dimensions);
    for (let id = 0; id < SEGMENTS; id++) {
      for (let j = 0; j < dimensions; j++) vector[j] = gen() - 0.5;
      index.add(id, vector, id % 5);
    }
    const times: number[] = [];
    for (let q = 0; q < 120; q++) {
      for (let j = 0; j < dimensions; j++) vector[j] = gen() - 0.5;
      start = performance.now();
      index.search(vector, 40);
      if (q >= 20) times.push(performance.now() - start);
    }
    console.log(
      `vector search alone, 100,000 × ${dimensions} (int8 SIMD scan + exact rerank): ${
        percentiles(times)
      }`,
    );
  }

  // (e) A run's memory work as the archive grows.
  const hello = (n: number): RunLoop => {
    const at = new Date().toISOString();
    return {
      id: crypto.randomUUID(),
      goal: "hello",
      status: "completed",
      createdAt: at,
      completedAt: at,
      iterations: [{
        index: 0,
        userMessage: "hello",
        reasoning: [],
        toolCalls: [],
        toolResults: [],
        response: `Hello! How can I help you today? (${n % 7})`,
        startedAt: at,
        endedAt: at,
      }],
    };
  };
  const runsFile = join(dir, "runs.db");
  const runWork = async (store: Awaited<ReturnType<typeof openMemory>>) => {
    const times: number[] = [];
    for (let n = 0; n < 230; n++) {
      const start = performance.now();
      await memoryContext(store, "hello");
      await store.archive(hello(n));
      store.stats();
      if (n >= 30) times.push(performance.now() - start);
    }
    return median(times);
  };
  const openWork = async () => {
    const times: number[] = [];
    for (let n = 0; n < 9; n++) {
      const start = performance.now();
      const store = await openMemory({ path: runsFile });
      store.stats();
      times.push(performance.now() - start);
      await store.close();
    }
    return median(times);
  };
  memory = await openMemory({ path: runsFile });
  for (const size of [1_000, 10_000, RUNS].filter((size, i, all) => all.indexOf(size) === i)) {
    for (let n = memory.stats().runLoops; n < size; n++) await memory.archive(hello(n));
    const work = await runWork(memory);
    const stats = memory.stats();
    await memory.close();
    const opened = await openWork();
    memory = await openMemory({ path: runsFile });
    console.log(
      `${stats.runLoops.toLocaleString("en")} run loops archived: a run's memory work median ` +
        `${work.toFixed(2)} ms; open + counts ${opened.toFixed(1)} ms; ` +
        `${Math.round((stats.bytes - stats.freeBytes) / stats.runLoops)} B per archived run`,
    );
  }
  await memory.close();
  memory = await openMemory({ path: runsFile, retention: DEFAULT_RETENTION });
  start = performance.now();
  const pruned = await memory.prune();
  console.log(
    `default retention (${DEFAULT_RETENTION.maxRunLoops.toLocaleString("en")} run loops, ` +
      `${DEFAULT_RETENTION.maxAgeDays} days, ${DEFAULT_RETENTION.maxBytes / 2 ** 20} MiB, ` +
      `detail for ${DEFAULT_RETENTION.detailDays} days): ` +
      `dropped ${pruned.runLoops.toLocaleString("en")} run loops in ${
        ((performance.now() - start) / 1000).toFixed(1)
      } s`,
  );
  start = performance.now();
  const { bytesBefore, bytesAfter } = await memory.vacuum();
  console.log(
    `vacuum: ${(bytesBefore / 2 ** 20).toFixed(1)} → ${(bytesAfter / 2 ** 20).toFixed(1)} MiB in ${
      ((performance.now() - start) / 1000).toFixed(1)
    } s`,
  );
  console.log(
    `kept at ${memory.stats().runLoops.toLocaleString("en")} run loops by the retention ` +
      `(a step after each archive): a run's memory work median ${
        (await runWork(memory)).toFixed(2)
      } ms`,
  );
  await memory.close();
} finally {
  await Deno.remove(dir, { recursive: true });
}
