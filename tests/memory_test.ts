import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  type Anchor,
  type Iteration,
  MemoryError,
  type MemoryStats,
  type MemoryStore,
  openMemory,
  openMemoryInWorker,
  type RunLoop,
} from "../lib/memory/mod.ts";
import {
  CHUNK_SIZE,
  chunkText,
  MAX_ARCHIVED_TEXT,
  segmentRunLoop,
} from "../lib/memory/segments.ts";
import { fuseRankings } from "../lib/memory/fts_query.ts";
import { MEMORY_SCHEMA_VERSION } from "../lib/memory/schema.ts";
import { vectorIndex } from "../lib/memory/vector_index.ts";
import { ftsQuery, ftsTerms } from "../lib/memory/fts_query.ts";
import { ftsSearcher } from "../lib/memory/fts_search.ts";
import { openMemoryDatabase } from "../lib/memory/schema.ts";
import { type MockEmbeddingsServer, startMockEmbeddingsServer } from "../lib/testing/mod.ts";

/** The counts of a memory's figures. */
const counts = ({ runLoops, segments, vectors }: MemoryStats) => ({ runLoops, segments, vectors });

const at = (minute: number) => new Date(Date.UTC(2025, 0, 1, 0, minute)).toISOString();

/** An iteration; `calls` are `[name, input, output]`. */
function iteration(
  index: number,
  parts: {
    user?: string;
    reasoning?: string[];
    calls?: Array<[string, unknown, string]>;
    response?: string;
  },
): Iteration {
  const calls = parts.calls ?? [];
  return {
    index,
    userMessage: parts.user,
    reasoning: parts.reasoning ?? [],
    toolCalls: calls.map(([name, input], k) => ({ id: `c${index}-${k}`, name, input })),
    toolResults: calls.map(([name, , output], k) => ({
      id: `c${index}-${k}`,
      name,
      output,
      isError: false,
    })),
    response: parts.response ?? "",
    startedAt: at(index * 2),
    endedAt: at(index * 2 + 1),
  };
}

function runLoop(id: string, iterations: Iteration[], goal = "a goal"): RunLoop {
  return { id, goal, status: "completed", iterations, createdAt: at(0), completedAt: at(99) };
}

/** A run loop about a flaky test and a database lock, with every kind of segment. */
const DEBUGGING = runLoop("debugging", [
  iteration(0, {
    user: "The integration test fails now and then",
    reasoning: ["Flaky tests usually come from timing. Let me run it a few times."],
    calls: [[
      "bash",
      { command: "deno test --filter integration" },
      "1 failed: database is locked",
    ]],
    response: "The test fails because the database is locked.",
  }),
  iteration(1, {
    user: "Why is the database locked?",
    reasoning: ["Another connection holds a write transaction.", "WAL mode would let readers in."],
    calls: [
      ["read", { path: "lib/db.ts" }, "export const db = new DatabaseSync(path);"],
      ["grep", { pattern: "BEGIN" }, "lib/jobs.ts:12: BEGIN EXCLUSIVE"],
    ],
    response: "lib/jobs.ts holds an exclusive transaction; switching to WAL fixes the lock.",
  }),
]);

const GARDENING = runLoop("gardening", [
  iteration(0, {
    user: "When should I plant tomatoes?",
    response: "Plant tomatoes after the last frost, in full sun.",
  }),
]);

async function withMemory(
  run: (memory: MemoryStore) => Promise<void>,
  options: { embeddings?: { baseURL: string; model: string; dimensions?: number } } = {},
): Promise<void> {
  const memory = await openMemory({ path: ":memory:", ...options });
  try {
    await run(memory);
  } finally {
    await memory.close();
  }
}

async function tempDir(): Promise<string> {
  return await Deno.makeTempDir({ prefix: "memory_test_" });
}

Deno.test("segmentRunLoop() cuts a run loop into typed segments in order, with exact anchors", () => {
  const segments = segmentRunLoop(DEBUGGING);
  assert.deepEqual(segments.map((s) => [s.anchor.iteration, s.anchor.type, s.text]), [
    [0, "user", "The integration test fails now and then"],
    [0, "reasoning", "Flaky tests usually come from timing. Let me run it a few times."],
    [0, "tool_call", 'bash {"command":"deno test --filter integration"}'],
    [0, "tool_result", "bash: 1 failed: database is locked"],
    [0, "response", "The test fails because the database is locked."],
    [1, "user", "Why is the database locked?"],
    [1, "reasoning", "Another connection holds a write transaction."],
    [1, "reasoning", "WAL mode would let readers in."],
    [1, "tool_call", 'read {"path":"lib/db.ts"}'],
    [1, "tool_result", "read: export const db = new DatabaseSync(path);"],
    [1, "tool_call", 'grep {"pattern":"BEGIN"}'],
    [1, "tool_result", "grep: lib/jobs.ts:12: BEGIN EXCLUSIVE"],
    [1, "response", "lib/jobs.ts holds an exclusive transaction; switching to WAL fixes the lock."],
  ]);
  assert.deepEqual(segments.map((s) => s.anchor.segment), segments.map((_, i) => i));
  assert.ok(segments.every((s) => s.anchor.runLoopId === "debugging"));
  // The response is dated at the iteration's end, the rest at its start.
  assert.equal(segments[0].anchor.timestamp, at(0));
  assert.equal(segments[3].anchor.timestamp, at(0));
  assert.equal(segments[4].anchor.timestamp, at(1));
  assert.equal(segments[12].anchor.timestamp, at(3));
});

