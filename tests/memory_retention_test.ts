/**
 * Retention of the long-term memory: a policy drops what it says, whole and oldest first, and
 * nothing else; what remains is found by recall, its anchors intact, and nothing points at what
 * went. The counts stay right through every change. And `agent memory` through the real CLI.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  checkRetention,
  type MemoryStore,
  openMemory,
  openMemoryInWorker,
  type RunLoop,
} from "../lib/memory/mod.ts";
import { memoryPath } from "../lib/cli/memory.ts";
import { parseMemoryArgs } from "../lib/cli/memory_command.ts";
import { createRecallTool } from "../lib/runloop/recall.ts";
import { startMockEmbeddingsServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { type CliPlace, runCli } from "./cli_run_support.ts";

const AT = "2026-01-01T00:00:00.000Z";

/** Run loop `n`: its goal and answer carry a word of its own (`topic<n>`) and a shared one. */
function loop(n: number, extra: Partial<RunLoop> = {}): RunLoop {
  return {
    id: `loop-${String(n).padStart(3, "0")}`,
    goal: `Look into topic${n}`,
    status: "completed",
    createdAt: AT,
    completedAt: AT,
    iterations: [{
      index: 0,
      userMessage: `Look into topic${n} please`,
      reasoning: [`Reasoning about topic${n} and the shared harbour.`],
      toolCalls: [{ id: "c1", name: "bash", input: { command: `grep topic${n}` } }],
      toolResults: [{
        id: "c1",
        name: "bash",
        output: `topic${n} found in harbour.txt`,
        isError: false,
      }],
      response: `topic${n} is settled, near the harbour.`,
      startedAt: AT,
      endedAt: AT,
    }],
    ...extra,
  };
}

async function tempFile(): Promise<string> {
  return join(await Deno.makeTempDir({ prefix: "memory_retention_" }), "memory.db");
}

/** The counts as the tables hold them, read through a connection of its own. */
function tableCounts(path: string) {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const n = (sql: string) => Number(db.prepare(sql).get()?.n);
    return {
      runLoops: n("SELECT count(*) AS n FROM run_loops"),
      segments: n("SELECT count(*) AS n FROM segments"),
      indexed: n("SELECT count(*) AS n FROM segments_fts WHERE segments_fts MATCH 'harbour'"),
      vectors: n("SELECT count(*) AS n FROM vectors"),
    };
  } finally {
    db.close();
  }
}

/** Sets when run loops were archived, as if that long ago. */
function archivedDaysAgo(path: string, ids: string[], days: number): void {
  const db = new DatabaseSync(path);
  const at = new Date(Date.now() - days * 86_400_000).toISOString();
  for (const id of ids) db.prepare("UPDATE run_loops SET archived_at = ? WHERE id = ?").run(at, id);
  db.close();
}

/** The words searches recorded as common (`fts_common_terms`), read through a connection of its own. */
function commonWords(path: string): unknown[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return db.prepare("SELECT term FROM fts_common_terms").all().map((row) => row.term);
  } finally {
    db.close();
  }
}

async function archiveAll(memory: MemoryStore, from: number, to: number): Promise<void> {
  for (let n = from; n <= to; n++) await memory.archive(loop(n));
}

Deno.test("retention: maxRunLoops drops the oldest whole, index rows and all, and keeps the newest", async () => {
  const path = await tempFile();
  await using memory = await openMemory({ path });
  await archiveAll(memory, 1, 10);
  const perLoop = memory.stats().segments / 10;
  const result = await memory.prune({ maxRunLoops: 4 });
  assert.deepEqual(result, { runLoops: 6, outlined: 0, segments: 6 * perLoop, dryRun: false });
  for (let n = 1; n <= 10; n++) {
    const kept = await memory.runLoop(loop(n).id);
    assert.equal(kept !== undefined, n > 6, `run loop ${n}`);
    // Its own word finds it when kept, and nothing when dropped.
    const found = await memory.retrieve(`topic${n}`);
    assert.equal(found.some((hit) => hit.anchor.runLoopId === loop(n).id), n > 6, `topic${n}`);
    assert.ok(found.every((hit) => hit.anchor.runLoopId === loop(n).id), `topic${n}`);
  }
  assert.deepEqual(tableCounts(path), {
    runLoops: 4,
    segments: 4 * perLoop,
    indexed: 3 * 4, // the reasoning, the tool's result and the answer say "harbour"
    vectors: 0,
  });
  const stats = memory.stats();
  assert.equal(stats.runLoops, 4);
  assert.equal(stats.segments, 4 * perLoop);
});

Deno.test("retention: what remains is recalled with its anchors, and reading around one works", async () => {
  await using memory = await openMemory({ path: await tempFile() });
  await archiveAll(memory, 1, 6);
  const before = await memory.retrieve("topic6");
  await memory.prune({ maxRunLoops: 2 });
  const after = await memory.retrieve("topic6");
  assert.deepEqual(after.map((hit) => hit.anchor), before.map((hit) => hit.anchor));
  const { segments, runLoop } = await memory.expand(after[0].anchor, 10);
  assert.equal(runLoop.id, loop(6).id);
  assert.equal(segments.length, memory.stats().segments / 2);
  // Through the recall tool the model uses: a kept anchor reads around; a dropped one is said so.
  const recall = createRecallTool(memory);
  const around = await recall.execute({ around: `${loop(6).id}#2` }, {} as never);
  assert.match(String(around), /topic6 found in harbour\.txt/);
  await assert.rejects(
    () => Promise.resolve(recall.execute({ around: `${loop(1).id}#2` }, {} as never)),
    /No run loop "loop-001" in memory/,
  );
});

Deno.test("retention: maxAgeDays drops what was archived before the cutoff and nothing newer", async () => {
  const path = await tempFile();
  await using memory = await openMemory({ path });
  await archiveAll(memory, 1, 6);
  archivedDaysAgo(path, [loop(1).id, loop(2).id], 100);
  archivedDaysAgo(path, [loop(3).id], 89);
  const dry = await memory.prune({ maxAgeDays: 90, dryRun: true });
  assert.equal(dry.runLoops, 2);
  assert.equal(memory.stats().runLoops, 6, "a dry run drops nothing");
  const result = await memory.prune({ maxAgeDays: 90 });
  assert.equal(result.runLoops, 2);
  assert.deepEqual((await memory.recent(10)).map((kept) => kept.id).sort(), [
    loop(3).id,
    loop(4).id,
    loop(5).id,
    loop(6).id,
  ]);
  assert.equal((await memory.prune({ maxAgeDays: 90 })).runLoops, 0, "nothing more to drop");
});

Deno.test("retention: detailDays keeps the outline of older run loops, searchable under the same anchors", async () => {
  const path = await tempFile();
  await using memory = await openMemory({ path });
  await archiveAll(memory, 1, 4);
  const before = await memory.retrieve("topic2 settled");
  archivedDaysAgo(path, [loop(1).id, loop(2).id], 40);
  const dry = await memory.prune({ detailDays: 30, dryRun: true });
  assert.deepEqual(dry, { runLoops: 0, outlined: 2, segments: 6, dryRun: true });
  assert.equal(memory.stats().segments, 20, "a dry run drops nothing");
  const result = await memory.prune({ detailDays: 30 });
  assert.deepEqual(result, { runLoops: 0, outlined: 2, segments: 6, dryRun: false });
  // The outline stays: goal, user message and answer, under the anchors they had.
  const outlined = (await memory.runLoop(loop(2).id))!;
  assert.equal(outlined.goal, loop(2).goal);
  assert.equal(outlined.iterations[0].response, loop(2).iterations[0].response);
  assert.deepEqual(outlined.iterations[0].toolResults, []);
  assert.deepEqual(outlined.iterations[0].reasoning, []);
  assert.ok(outlined.detailDroppedAt);
  const after = await memory.retrieve("topic2 settled");
  const answer = (hits: typeof after) =>
    hits.find((hit) => hit.anchor.runLoopId === loop(2).id && hit.anchor.type === "response")!
      .anchor;
  assert.deepEqual(answer(after), answer(before));
  // The detail is gone from the search; newer run loops keep theirs.
  assert.equal(
    (await memory.retrieve("topic2", { types: ["tool_result", "reasoning"] })).length,
    0,
  );
  assert.equal((await memory.retrieve("topic3", { types: ["tool_result"] })).length, 1);
  const { segments } = await memory.expand(answer(after), 10);
  assert.deepEqual(segments.map((segment) => segment.anchor.type), ["user", "response"]);
  assert.deepEqual(tableCounts(path), { runLoops: 4, segments: 14, indexed: 2 + 6, vectors: 0 });
  // Done once: nothing more to outline, and archiving it again brings its detail back.
  assert.equal((await memory.prune({ detailDays: 30 })).outlined, 0);
  await memory.archive(loop(2));
  assert.equal((await memory.runLoop(loop(2).id))!.iterations[0].toolResults.length, 1);
});