Deno.test("segmentRunLoop() pairs results with calls by id, marks errors, skips empty texts", () => {
  const loop = runLoop("r", [{
    index: 0,
    reasoning: ["  "],
    toolCalls: [
      { id: "a", name: "read", input: { path: "x" } },
      { id: "b", name: "bash", input: { command: "ls" } },
    ],
    toolResults: [
      { id: "b", name: "bash", output: "denied", isError: true },
      { id: "a", name: "read", output: "content", isError: false },
      { id: "z", name: "ls", output: "orphan", isError: false },
    ],
    response: "",
    startedAt: at(0),
  }], "Read x");
  assert.deepEqual(segmentRunLoop(loop).map((s) => `${s.anchor.type}|${s.text}`), [
    "user|Read x", // the goal stands for the missing first user message
    'tool_call|read {"path":"x"}',
    "tool_result|read: content",
    'tool_call|bash {"command":"ls"}',
    "tool_result|bash (error): denied",
    "tool_result|ls: orphan",
  ]);
  assert.throws(() => segmentRunLoop({ id: "x" } as RunLoop), TypeError);
});

Deno.test("chunkText() cuts long text on paragraph boundaries, with overlap, covering it all", () => {
  const paragraphs = Array.from(
    { length: 12 },
    (_, i) => `Paragraph ${i} ` + "words and more words. ".repeat(20).trim(),
  );
  const text = paragraphs.join("\n\n");
  assert.ok(text.length > 4000);
  const chunks = chunkText(text);
  assert.ok(chunks.length >= 3);
  let from = 0;
  for (const [i, chunk] of chunks.entries()) {
    assert.ok(chunk.length <= CHUNK_SIZE, `chunk ${i} is ${chunk.length} long`);
    const start = text.indexOf(chunk, Math.max(0, from - 400));
    assert.ok(start >= 0, `chunk ${i} is not a piece of the text`);
    if (i === 0) assert.equal(start, 0);
    else assert.ok(start < from, `chunk ${i} does not overlap the one before`);
    assert.ok(start > (i === 0 ? -1 : from - 400), `chunk ${i} overlaps too much`);
    if (i < chunks.length - 1) {
      // Each chunk ends where a paragraph ends.
      assert.ok(text.startsWith("\n\n", start + chunk.length), `chunk ${i} ends mid-paragraph`);
      assert.match(text[start - 1] ?? " ", /\s/, `chunk ${i} starts mid-word`);
    }
    from = start + chunk.length;
  }
  assert.equal(from, text.length);
  assert.deepEqual(chunkText("short"), ["short"]);
});

Deno.test("chunkText() falls back to lines, sentences, spaces, then a hard cut (never in a pair)", () => {
  const lines = Array.from({ length: 40 }, (_, i) => `line ${i} ${"x".repeat(40)}`).join("\n");
  for (const chunk of chunkText(lines, { size: 200, overlap: 0 }).slice(0, -1)) {
    assert.match(chunk, /x{40}$/);
  }
  const sentences = "One sentence here. ".repeat(30).trim();
  for (const chunk of chunkText(sentences, { size: 100, overlap: 0 }).slice(0, -1)) {
    assert.match(chunk, /here\.$/);
  }
  const emoji = "😀".repeat(300); // 600 code units, no boundary at all
  const pieces = chunkText(emoji, { size: 101, overlap: 0 });
  assert.equal(pieces.join(""), emoji);
  assert.ok(pieces.every((piece) => piece.length <= 101 && piece.length % 2 === 0));
  assert.throws(() => chunkText("abc", { size: 10, overlap: 5 }), RangeError);
});

Deno.test("segmentRunLoop() chunks a long tool result, each chunk its own segment with the tool's name", () => {
  const output = Array.from(
    { length: 200 },
    (_, i) => `${String(i).padStart(4)}\tconst x${i} = ${i};`,
  )
    .join("\n");
  const loop = runLoop("long", [
    iteration(0, {
      user: "read it",
      calls: [["read", { path: "big.ts" }, output]],
      response: "ok",
    }),
  ]);
  const segments = segmentRunLoop(loop);
  const results = segments.filter((s) => s.anchor.type === "tool_result");
  assert.ok(results.length >= 3);
  assert.ok(results.every((s) => s.text.startsWith("read: ")));
  assert.ok(results.every((s) => s.text.length <= CHUNK_SIZE + "read: ".length));
  assert.deepEqual(segments.map((s) => s.anchor.segment), segments.map((_, i) => i));
  assert.equal(segments.at(-1)?.anchor.type, "response");
  assert.ok(results.at(-1)?.text.endsWith("const x199 = 199;"));
});