Deno.test("retention: a run loop that went on from a dropped one no longer names it", async () => {
  await using memory = await openMemory({ path: await tempFile() });
  await memory.archive(loop(1));
  await memory.archive(loop(2, { seededFrom: loop(1).id }));
  await memory.archive(loop(3, { seededFrom: loop(2).id }));
  await memory.prune({ maxRunLoops: 2 });
  assert.equal(await memory.runLoop(loop(1).id), undefined);
  assert.equal((await memory.runLoop(loop(2).id))?.seededFrom, undefined);
  // A reference to a run loop still kept stays.
  assert.equal((await memory.runLoop(loop(3).id))?.seededFrom, loop(2).id);
});

Deno.test("retention: the store's policy is kept after each archive, the count never above it", async () => {
  const path = await tempFile();
  await using memory = await openMemory({ path, retention: { maxRunLoops: 5 } });
  for (let n = 1; n <= 12; n++) {
    await memory.archive(loop(n));
    assert.equal(memory.stats().runLoops, Math.min(n, 5));
  }
  assert.deepEqual(
    (await memory.recent(10)).map((kept) => kept.id),
    [12, 11, 10, 9, 8].map((n) => loop(n).id),
  );
  // Archiving an old run loop again makes it the newest: it stays, the oldest goes.
  await memory.archive(loop(8));
  assert.deepEqual(
    (await memory.recent(10)).map((kept) => kept.id),
    [8, 12, 11, 10, 9].map((n) => loop(n).id),
  );
  assert.equal(tableCounts(path).runLoops, 5);
  // With no bounds given, prune() applies the store's own policy; nothing is left to drop.
  assert.equal((await memory.prune()).runLoops, 0);
});

Deno.test("retention: maxBytes drops the oldest until the database uses about that much", async () => {
  const path = await tempFile();
  await using memory = await openMemory({ path });
  for (let n = 1; n <= 200; n++) {
    await memory.archive(loop(n, { goal: `Look into topic${n} ${"filler text ".repeat(200)}` }));
  }
  const { bytes, freeBytes } = memory.stats();
  const used = bytes - freeBytes;
  const result = await memory.prune({ maxBytes: Math.round(used / 2) });
  assert.ok(result.runLoops >= 80 && result.runLoops <= 120, String(result.runLoops));
  const kept = await memory.recent(200);
  // Oldest first: what is kept is the newest, without a gap.
  assert.deepEqual(
    kept.map((entry) => entry.id),
    Array.from({ length: kept.length }, (_, i) => loop(200 - i).id),
  );
});

Deno.test("retention: maxBytes drops only as many of the oldest as cover the excess, when they are the largest", async () => {
  // Large run loops first, then many small ones: the oldest are far larger than the average.
  const large = (n: number) =>
    loop(n, {
      iterations: [{
        ...loop(n).iterations[0],
        userMessage: Array.from({ length: 2500 }, (_, i) => `w${n}x${i}`).join(" "),
      }],
    });
  const used = (memory: MemoryStore) => {
    const { bytes, freeBytes } = memory.stats();
    return bytes - freeBytes;
  };
  const path = await tempFile();
  {
    await using memory = await openMemory({ path });
    for (let n = 1; n <= 12; n++) await memory.archive(large(n));
    await archiveAll(memory, 13, 90);
  }
  // What dropping the oldest gives back, measured on a copy, one run loop at a time.
  const copy = join(await Deno.makeTempDir({ prefix: "memory_retention_" }), "memory.db");
  await Deno.copyFile(path, copy);
  let before: number;
  const freed: number[] = [];
  {
    await using memory = await openMemory({ path: copy });
    before = used(memory);
    for (let kept = 89; kept >= 80; kept--) {
      await memory.prune({ maxRunLoops: kept });
      freed.push(before - used(memory));
    }
  }
  const maxBytes = Math.floor(before * 0.9);
  // The fewest of the oldest whose dropping brings the memory under the bound.
  const needed = 1 + freed.findIndex((bytes) => before - bytes <= maxBytes);
  assert.ok(needed >= 1 && needed < 6, `${needed} of ${freed}`);

  await using memory = await openMemory({ path });
  assert.equal(used(memory), before);
  const dry = await memory.prune({ maxBytes, dryRun: true });
  const result = await memory.prune({ maxBytes });
  assert.equal(dry.runLoops, result.runLoops);
  assert.ok(
    result.runLoops >= needed && result.runLoops <= needed + 1,
    `dropped ${result.runLoops}, ${needed} needed`,
  );
  assert.ok(used(memory) <= maxBytes, `${used(memory)} > ${maxBytes}`);
  assert.equal(memory.stats().runLoops, 90 - result.runLoops);
});

Deno.test("retention: vectors go with their segments, and the vector search no longer finds them", async () => {
  await using server = startMockEmbeddingsServer({ dimensions: 16 });
  const path = await tempFile();
  await using memory = await openMemory({
    path,
    embeddings: { baseURL: server.url, model: "mock-embed" },
  });
  await archiveAll(memory, 1, 4);
  const perLoop = memory.stats().segments / 4;
  assert.equal(memory.stats().vectors, 4 * perLoop);
  // A search loads the vectors; then two run loops go.
  assert.ok((await memory.retrieve("harbour", { limit: 50 })).length > 0);
  await memory.prune({ maxRunLoops: 2 });
  assert.equal(memory.stats().vectors, 2 * perLoop);
  assert.equal(tableCounts(path).vectors, 2 * perLoop);
  const found = await memory.retrieve("settled near the harbour", { limit: 50 });
  assert.ok(found.length > 0);
  for (const hit of found) assert.ok([loop(3).id, loop(4).id].includes(hit.anchor.runLoopId));
});

Deno.test("retention: the counts follow archives again, prunes and other connections' writes", async () => {
  const path = await tempFile();
  {
    await using memory = await openMemory({ path });
    await archiveAll(memory, 1, 5);
    // The same run loop archived again, with one iteration fewer segments.
    const shorter = loop(3);
    shorter.iterations[0].reasoning = [];
    await memory.archive(shorter);
    await memory.prune({ maxRunLoops: 3 });
    const { runLoops, segments } = memory.stats();
    const counted = tableCounts(path);
    assert.deepEqual({ runLoops, segments }, {
      runLoops: counted.runLoops,
      segments: counted.segments,
    });
  }
  // A database written before the counts existed gets them, counted once, when opened.
  const db = new DatabaseSync(path);
  db.exec("PRAGMA foreign_keys = ON");
  for (
    const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all()
  ) {
    db.exec(`DROP TRIGGER ${name}`);
  }
  db.exec(`DROP TABLE memory_counts; DROP TABLE vector_counts; DROP INDEX run_loops_by_seed;
    DELETE FROM run_loops WHERE id = '${loop(5).id}';`);
  db.close();
  await using again = await openMemory({ path });
  const counted = tableCounts(path);
  assert.equal(again.stats().runLoops, counted.runLoops);
  assert.equal(again.stats().segments, counted.segments);
  // A writer that does not count segments (an older library): vacuum() counts them again.
  const older = new DatabaseSync(path);
  older.prepare(
    `INSERT INTO segments (run_loop_id, seq, iteration, type, timestamp, text)
     VALUES (?, 99, 0, 'user', '', 'added by an older writer')`,
  ).run(loop(4).id);
  older.close();
  assert.equal(again.stats().segments, counted.segments);
  await again.vacuum();
  assert.equal(again.stats().segments, counted.segments + 1);
});