Deno.test("archive() then retrieve() then expand() round-trips anchors, windows and the run loop", async () => {
  await withMemory(async (memory) => {
    assert.deepEqual(await memory.archive(DEBUGGING), { segments: 13 });
    assert.deepEqual(await memory.archive(GARDENING), { segments: 2 });
    const expected = segmentRunLoop(DEBUGGING);

    const [best] = await memory.retrieve("exclusive transaction");
    assert.deepEqual(best.anchor, expected[12].anchor);
    assert.equal(best.text, expected[12].text);
    assert.equal(best.relevance, 1);

    const around = await memory.expand(best.anchor);
    assert.deepEqual(around.segments, expected.slice(9, 13)); // 3 before, none after the last
    assert.deepEqual(around.runLoop, DEBUGGING);

    const middle: Anchor = expected[6].anchor;
    assert.deepEqual((await memory.expand(middle, 1)).segments, expected.slice(5, 8));
    assert.deepEqual((await memory.expand(middle, 0)).segments, [expected[6]]);
    assert.deepEqual((await memory.expand(expected[0].anchor)).segments, expected.slice(0, 4));

    assert.deepEqual(await memory.runLoop("gardening"), GARDENING);
    assert.equal(await memory.runLoop("nope"), undefined);
    const missing = await memory.expand({ ...middle, runLoopId: "nope" }).catch((e) => e);
    assert.ok(missing instanceof MemoryError && missing.reason === "not_found");
    await assert.rejects(memory.expand(middle, -1), RangeError);
    const stats = memory.stats();
    assert.deepEqual(counts(stats), { runLoops: 2, segments: 15, vectors: 0 });
    assert.ok(stats.bytes > 0);
  });
});

Deno.test("retrieve() ranks by BM25: the segment with the query's words first", async () => {
  await withMemory(async (memory) => {
    await memory.archive(DEBUGGING);
    await memory.archive(GARDENING);
    const found = await memory.retrieve("plant tomatoes frost");
    assert.equal(found[0].text, "Plant tomatoes after the last frost, in full sun.");
    assert.equal(found[1].text, "When should I plant tomatoes?");
    assert.equal(found.length, 2);
    assert.ok(found[0].relevance > found[1].relevance && found[1].relevance > 0);
    // Stemming: "locking" finds "locked"; stopwords do not drown the rest.
    const locking = await memory.retrieve("why is the locking happening");
    assert.ok(locking.length > 0);
    assert.ok(locking.every((s) => /lock/i.test(s.text)), JSON.stringify(locking));
    assert.equal((await memory.retrieve("database", { limit: 2 })).length, 2);
    assert.deepEqual(await memory.retrieve("zeppelin"), []);
  });
});

Deno.test("retrieve() never lets query text break the FTS syntax", async () => {
  await withMemory(async (memory) => {
    await memory.archive(DEBUGGING);
    const nasty = [
      '"',
      '"database',
      "database*",
      "-database",
      "NEAR(database locked)",
      "database AND OR NOT",
      "(database",
      "database)",
      "text: database",
      "{type}: user",
      "^database",
      "'; DROP TABLE segments; --",
      "***",
      "",
      "   ",
      "\u0000",
      "lib/jobs.ts",
      'C:\\path\\"x"',
    ];
    for (const query of nasty) {
      const found = await memory.retrieve(query);
      assert.ok(Array.isArray(found), query);
      if (/database/.test(query)) assert.ok(found.length > 0, `nothing for ${query}`);
    }
    const [path] = await memory.retrieve("lib/jobs.ts");
    assert.match(path.text, /lib\/jobs\.ts/);
    assert.equal(memory.stats().segments, 13);
  });
});