Deno.test("retention: a bad policy is refused, naming the bound", async () => {
  assert.throws(() => checkRetention({ maxRunLoops: 0 }), /maxRunLoops 0/);
  assert.throws(() => checkRetention({ maxBytes: 1.5 }), /maxBytes 1\.5/);
  assert.throws(() => checkRetention({ maxAgeDays: -1 }), /maxAgeDays -1/);
  assert.throws(() => checkRetention({ detailDays: 0 }), /detailDays 0/);
  await assert.rejects(
    () => openMemory({ path: ":memory:", retention: { maxRunLoops: -3 } }),
    RangeError,
  );
  await using memory = await openMemory({ path: ":memory:" });
  await memory.archive(loop(1));
  await assert.rejects(() => memory.prune({ maxAgeDays: 0 }), /maxAgeDays 0/);
  assert.equal(memory.stats().runLoops, 1);
});

Deno.test("retention: prune() and vacuum() work through the worker thread too", async () => {
  const path = await tempFile();
  const memory = await openMemoryInWorker({ path });
  try {
    await archiveAll(memory, 1, 30);
    assert.equal((await memory.prune({ maxRunLoops: 10 })).runLoops, 20);
    assert.equal(memory.stats().runLoops, 10);
    const { bytesBefore, bytesAfter } = await memory.vacuum();
    assert.ok(bytesAfter < bytesBefore, `${bytesBefore} → ${bytesAfter}`);
    assert.equal(memory.stats().freeBytes, 0);
    assert.equal((await memory.retrieve("topic30"))[0].anchor.runLoopId, loop(30).id);
  } finally {
    await memory.close();
  }
});

// `agent memory`, through the real CLI.

function agent(args: string[], where: CliPlace) {
  return runCli(args, where);
}

async function project() {
  const where = {
    cwd: await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_memcmd_cwd_" })),
    data: await Deno.makeTempDir({ prefix: "agent_memcmd_data_" }),
    config: await Deno.makeTempDir({ prefix: "agent_memcmd_config_" }),
  };
  return { ...where, db: memoryPath(where.data, where.cwd) };
}

Deno.test("agent memory: stats, a dry run, a prune and a vacuum of the project's memory", async () => {
  const where = await project();
  const none = await agent(["memory"], where);
  assert.equal(none.code, 0, none.stderr);
  assert.match(none.stdout, /^No memory for .+ yet \(it would be .+\.db\)\.\n$/);
  await Deno.mkdir(join(where.data, "memory"), { recursive: true, mode: 0o700 });
  await Deno.chmod(where.data, 0o700);
  {
    await using memory = await openMemory({ path: where.db });
    await archiveAll(memory, 1, 12);
  }
  const stats = await agent(["memory"], where);
  assert.equal(stats.code, 0, stats.stderr);
  assert.match(stats.stdout, /^memory of .+: .+\.db\n/);
  assert.match(stats.stdout, /\n {2}run loops {6}12 \(oldest \d{4}-\d\d-\d\d \d\d:\d\d, newest /);
  assert.match(
    stats.stdout,
    /\n {2}retention {6}run loops of the last 180 days, the newest 10,000, at most 256 MiB; their detail for 30 days\n/,
  );
  const json = JSON.parse((await agent(["memory", "stats", "--output", "json"], where)).stdout);
  assert.equal(json.runLoops, 12);
  assert.equal(json.path, where.db);
  assert.ok(json.bytesPerRunLoop > 0 && json.diskBytes >= json.bytes);

  const dry = await agent(["memory", "prune", "--keep", "5", "--dry-run"], where);
  assert.equal(dry.stdout, "Would drop 7 run loops (35 segments) of 12; nothing was dropped.\n");
  const dryJson = await agent(
    ["memory", "prune", "--keep", "5", "--dry-run", "--output", "json"],
    where,
  );
  assert.equal(JSON.parse(dryJson.stdout).kept, 5, "what would be kept");
  const pruned = await agent(["memory", "prune", "--keep", "5"], where);
  assert.match(pruned.stdout, /^Dropped 7 run loops \(35 segments\); 5 run loops kept\./);
  const again = await agent(["memory", "prune", "--keep", "5"], where);
  assert.equal(again.stdout, "Nothing to drop: 5 run loops kept.\n");
  const older = await agent(["memory", "prune", "--older-than", "30d", "--output", "json"], where);
  assert.deepEqual(JSON.parse(older.stdout).runLoops, 0);
  const vacuumed = await agent(["memory", "vacuum"], where);
  assert.equal(vacuumed.code, 0, vacuumed.stderr);
  assert.match(vacuumed.stdout, /^Vacuumed .+: the database file .+ → .+\.\n$/);
  await using memory = await openMemory({ path: where.db });
  assert.deepEqual(
    (await memory.recent(20)).map((kept) => kept.id),
    [12, 11, 10, 9, 8].map((n) => loop(n).id),
  );
});

Deno.test("agent memory: bad arguments exit 2 with what is wrong, and change nothing", async () => {
  const where = await project();
  const cases: Array<[string[], RegExp]> = [
    [["memory", "frob"], /agent memory has no command "frob": use stats, prune or vacuum/],
    [
      ["memory", "prune", "--keep", "0"],
      /--keep needs the number of run loops to keep, 1 or more, got "0"/,
    ],
    [["memory", "prune", "--keep", "ten"], /--keep needs .* got "ten"/],
    [
      ["memory", "prune", "--older-than", "90"],
      /--older-than needs an age like 90d, 12w or 36h, got "90"/,
    ],
    [["memory", "stats", "--dry-run"], /--dry-run is an option of agent memory prune/],
    [["memory", "--bogus"], /Unknown option '--bogus' for agent memory/],
    [["memory", "--output", "yaml"], /--output must be text or json, got "yaml"/],
    [["memory", "vacuum", "now"], /agent memory vacuum takes no argument "now"/],
  ];
  for (const [args, message] of cases) {
    const run = await agent(args, where);
    assert.equal(run.code, 2, args.join(" "));
    assert.match(run.stderr, message);
    assert.equal(run.stdout, "");
  }
  assert.throws(() => parseMemoryArgs(["prune", "--older-than", "0d"]), /--older-than/);
  assert.equal(parseMemoryArgs(["prune", "--older-than", "2w"]).olderThanDays, 14);
  // Nothing was created for a command that failed.
  assert.equal(await Deno.stat(where.db).catch(() => undefined), undefined);
});

Deno.test("agent memory: the settings' retention is kept by runs, and a project cannot set it", async () => {
  const where = await project();
  await using server = startMockOpenAIServer({ replies: () => ({ text: "Done." }) });
  await Deno.writeTextFile(
    join(where.config, "settings.json"),
    JSON.stringify({ memory: { retention: { maxRunLoops: 2 } } }),
  );
  await Deno.mkdir(join(where.cwd, ".agent"));
  await Deno.writeTextFile(
    join(where.cwd, ".agent", "settings.json"),
    JSON.stringify({ memory: { retention: false } }),
  );
  const run = { ...where, url: server.url };
  for (const n of [1, 2, 3]) {
    const done = await agent(["-m", "openai/test", `Task number ${n}`], run);
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stderr, /"memory\.retention" ignored; only the user settings may set it/);
  }
  await using memory = await openMemory({ path: where.db });
  assert.deepEqual((await memory.recent(10)).map((kept) => kept.goal), [
    "Task number 3",
    "Task number 2",
  ]);
  const stats = await agent(["memory"], where);
  assert.match(
    stats.stdout,
    /retention {6}run loops of the last 180 days, the newest 2, at most 256 MiB; their detail for 30 days/,
  );
});