Deno.test("ftsQuery() quotes every word, so that no user text is FTS syntax", () => {
  assert.equal(ftsQuery('say "hi" NEAR(x) -y*'), '"say" OR "hi" OR "NEAR" OR "x" OR "y"');
  assert.equal(ftsQuery("the of"), '"the" OR "of"'); // stopwords kept when alone
  assert.equal(ftsQuery("fix the bug"), '"fix" OR "bug"');
  assert.equal(ftsQuery("...---"), undefined);
  assert.equal(ftsTerms("x ".repeat(50) + "y ".repeat(50)).length, 2);
  assert.equal(ftsTerms(Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ")).length, 32);
});

Deno.test("retrieve() filters by segment type", async () => {
  await withMemory(async (memory) => {
    await memory.archive(DEBUGGING);
    const results = await memory.retrieve("database locked", { types: ["tool_result"] });
    assert.deepEqual(results.map((s) => s.text), ["bash: 1 failed: database is locked"]);
    const two = await memory.retrieve("database", { types: ["user", "response"] });
    assert.ok(two.length >= 2);
    assert.ok(two.every((s) => s.anchor.type === "user" || s.anchor.type === "response"));
    await assert.rejects(
      // deno-lint-ignore no-explicit-any
      memory.retrieve("database", { types: ["bogus" as any] }),
      TypeError,
    );
    await assert.rejects(memory.retrieve("x", { limit: 0 }), RangeError);
  });
});

Deno.test("retrieve() with excludeRunLoop gives the limit best of the other run loops", async () => {
  await withMemory(async (memory) => {
    await memory.archive(DEBUGGING);
    await memory.archive(runLoop("other", [
      iteration(0, { user: "Is the database locked again?", response: "No lock this time." }),
      iteration(1, { user: "And the database?", response: "The database is fine." }),
    ]));
    const all = await memory.retrieve("database locked", { limit: 3 });
    assert.equal(all[0].anchor.runLoopId, "debugging");
    const others = await memory.retrieve("database locked", {
      limit: 3,
      excludeRunLoop: "debugging",
    });
    assert.deepEqual(others.map((s) => s.anchor.runLoopId), ["other", "other", "other"]);
    assert.ok(others.every((s, i) => i === 0 || s.relevance <= others[i - 1].relevance));
    // Nothing else to give: fewer than the limit.
    const rest = await memory.retrieve("database locked", {
      limit: 9,
      excludeRunLoop: "debugging",
    });
    assert.equal(rest.length, 4);
    await assert.rejects(memory.retrieve("lock", { excludeRunLoop: 5 as never }), TypeError);
  });
});

Deno.test("retrieve() with excludeRunLoop: a run loop with more matches than the search's depth does not crowd the others out", async () => {
  await withMemory(async (memory) => {
    await memory.archive(runLoop("other", [
      iteration(0, { user: "Yesterday the database was locked during the long nightly job" }),
    ]));
    const many = Array.from(
      { length: 45 },
      (_, i) => iteration(i, { user: `database locked ${i}` }),
    );
    await memory.archive(runLoop("own", many));
    const found = await memory.retrieve("database locked", { limit: 3, excludeRunLoop: "own" });
    assert.deepEqual(found.map((s) => s.anchor.runLoopId), ["other"]);
  });
});

Deno.test("retrieve() says which option is wrong, and how to put it right", async () => {
  await withMemory(async (memory) => {
    await memory.archive(DEBUGGING);
    const valid = "user, reasoning, tool_call, tool_result, response";
    await assert.rejects(
      memory.retrieve("lock", { types: "tool_result" as never }),
      new TypeError(`types must be an array of segment types: ${valid}`),
    );
    await assert.rejects(
      memory.retrieve("lock", { types: ["answer" as never] }),
      new TypeError(`Unknown segment type "answer": use ${valid}`),
    );
    await assert.rejects(
      memory.retrieve("lock", { limit: "5" as never }),
      new RangeError('Bad limit "5": use an integer from 1 to 10,000'),
    );
    // No options is as none given.
    assert.deepEqual(
      await memory.retrieve("lock", null as never),
      await memory.retrieve("lock"),
    );
  });
});

Deno.test("archive() of a run loop again replaces it; recent() lists newest first", async () => {
  await withMemory(async (memory) => {
    await memory.archive(DEBUGGING);
    await memory.archive(GARDENING);
    assert.deepEqual((await memory.recent()).map((loop) => loop.id), ["gardening", "debugging"]);
    const changed = runLoop("debugging", [
      iteration(0, { user: "Rename the helper", response: "Renamed it to openStore." }),
    ]);
    assert.deepEqual(await memory.archive(changed), { segments: 2 });
    assert.deepEqual(await memory.retrieve("exclusive transaction"), []);
    const [renamed] = await memory.retrieve("openStore");
    assert.deepEqual(renamed.anchor, segmentRunLoop(changed)[1].anchor);
    assert.deepEqual(await memory.runLoop("debugging"), changed);
    assert.equal(memory.stats().segments, 4);
    assert.deepEqual((await memory.recent()).map((loop) => loop.id), ["debugging", "gardening"]);
    assert.deepEqual((await memory.recent(1)).map((loop) => loop.id), ["debugging"]);
  });
});

Deno.test("ftsSearcher() keeps its cost bounded: common words left out, then the newest with every word, then with any", () => {
  const db = openMemoryDatabase(":memory:");
  const add = db.prepare("INSERT INTO segments_fts (rowid, text, type) VALUES (?, ?, 'user')");
  for (let id = 1; id <= 20; id++) {
    add.run(id, id === 7 ? "common words and zebra" : "common words");
  }
  add.run(21, "common only");
  for (let id = 22; id <= 28; id++) add.run(id, "lonely");
  const search = ftsSearcher(db, 5);
  // "common" is in 21 segments, "zebra" in one: ranked on "zebra" alone.
  assert.deepEqual(search(ftsTerms("common zebra"), [], 10), [7]);
  // Every word too common: the newest segments that have them all, newest first, among each
  // word's newest matches (3 each: the budget of 5 shared); then the newest with either.
  assert.deepEqual(search(ftsTerms("common words"), [], 4), [20, 19, 21, 18]);
  // None has them all: the newest that have any.
  assert.deepEqual(search(ftsTerms("lonely words"), [], 3), [28, 27, 26]);
  // A word that matches nothing is left out; a single common word gives the newest matches.
  assert.deepEqual(search(ftsTerms("common nothingmatches"), [], 3), [21, 20, 19]);
  assert.deepEqual(search(ftsTerms("common"), [], 2), [21, 20]);
  // Not ranked by BM25 then (which first reads every match of the word to count them): the
  // newest come first, ahead of an older one that says the word more often.
  for (let id = 30; id <= 40; id++) add.run(id, id === 38 ? "often often often" : "often once");
  assert.deepEqual(search(ftsTerms("often"), [], 3), [40, 39, 38]);
  // Under the budget the whole OR is ranked.
  assert.deepEqual(ftsSearcher(db, 100)(ftsTerms("zebra only"), [], 10).sort(), [21, 7]);
  db.close();
});

Deno.test("ftsSearcher(): words too common to rank by are looked for together among each word's newest matches", () => {
  const { db, add } = segmentsMemory();
  // Budget 4, two words: the newest 2 matches of each word are looked in.
  for (let id = 1; id <= 100; id++) add(id, id === 90 ? "alpha beta" : id % 2 ? "alpha" : "beta");
  const search = ftsSearcher(db, 4);
  // The one segment with both words is older than the newest 2 with either: the newest with
  // either (reading the words' matches until a segment has both would read the whole memory).
  assert.deepEqual(search(ftsTerms("alpha beta"), [], 3), [100, 99, 98]);
  add(101, "alpha beta");
  assert.deepEqual(search(ftsTerms("alpha beta"), [], 3), [101, 100, 99]);
  add(102, "alpha");
  assert.deepEqual(search(ftsTerms("beta alpha"), [], 3), [101, 102, 100]);
  // Of some types only: each word's newest matches of those types.
  add(103, "alpha beta", "reasoning");
  add(104, "alpha beta");
  assert.deepEqual(search(ftsTerms("alpha beta"), ["reasoning"], 3), [103]);
  assert.deepEqual(search(ftsTerms("alpha beta"), [], 3), [104, 103, 102]);
  db.close();
});

Deno.test("ftsSearcher(): every word too common, many segments with them all: the limit is given, those first", () => {
  const { db, add } = segmentsMemory();
  const words = ["kettle", "harbor", "violet", "granite", "meadow", "lantern"];
  // Segment i has the words of the bits of i: each word in half of them, 62 with all six.
  for (let id = 1; id <= 4000; id++) add(id, words.filter((_, bit) => (id >> bit) & 1).join(" "));
  const found = ftsSearcher(db)(ftsTerms(words.join(" ")), [], 20);
  assert.equal(found.length, 20);
  // Those with every word among each word's newest 50 matches first (ids ending in six 1 bits).
  const all = found.filter((id) => (id & 63) === 63);
  assert.deepEqual(found.slice(0, all.length), all);
  assert.ok(all.length > 0 && all.length < 20, `${all.length}`);
  assert.deepEqual(found.slice(all.length), [...found.slice(all.length)].sort((a, b) => b - a));
  db.close();
});

Deno.test("fuseRankings() is reciprocal rank fusion with k = 60, normalized to 0–1", () => {
  const fused = fuseRankings([[10, 20], [20, 30]]);
  assert.deepEqual(fused.map((item) => item.id), [20, 10, 30]);
  assert.ok(Math.abs(fused[0].relevance - (1 / 62 + 1 / 61) / (2 / 61)) < 1e-12);
  assert.ok(Math.abs(fused[1].relevance - (1 / 61) / (2 / 61)) < 1e-12);
  assert.equal(fuseRankings([[5]])[0].relevance, 1);
  assert.deepEqual(fuseRankings([]), []);
});

const SYNONYMS = { automobile: "car", vehicle: "car", motor: "engine" };

const CARS = runLoop("cars", [
  iteration(0, {
    user: "My car makes a noise",
    reasoning: ["The engine might need oil."],
    response: "Check the oil level of the engine.",
  }),
  iteration(1, { user: "How often should a vehicle be serviced?", response: "Once a year." }),
]);

async function withEmbeddings(
  run: (memory: MemoryStore, server: MockEmbeddingsServer) => Promise<void>,
  options: { dimensions?: number; delayMs?: number } = {},
): Promise<void> {
  await using server = startMockEmbeddingsServer({
    synonyms: SYNONYMS,
    delayMs: options.delayMs,
  });
  await withMemory((memory) => run(memory, server), {
    embeddings: { baseURL: server.url, model: "mock-embed", dimensions: options.dimensions },
  });
}

Deno.test("retrieve() with embeddings finds by meaning what shares no word with the query", async () => {
  await withEmbeddings(async (memory, server) => {
    assert.deepEqual(await memory.archive(CARS), { segments: 5, embedded: true });
    await memory.archive(GARDENING);
    assert.equal(memory.stats().vectors, 7);
    // The segments were sent in one batch, with the model and the dimension.
    const [first] = server.requests;
    assert.equal(first.inputs.length, 5);
    assert.equal(first.body.model, "mock-embed");
    assert.equal(first.body.dimensions, 32);

    // "automobile" is in no segment: only vectors can find the car ones.
    const byMeaning = await memory.retrieve("automobile");
    assert.ok(byMeaning.length > 0);
    assert.match(byMeaning[0].text, /car|vehicle/);
    assert.ok(byMeaning.every((s) => s.relevance <= 0.5)); // one ranking of two
    assert.equal(server.requests.at(-1)?.inputs[0], "automobile");

    // Fused: "engine" segments found by both rankings, "vehicle" ones by vectors alone.
    const fused = await memory.retrieve("automobile engine");
    const engine = fused.find((s) => s.text === "The engine might need oil.");
    const vehicle = fused.find((s) => s.text === "How often should a vehicle be serviced?");
    assert.ok(engine && vehicle, JSON.stringify(fused));
    assert.ok(engine.relevance > 0.5, `engine: ${engine.relevance}`);
    assert.ok(vehicle.relevance <= 0.5, `vehicle: ${vehicle.relevance}`);
    assert.ok(fused.indexOf(engine) < fused.indexOf(vehicle));
    assert.ok(fused.every((s, i) => i === 0 || s.relevance <= fused[i - 1].relevance));
  }, { dimensions: 32 });
});

Deno.test("retrieve() without embeddings does not find what shares no word", async () => {
  await withMemory(async (memory) => {
    await memory.archive(CARS);
    assert.deepEqual(await memory.retrieve("automobile"), []);
  });
});

Deno.test("archive() survives an embeddings outage; the next archive and reindex() catch up", async () => {
  await withEmbeddings(async (memory, server) => {
    server.status = 503;
    const result = await memory.archive(CARS);
    assert.equal(result.segments, 5);
    assert.equal(result.embedded, false);
    assert.match(result.reason ?? "", /503/);
    // Stored all the same, and found by full text; a failing query embedding falls back to it.
    assert.equal(memory.stats().segments, 5);
    assert.equal(memory.stats().vectors, 0);
    assert.equal((await memory.retrieve("engine oil"))[0].text, "The engine might need oil.");

    server.status = undefined;
    // The next archive embeds its own segments and the ones the outage left.
    assert.deepEqual(await memory.archive(GARDENING), { segments: 2, embedded: true });
    assert.equal(memory.stats().vectors, 7);
    assert.match((await memory.retrieve("automobile"))[0].text, /car|vehicle/);

    server.status = 500;
    const other = runLoop("other", [iteration(0, { user: "motor trouble", response: "Fixed." })]);
    assert.equal((await memory.archive(other)).embedded, false);
    await assert.rejects(memory.reindex(), (error) => {
      assert.ok(error instanceof MemoryError && error.reason === "embeddings");
      assert.match(error.message, /HTTP 500/);
      return true;
    });
    server.status = undefined;
    assert.deepEqual(await memory.reindex(), { embedded: 2 });
    assert.deepEqual(await memory.reindex(), { embedded: 0 });
    assert.equal(memory.stats().vectors, 9);
  });
});

Deno.test("archive() again keeps the vectors of unchanged segments", async () => {
  await withEmbeddings(async (memory, server) => {
    await memory.archive(CARS);
    const sent = server.requests.length;
    const longer = { ...CARS, iterations: [...CARS.iterations, iteration(2, { user: "Thanks" })] };
    assert.deepEqual(await memory.archive(longer), { segments: 6, embedded: true });
    assert.deepEqual(server.requests.slice(sent).map((r) => r.inputs), [["Thanks"]]);
    assert.equal(memory.stats().vectors, 6);
    assert.match((await memory.retrieve("automobile"))[0].text, /car|vehicle/);
  });
});

Deno.test("reindex() without embeddings is refused", async () => {
  await withMemory(async (memory) => {
    const error = await memory.reindex().catch((e) => e);
    assert.ok(error instanceof MemoryError && error.reason === "embeddings");
  });
});

Deno.test("close() stops embedding in progress; a closed memory refuses calls", async () => {
  await withEmbeddings(async (memory) => {
    const archiving = memory.archive(CARS);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const start = performance.now();
    await memory.close();
    assert.ok(performance.now() - start < 2_000);
    const result = await archiving;
    assert.equal(result.embedded, false);
    assert.match(result.reason ?? "", /closed/);
    for (const call of [() => memory.retrieve("x"), () => memory.archive(CARS)]) {
      const error = await call().catch((e) => e);
      assert.ok(error instanceof MemoryError && error.reason === "closed");
    }
    assert.throws(() => memory.stats(), MemoryError);
    await memory.close(); // twice is fine
  }, { delayMs: 5_000 });
});

Deno.test("a file memory persists across close and reopen, in WAL mode", async () => {
  const dir = await tempDir();
  try {
    const path = join(dir, "memory.db");
    const first = await openMemory({ path });
    await first.archive(DEBUGGING);
    await first.archive(GARDENING);
    await first.close();

    const db = new DatabaseSync(path);
    assert.equal(db.prepare("PRAGMA journal_mode").get()?.journal_mode, "wal");
    db.close();

    await using second = await openMemory({ path });
    assert.deepEqual(await second.runLoop("debugging"), DEBUGGING);
    assert.deepEqual(counts(second.stats()), { runLoops: 2, segments: 15, vectors: 0 });
    const [best] = await second.retrieve("exclusive transaction");
    assert.deepEqual(best.anchor, segmentRunLoop(DEBUGGING)[12].anchor);
    assert.deepEqual((await second.recent()).map((loop) => loop.id), ["gardening", "debugging"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openMemory() refuses a database of a future schema version, and a file that is not one", async () => {
  const dir = await tempDir();
  try {
    const path = join(dir, "memory.db");
    await (await openMemory({ path })).close();
    const db = new DatabaseSync(path);
    db.prepare("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)").run(
      MEMORY_SCHEMA_VERSION + 1,
      at(0),
    );
    db.close();
    const error = await openMemory({ path }).catch((e) => e);
    assert.ok(error instanceof MemoryError, String(error));
    assert.equal(error.reason, "unsupported_version");
    assert.match(error.message, new RegExp(`schema version ${MEMORY_SCHEMA_VERSION + 1}`));
    assert.match(error.message, /upgrade/);

    const junk = join(dir, "junk.db");
    await Deno.writeTextFile(junk, "this is not a database at all, just some text ".repeat(100));
    const invalid = await openMemory({ path: junk }).catch((e) => e);
    assert.ok(invalid instanceof MemoryError && invalid.reason === "invalid", String(invalid));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("vectorIndex() finds the nearest vectors the same with the SIMD scan and without", () => {
  let seed = 7;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647 - 0.5;
  const dimensions = 100;
  const vectors = Array.from({ length: 2000 }, () => Array.from({ length: dimensions }, random));
  const simd = vectorIndex(dimensions);
  const plain = vectorIndex(dimensions, { wasm: false });
  vectors.forEach((vector, id) => {
    simd.add(id, vector, id % 3);
    plain.add(id, vector, id % 3);
  });
  for (let q = 0; q < 20; q++) {
    const query = Array.from({ length: dimensions }, random);
    const a = simd.search(query, 10);
    const b = plain.search(query, 10);
    assert.deepEqual(a.map((hit) => hit.id), b.map((hit) => hit.id));
    for (const [i, hit] of a.entries()) assert.ok(Math.abs(hit.score - b[i].score) < 1e-5);
  }
  // An exact copy is found first, with similarity 1; removal and tags work.
  assert.equal(simd.search(vectors[1234], 1)[0].id, 1234);
  assert.ok(Math.abs(simd.search(vectors[1234], 1)[0].score - 1) < 1e-5);
  assert.ok(simd.remove(1234));
  assert.ok(!simd.remove(1234));
  assert.notEqual(simd.search(vectors[1234], 1)[0].id, 1234);
  assert.equal(simd.size, 1999);
  assert.equal(simd.search(vectors[1999], 1)[0].id, 1999); // the last one moved into the hole
  assert.ok(simd.search(vectors[5], 50, { tags: 1 << 2 }).every((hit) => hit.id % 3 === 2));
  assert.throws(() => simd.add(1, [1, 2]), RangeError);
});

Deno.test("openMemoryInWorker(): what cannot reach the thread is refused with a rejection, and the memory closes clean", async () => {
  const dir = await tempDir();
  try {
    const memory = await openMemoryInWorker({ path: join(dir, "memory.db") });
    let answer: Promise<unknown> | undefined;
    assert.doesNotThrow(() => {
      answer = memory.retrieve("lock", { excludeRunLoop: Symbol("loop") as never });
    });
    await assert.rejects(answer!, /retrieve\(\) was given what cannot reach the memory's thread/);
    await assert.rejects(memory.archive((() => {}) as never), TypeError);
    // Nothing is left waiting: the memory still answers, then closes.
    assert.deepEqual(await memory.retrieve("lock"), []);
    await memory.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openMemoryInWorker() does the same work on a thread of its own", async () => {
  const dir = await tempDir();
  try {
    const path = join(dir, "memory.db");
    const memory = await openMemoryInWorker({ path });
    assert.deepEqual(await memory.archive(DEBUGGING), { segments: 13 });
    assert.deepEqual(await memory.archive(GARDENING), { segments: 2 });
    const expected = segmentRunLoop(DEBUGGING);
    const [best] = await memory.retrieve("exclusive transaction");
    assert.deepEqual(best.anchor, expected[12].anchor);
    assert.deepEqual((await memory.expand(best.anchor)).segments, expected.slice(9, 13));
    assert.deepEqual(
      (await memory.retrieve("tomatoes", { types: ["user"] }))[0].text,
      GARDENING
        .iterations[0].userMessage,
    );
    assert.deepEqual(await memory.runLoop("gardening"), GARDENING);
    assert.deepEqual((await memory.recent()).map((loop) => loop.id), ["gardening", "debugging"]);
    assert.deepEqual(counts(memory.stats()), { runLoops: 2, segments: 15, vectors: 0 });
    // Errors cross back as what they were.
    const missing = await memory.expand({ ...best.anchor, runLoopId: "nope" }).catch((e) => e);
    assert.ok(missing instanceof MemoryError && missing.reason === "not_found", String(missing));
    await assert.rejects(memory.expand(best.anchor, -1), RangeError);
    const refused = await memory.reindex().catch((e) => e);
    assert.ok(refused instanceof MemoryError && refused.reason === "embeddings");
    // Calls at once are all answered, each with its own result.
    const many = await Promise.all(
      ["exclusive", "tomatoes", "locked", "frost"].map((query) => memory.retrieve(query)),
    );
    assert.deepEqual(many.map((found) => found[0].anchor.runLoopId), [
      "debugging",
      "gardening",
      "debugging",
      "gardening",
    ]);
    await memory.close();
    const closed = await memory.retrieve("x").catch((e) => e);
    assert.ok(closed instanceof MemoryError && closed.reason === "closed", String(closed));
    assert.throws(() => memory.stats(), MemoryError);
    await memory.close(); // twice is fine

    // What the thread wrote is the same database.
    await using again = await openMemory({ path });
    assert.deepEqual(await again.runLoop("debugging"), DEBUGGING);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openMemoryInWorker() reports an unusable database, and does not keep a process alive", async () => {
  const dir = await tempDir();
  try {
    const junk = join(dir, "junk.db");
    await Deno.writeTextFile(junk, "this is not a database at all, just some text ".repeat(100));
    const invalid = await openMemoryInWorker({ path: junk }).catch((e) => e);
    assert.ok(invalid instanceof MemoryError && invalid.reason === "invalid", String(invalid));

    // A script that opens one, uses it and never closes it still ends.
    const script = join(dir, "script.ts");
    const worker = new URL("../lib/memory/worker.ts", import.meta.url).href;
    await Deno.writeTextFile(
      script,
      `import { openMemoryInWorker } from ${JSON.stringify(worker)};\n` +
        `const memory = await openMemoryInWorker({ path: ":memory:" });\n` +
        `console.log((await memory.recent()).length);\n`,
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", script],
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(30_000),
    }).output();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    assert.equal(new TextDecoder().decode(output.stdout).trim(), "0");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("segmentRunLoop(): a 10 MB tool result keeps its head and tail, in a bounded number of segments", () => {
  const huge = "HEAD " + "x".repeat(10_000_000) + " TAIL";
  const segments = segmentRunLoop({
    id: "big",
    goal: "Write it",
    status: "completed",
    createdAt: "2025-01-01T00:00:00Z",
    iterations: [{
      index: 0,
      userMessage: "Write it",
      reasoning: [],
      response: "Done.",
      toolCalls: [{ id: "c1", name: "write", input: { path: "big.txt", content: huge } }],
      toolResults: [{ id: "c1", name: "read", output: huge, isError: false }],
      startedAt: "2025-01-01T00:00:00Z",
      endedAt: "2025-01-01T00:00:05Z",
    }],
  });
  const of = (type: string) => segments.filter((segment) => segment.anchor.type === type);
  for (const type of ["tool_call", "tool_result"]) {
    const texts = of(type).map((segment) => segment.text);
    const total = texts.reduce((sum, text) => sum + text.length, 0);
    assert.ok(total < MAX_ARCHIVED_TEXT * 1.3, `${type}: ${total} characters archived`);
    assert.match(texts[0], /HEAD/);
    assert.match(texts.at(-1)!, /TAIL/);
    assert.ok(texts.some((text) => /characters left out/.test(text)), type);
  }
});

Deno.test("ftsSearcher(): a word found more common than the budget is not counted again until the memory has grown", () => {
  const { db, add } = segmentsMemory();
  for (let id = 1; id <= 50; id++) add(id, id === 7 ? "common zebra" : "common");
  const counts: string[] = [];
  const prepare = db.prepare.bind(db);
  // Each count of one word's matches is seen here.
  const watched = Object.create(db, {
    prepare: {
      value(sql: string) {
        const statement = prepare(sql);
        if (!sql.includes("count(*)")) return statement;
        return {
          get(expression: string, limit: number) {
            counts.push(expression);
            return statement.get(expression, limit);
          },
        };
      },
    },
    exec: { value: db.exec.bind(db) },
    isTransaction: { get: () => db.isTransaction },
  });
  const search = ftsSearcher(watched, 5);
  assert.deepEqual(search(ftsTerms("common zebra"), [], 10), [7]);
  assert.deepEqual(counts, [
    '{text} : ("common" OR "zebra")',
    '{text} : "common"',
    '{text} : "zebra"',
  ]);
  assert.deepEqual(
    db.prepare("SELECT term, seen FROM fts_common_terms").all().map((row) => ({ ...row })),
    [{ term: '"common"', seen: 50 }],
  );
  counts.length = 0;
  assert.deepEqual(search(ftsTerms("common zebra"), [], 10), [7]);
  assert.deepEqual(counts, ['{text} : "zebra"'], "common is not counted again");
  // 64 times the budget (320) more segments later, it is counted again.
  for (let id = 51; id <= 370; id++) add(id, "other");
  counts.length = 0;
  search(ftsTerms("common zebra"), [], 10);
  assert.ok(counts.includes('{text} : "common"'), counts.join());
  db.close();
});

type Type = "user" | "reasoning" | "tool_result";

/** A memory database holding segments of one run loop (id, text, type), and a way to add more. */
function segmentsMemory(rows: Array<[number, string, Type]> = []) {
  const db = openMemoryDatabase(":memory:");
  db.exec(`INSERT INTO run_loops (id, status, created_at, archived_at, archive_seq, json)
    VALUES ('loop', 'completed', '', '', 1, '{}')`);
  const segment = db.prepare(
    `INSERT INTO segments (id, run_loop_id, seq, iteration, type, timestamp, text)
     VALUES (?, 'loop', ?, 0, ?, '', ?)`,
  );
  const index = db.prepare("INSERT INTO segments_fts (rowid, text, type) VALUES (?, ?, ?)");
  const add = (id: number, text: string, type: Type = "user") => {
    segment.run(id, id, type, text);
    index.run(id, text, type);
  };
  for (const [id, text, type] of rows) add(id, text, type);
  return { db, add };
}
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

Deno.test("ftsSearcher(): a search filtered by type gives the same results whether or not an unfiltered search recorded one of its words as common", () => {
  // Budget 5: "lock" is in 10 tool results (common overall) but in one reasoning segment only.
  const rows: Array<[number, string, Type]> = [];
  for (let id = 1; id <= 10; id++) rows.push([id, "lock", "tool_result"]);
  rows.push([11, "lock held by the writer", "reasoning"]);
  rows.push([12, "sqlite writer", "reasoning"]);
  const { db } = segmentsMemory(rows);
  const search = ftsSearcher(db, 5);
  const before = search(ftsTerms("lock sqlite"), ["reasoning"], 10);
  assert.deepEqual(sorted(before), [11, 12], "2 reasoning matches: ranked whole");
  search(ftsTerms("lock"), [], 10); // records "lock" as common
  const after = search(ftsTerms("lock sqlite"), ["reasoning"], 10);
  assert.deepEqual(sorted(after), [11, 12], "segment 11 (lock only) is lost once lock is cached");
  db.close();
});

Deno.test("ftsSearcher(): a single-word search filtered by type keeps its BM25 order once the word is recorded as common", () => {
  const rows: Array<[number, string, Type]> = [];
  for (let id = 1; id <= 10; id++) rows.push([id, "lock", "tool_result"]);
  rows.push([11, "lock lock lock lock", "reasoning"]); // best match, older
  rows.push([12, "a long reasoning about many things and a lock at the end of it", "reasoning"]);
  const { db } = segmentsMemory(rows);
  const search = ftsSearcher(db, 5);
  const before = search(ftsTerms("lock"), ["reasoning"], 1);
  search(ftsTerms("lock"), [], 10);
  const after = search(ftsTerms("lock"), ["reasoning"], 1);
  assert.deepEqual(after, before, "best match before; newest after");
  db.close();
});