Deno.test("retention: after an archive the oldest go in batches of 1% of maxRunLoops, and prune() is exact", async () => {
  const path = await tempFile();
  await using memory = await openMemory({ path, retention: { maxRunLoops: 300 } });
  await archiveAll(memory, 1, 300);
  // A batch is 3 here: one and two over the bound wait, the third takes all three.
  await memory.archive(loop(301));
  await memory.archive(loop(302));
  assert.equal(memory.stats().runLoops, 302);
  assert.equal((await memory.runLoop(loop(1).id))?.id, loop(1).id, "the oldest waits");
  await memory.archive(loop(303));
  assert.equal(memory.stats().runLoops, 300);
  assert.equal(tableCounts(path).runLoops, 300);
  assert.equal(await memory.runLoop(loop(3).id), undefined);
  assert.equal((await memory.runLoop(loop(4).id))?.id, loop(4).id, "and nothing newer");
  // prune() applies the policy exactly, whatever waits.
  await memory.archive(loop(304));
  assert.equal(memory.stats().runLoops, 301);
  assert.equal((await memory.prune()).runLoops, 1);
  assert.equal(tableCounts(path).runLoops, 300);
});

Deno.test("retention: after an archive, run loops past maxAgeDays wait for a batch, or a day past the cutoff", async () => {
  const path = await tempFile();
  await using memory = await openMemory({ path, retention: { maxAgeDays: 90 } });
  await archiveAll(memory, 1, 6);
  // Just past the cutoff: fewer than a batch (64), not yet a day past it: they wait.
  archivedDaysAgo(path, [loop(1).id, loop(2).id], 90.5);
  await memory.archive(loop(7));
  assert.equal(memory.stats().runLoops, 7);
  // One of them a day past the cutoff: every run loop past the cutoff goes, nothing newer.
  archivedDaysAgo(path, [loop(1).id], 91.5);
  await memory.archive(loop(8));
  assert.deepEqual(
    (await memory.recent(10)).map((kept) => kept.id).sort(),
    [3, 4, 5, 6, 7, 8].map((n) => loop(n).id),
  );
});

Deno.test("retention: the words searches found common are forgotten with the run loops dropped", async () => {
  const path = await tempFile();
  await using memory = await openMemory({ path });
  // "harbour" is in 3 segments of each run loop: in more than a search ranks (300).
  await archiveAll(memory, 1, 110);
  assert.ok(
    (await memory.retrieve("harbour topic3")).some((found) => found.text.includes("topic3")),
  );
  const recorded = () => commonWords(path);
  assert.deepEqual(recorded(), ['"harbour"']);
  assert.equal((await memory.prune({ maxRunLoops: 2 })).runLoops, 108);
  assert.deepEqual(recorded(), [], "counted again in what remains");
  // "harbour" is in 6 segments now: ranked with the other word again.
  const found = await memory.retrieve("harbour topic110");
  assert.equal(found[0].anchor.runLoopId, loop(110).id);
  assert.ok(found.some((one) => one.anchor.runLoopId === loop(109).id), "found by harbour alone");
});

Deno.test("retention: the step after an archive keeps the words searches found common; vacuum() forgets them", async () => {
  const path = await tempFile();
  await using memory = await openMemory({ path, retention: { maxRunLoops: 105 } });
  await archiveAll(memory, 1, 110);
  await memory.retrieve("harbour topic3");
  const recorded = () => commonWords(path);
  assert.deepEqual(recorded(), ['"harbour"']);
  await archiveAll(memory, 111, 112); // a batch of 1 (1% of 105) dropped after each
  assert.equal(memory.stats().runLoops, 105);
  assert.deepEqual(recorded(), ['"harbour"'], "a few of many dropped: kept");
  await memory.vacuum();
  assert.deepEqual(recorded(), []);
});
