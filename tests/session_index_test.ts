import "./isolated_env.ts";
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Message } from "../lib/messages.ts";
import {
  fileSessionStore,
  memorySessionStore,
  projectSessionsDir,
  pruneSessions,
  SessionError,
  type SessionInfo,
  type SessionStore,
  type SessionWriter,
} from "../lib/session/mod.ts";
import { encodeEntry, encodeHeader } from "../lib/session/jsonl.ts";
import { SESSION_INDEX_FILE, systemBoot } from "../lib/session/index_db.ts";
import { pruneReport } from "../lib/cli/sessions_command.ts";
import { createAgentHandler } from "../lib/service/mod.ts";
import { scriptedModel } from "../lib/testing/scripted_model.ts";

const MODULE = new URL("../lib/session/mod.ts", import.meta.url).href;
const CONFIG = fileURLToPath(new URL("../deno.json", import.meta.url));
const at = (minute: number) => new Date(Date.UTC(2025, 0, 1, 0, minute)).toISOString();
const user = (content: string): Message => ({ role: "user", content });
const ids = (infos: SessionInfo[]) => infos.map((info) => info.id);

async function tempDir(): Promise<string> {
  return await Deno.realPath(await Deno.makeTempDir({ prefix: "session_index_test_" }));
}

/** A session recorded through the store: `messages` user messages, dated from `minute` on. */
async function record(
  store: SessionStore,
  init: { id?: string; cwd: string; model?: string },
  messages: number,
  minute: number,
): Promise<string> {
  const writer = await store.create({ model: "openai/gpt-4.1-mini", ...init });
  for (let i = 0; i < messages; i++) {
    await writer.append({ type: "message", message: user(`task ${minute}`), at: at(minute + i) });
  }
  await writer.close();
  return writer.id;
}

/**
 * A session file written by another program, not through the store. It writes at a moment of
 * its own: after the file system's clock (whose ticks last a few ms) has moved on.
 */
async function writeBehind(
  dir: string,
  init: { id: string; cwd: string },
  messages: number,
  minute: number,
): Promise<string> {
  await new Promise((done) => setTimeout(done, 30));
  const folder = projectSessionsDir(dir, init.cwd);
  await Deno.mkdir(folder, { recursive: true });
  let text = encodeHeader({
    type: "session",
    version: 1,
    id: init.id,
    cwd: init.cwd,
    model: "a/b",
    created: at(minute),
  });
  for (let i = 0; i < messages; i++) {
    text += encodeEntry(
      { type: "message", message: user(`behind ${minute}`), at: at(minute + i) },
      i + 1,
    );
  }
  const path = join(folder, `${init.id}.jsonl`);
  await Deno.writeTextFile(path, text);
  return path;
}

for (const [name, make] of [["fileSessionStore", "file"], ["memorySessionStore", "memory"]]) {
  Deno.test(`${name}: list(cwd, options) pages newest first, by cursor or offset, with filters`, async () => {
    const dir = await tempDir();
    try {
      const store = make === "file" ? fileSessionStore({ dir }) : memorySessionStore();
      const made: string[] = [];
      for (let i = 0; i < 7; i++) {
        made.push(await record(store, { cwd: "/p/a", model: i % 2 ? "x/odd" : "x/even" }, 1, i));
      }
      await record(store, { cwd: "/p/b" }, 1, 100);
      const newest = made.toReversed();
      assert.deepEqual(ids(await store.list("/p/a")), newest, "the old call lists them all");

      const first = await store.list("/p/a", { limit: 3 });
      assert.deepEqual(ids(first.sessions), newest.slice(0, 3));
      assert.equal(first.total, 7);
      assert.ok(first.next);
      const second = await store.list("/p/a", { limit: 3, cursor: first.next });
      assert.deepEqual(ids(second.sessions), newest.slice(3, 6));
      const third = await store.list("/p/a", { limit: 3, cursor: second.next });
      assert.deepEqual(ids(third.sessions), newest.slice(6));
      assert.equal(third.next, undefined, "the last page has no next");
      assert.deepEqual(ids((await store.list("/p/a", { limit: 3, offset: 3 })).sessions), [
        ...newest.slice(3, 6),
      ]);

      const odd = await store.list("/p/a", { model: "x/odd" });
      assert.deepEqual(ids(odd.sessions), newest.filter((_, i) => i % 2 === 1));
      assert.equal(odd.total, 3);
      const recent = await store.list("/p/a", { since: at(5) });
      assert.deepEqual(ids(recent.sessions), newest.slice(0, 2));
      const byPrefix = await store.list("/p/a", { prefix: made[2].slice(0, 12) });
      assert.deepEqual(ids(byPrefix.sessions), [made[2]]);
      const everywhere = await store.list(undefined, { limit: 2 });
      assert.equal(everywhere.total, 8);
      assert.equal(everywhere.sessions[0].cwd, "/p/b");

      assert.equal((await store.latest("/p/a"))?.id, made[6]);
      assert.equal((await store.load(made[3].slice(0, 10))).header.id, made[3]);
      await assert.rejects(store.list("/p/a", { limit: 0 }), RangeError);
      await assert.rejects(store.list("/p/a", { cursor: "nonsense" }), TypeError);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("fileSessionStore: finding a session lists no project's folder when nothing changed behind it", async () => {
  const dir = await tempDir();
  const listed: string[] = [];
  const readDir = Deno.readDir;
  try {
    const store = fileSessionStore({ dir });
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push(await record(store, { cwd: "/p/a" }, 2, i));
    await store.list("/p/a", { limit: 2 });
    Object.assign(Deno, {
      readDir: (path: string | URL) => {
        listed.push(String(path));
        return readDir(path);
      },
    });
    assert.equal((await store.load(made[1])).header.id, made[1]);
    assert.equal((await store.load(made[2].slice(0, 8))).header.id, made[2]);
    assert.equal((await store.latest("/p/a"))?.id, made[4]);
    assert.equal((await store.list("/p/a", { limit: 2 })).sessions.length, 2);
    await (await store.open(made[0])).close();
    const later = fileSessionStore({ dir });
    assert.equal((await later.load(made[3])).messages.length, 2, "another process's store");
    assert.deepEqual(listed.filter((path) => path !== dir), []);
  } finally {
    Object.assign(Deno, { readDir });
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore: a store that only makes sessions records them when they close, and they are listed without listing their folder", async () => {
  const dir = await tempDir();
  const listed: string[] = [];
  const readDir = Deno.readDir;
  let lost: SessionWriter | undefined;
  const rows = () => {
    const db = new DatabaseSync(join(dir, SESSION_INDEX_FILE), { readOnly: true });
    try {
      return db.prepare("SELECT file, messages FROM sessions ORDER BY file").all()
        .map((row) => `${row.file}:${row.messages}`);
    } finally {
      db.close();
    }
  };
  try {
    const first = fileSessionStore({ dir });
    const old = await record(first, { id: "a-old", cwd: "/p/a" }, 1, 0);
    await first.list("/p/a");
    await first.close?.();
    // A run as the CLI makes one: a store of its own, one session, nothing looked up.
    const run = fileSessionStore({ dir });
    const writer = await run.create({ id: "b-new", cwd: "/p/a", model: "a/b" });
    await writer.append({ type: "message", message: user("go"), at: at(5) });
    assert.deepEqual(rows(), [`${old}:1`], "not recorded while the run goes on");
    await writer.close();
    assert.deepEqual(rows(), [`${old}:1`, "b-new:1"], "recorded as it closes, as it stands");
    await run.close?.();
    // A run that stops before its session closes leaves it to be found from the files.
    const crashed = fileSessionStore({ dir });
    lost = await crashed.create({ id: "c-lost", cwd: "/p/a", model: "a/b" });
    // Past the tick of the file system's clock it was made in, its folder's time is trusted.
    await new Promise((done) => setTimeout(done, 30));
    Object.assign(Deno, {
      readDir: (path: string | URL) => {
        listed.push(String(path));
        return readDir(path);
      },
    });
    const later = fileSessionStore({ dir });
    assert.deepEqual(ids(await later.list("/p/a")).sort(), ["a-old", "b-new", "c-lost"]);
    // (The sessions directory itself is listed for a chosen id, taken in no other folder.)
    const folders = () => listed.filter((path) => path !== dir);
    assert.deepEqual(folders(), [projectSessionsDir(dir, "/p/a")], "the lost one's folder");
    listed.length = 0;
    await later.close?.();
    const again = fileSessionStore({ dir });
    await again.create({ id: "d-next", cwd: "/p/a", model: "a/b" }).then((w) => w.close());
    await again.close?.();
    assert.deepEqual(ids(await fileSessionStore({ dir }).list("/p/a")).sort(), [
      "a-old",
      "b-new",
      "c-lost",
      "d-next",
    ]);
    assert.deepEqual(folders(), [], "its own sessions never call for listing the folder");
  } finally {
    Object.assign(Deno, { readDir });
    await lost?.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore: the index follows a session file added behind its back", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    const mine = await record(store, { cwd: "/p/a" }, 1, 0);
    assert.deepEqual(ids(await store.list("/p/a")), [mine]);
    await writeBehind(dir, { id: "added-0001", cwd: "/p/a" }, 3, 50);
    assert.deepEqual(ids((await store.list("/p/a", { limit: 5 })).sessions), ["added-0001", mine]);
    assert.equal((await store.latest("/p/a"))?.messages, 3);
    assert.equal((await store.load("added-0")).messages.length, 3, "by prefix");
    // In a project the index had not seen, found by id.
    await writeBehind(dir, { id: "elsewhere-1", cwd: "/p/new" }, 1, 60);
    assert.equal((await store.load("elsewhere-1")).header.cwd, "/p/new");
    assert.deepEqual(ids(await store.list("/p/new")), ["elsewhere-1"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore: the index follows a session file removed behind its back", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    const kept = await record(store, { cwd: "/p/a" }, 1, 0);
    const gone = await record(store, { cwd: "/p/a" }, 1, 5);
    assert.equal((await store.latest("/p/a"))?.id, gone);
    await new Promise((done) => setTimeout(done, 30));
    await Deno.remove(join(projectSessionsDir(dir, "/p/a"), `${gone}.jsonl`));
    assert.equal((await store.latest("/p/a"))?.id, kept);
    assert.deepEqual(ids(await store.list("/p/a")), [kept]);
    const error = await store.load(gone).catch((error) => error);
    assert.ok(error instanceof SessionError && error.reason === "not_found", String(error));
    assert.equal((await store.load(kept.slice(0, 6))).header.id, kept, "its prefix is unique now");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore: the index follows a session file cut off mid-line behind its back", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    const older = await record(store, { cwd: "/p/a" }, 1, 42);
    const cut = await record(store, { cwd: "/p/a" }, 4, 40);
    assert.deepEqual((await store.list("/p/a")).map((info) => info.messages), [4, 1]);
    const path = join(projectSessionsDir(dir, "/p/a"), `${cut}.jsonl`);
    const text = await Deno.readTextFile(path);
    // A crash while the third message was written: two whole lines, then half a line.
    const lines = text.split("\n");
    const kept = lines.slice(0, 3).join("\n") + "\n" + lines[3].slice(0, 20);
    await Deno.writeTextFile(path, kept);
    const [first, second] = await store.list("/p/a");
    assert.deepEqual([first.id, first.messages, first.updated], [older, 1, at(42)]);
    assert.deepEqual([second.id, second.messages, second.updated], [cut, 2, at(41)]);
    const loaded = await store.load(cut);
    assert.equal(loaded.messages.length, 2);
    assert.match(loaded.warnings[0], /cut off/);
    // Appending goes on after it, and the index follows.
    const writer = await store.open(cut.slice(0, 8));
    await writer.append({ type: "message", message: user("again"), at: at(90) });
    await writer.close();
    const latest = await store.latest("/p/a");
    assert.deepEqual([latest?.id, latest?.messages], [cut, 3]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore: a damaged or missing index is made again from the files", async () => {
  const dir = await tempDir();
  try {
    await writeBehind(dir, { id: "one-1", cwd: "/p/a" }, 1, 1);
    await writeBehind(dir, { id: "two-2", cwd: "/p/a" }, 2, 2);
    await writeBehind(dir, { id: "three-3", cwd: "/p/b" }, 3, 3);
    const index = join(dir, SESSION_INDEX_FILE);
    await Deno.writeTextFile(index, "this is not a database ".repeat(400));
    const store = fileSessionStore({ dir });
    assert.deepEqual(ids(await store.list("/p/a")), ["two-2", "one-1"]);
    assert.equal((await store.load("thr")).messages.length, 3);
    const db = new DatabaseSync(index, { readOnly: true });
    try {
      assert.equal(db.prepare("SELECT count(*) AS n FROM sessions").get()?.n, 3);
    } finally {
      db.close();
    }
    for (const suffix of ["", "-wal", "-shm"]) {
      await Deno.remove(index + suffix).catch(() => {});
    }
    const again = fileSessionStore({ dir });
    assert.deepEqual(ids((await again.list(undefined, { limit: 10 })).sessions), [
      "three-3",
      "two-2",
      "one-1",
    ]);
    assert.ok((await Deno.stat(index)).isFile, "the index is there again");
    if (Deno.build.os !== "windows") assert.equal((await Deno.stat(index)).mode! & 0o777, 0o600);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore: an index last written in another boot of the system is checked against the files", async () => {
  // What a power cut can leave of an index that is not flushed to the disk: a row lost while
  // its folder's time was kept. In the same boot nothing can lose it (a process that dies
  // leaves the index whole); in the next one, every folder is compared with its rows again.
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    const first = await record(store, { cwd: "/p/a" }, 1, 1);
    const second = await record(store, { cwd: "/p/a" }, 2, 2);
    await store.close?.();
    const boot = systemBoot();
    assert.ok(boot, "the boot of the system can be told here");
    const lose = (recorded: string) => {
      const db = new DatabaseSync(join(dir, SESSION_INDEX_FILE));
      try {
        db.prepare("DELETE FROM sessions WHERE file = ?").run(second);
        db.prepare("UPDATE meta SET value = ? WHERE key = 'boot'").run(recorded);
      } finally {
        db.close();
      }
    };
    lose(boot);
    const same = fileSessionStore({ dir });
    assert.deepEqual(ids(await same.list("/p/a")), [first], "in one boot, the index is trusted");
    await same.close?.();
    lose("another boot");
    const next = fileSessionStore({ dir });
    assert.deepEqual(ids(await next.list("/p/a")), [second, first]);
    assert.equal((await next.latest("/p/a"))?.messages, 2);
    await next.close?.();
    const db = new DatabaseSync(join(dir, SESSION_INDEX_FILE), { readOnly: true });
    try {
      assert.equal(db.prepare("SELECT value FROM meta WHERE key = 'boot'").get()?.value, boot);
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore: in another boot, rows whose folder's record was lost go with their folder", async () => {
  // Pages of an index never flushed can come back from different moments after a power cut,
  // each sound: here the record of a folder is lost, its sessions' rows are not, and the
  // folder itself is gone.
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    await record(store, { id: "kept-1", cwd: "/p/a" }, 1, 1);
    await record(store, { id: "gone-2", cwd: "/p/b" }, 2, 2);
    await store.close?.();
    const folder = projectSessionsDir(dir, "/p/b");
    const db = new DatabaseSync(join(dir, SESSION_INDEX_FILE));
    try {
      db.prepare("DELETE FROM dirs WHERE name = ?").run(folder.slice(dir.length + 1));
      db.prepare("UPDATE meta SET value = 'another boot' WHERE key = 'boot'").run();
    } finally {
      db.close();
    }
    await Deno.remove(folder, { recursive: true });
    const next = fileSessionStore({ dir });
    assert.deepEqual(ids(await next.list()), ["kept-1"]);
    assert.equal(await next.latest("/p/b"), undefined);
    await next.close?.();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "fileSessionStore: a writer that closes after its store records what it wrote and leaves the index closed",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = await tempDir();
    const held = () =>
      [...Deno.readDirSync("/proc/self/fd")].filter((entry) => {
        try {
          const target = Deno.readLinkSync(`/proc/self/fd/${entry.name}`);
          return target.startsWith(join(dir, SESSION_INDEX_FILE));
        } catch {
          return false;
        }
      }).length;
    try {
      const store = fileSessionStore({ dir });
      const writer = await store.create({
        id: "late-1",
        model: "openai/gpt-4.1-mini",
        cwd: "/p/a",
      });
      await store.list("/p/a");
      await store.close?.();
      await writer.append({ type: "message", message: user("late"), at: at(1) });
      await writer.close();
      assert.equal(held(), 0, "the index is not held open");
      const again = fileSessionStore({ dir });
      assert.equal((await again.latest("/p/a"))?.messages, 1);
      await again.close?.();
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("fileSessionStore: a session written by another store (another process) is listed at once", async () => {
  const dir = await tempDir();
  try {
    const one = fileSessionStore({ dir });
    const two = fileSessionStore({ dir });
    const first = await record(one, { cwd: "/p/a" }, 1, 0);
    assert.equal((await two.latest("/p/a"))?.id, first);
    const second = await record(two, { cwd: "/p/a" }, 1, 10);
    assert.equal((await one.latest("/p/a"))?.id, second);
    // A writer still open is listed by what it has written so far.
    const writer = await two.open(first);
    await writer.append({ type: "message", message: user("more"), at: at(20) });
    const [now] = await one.list("/p/a");
    assert.deepEqual([now.id, now.messages], [first, 2]);
    await writer.close();
    // Closed, a store lets go of its index, and opens it again when used.
    await one.close?.();
    assert.equal((await one.latest("/p/a"))?.id, first);
    await one.close?.();
    await two.close?.();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("pruneSessions() removes by age and by count exactly what it says", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    // Project a: sessions last updated on days 1 to 6 of January; project b: days 1 and 2.
    const day = (n: number) => n * 24 * 60;
    const a: string[] = [];
    for (let n = 1; n <= 6; n++) a.push(await record(store, { cwd: "/p/a" }, 1, day(n)));
    const b = [
      await record(store, { cwd: "/p/b" }, 1, day(1)),
      await record(store, { cwd: "/p/b" }, 1, day(2)),
    ];
    const now = new Date(Date.parse(at(day(7))));
    const days = (n: number) => n * 24 * 3600 * 1000;

    const dry = await pruneSessions(dir, { olderThan: days(4), dryRun: true, now });
    assert.deepEqual(dry.removed.map((s) => s.id).sort(), [a[0], a[1], b[0], b[1]].sort());
    assert.equal((await store.list()).length, 8, "a dry run removes nothing");

    const sizeOf = async (id: string) =>
      (await Deno.stat(join(projectSessionsDir(dir, "/p/a"), `${id}.jsonl`))).size;
    const freed = await sizeOf(a[0]) + await sizeOf(a[1]);
    const byAge = await pruneSessions(dir, { olderThan: days(4), keep: 3, now });
    // b keeps its two (the 3 newest), a loses days 1 and 2 (older than 4 days, past 3 newest).
    assert.deepEqual(byAge.removed.map((s) => s.id).sort(), [a[0], a[1]].sort());
    assert.equal(byAge.bytes, freed);
    assert.deepEqual(ids(await store.list("/p/a")), a.slice(2).toReversed());
    assert.deepEqual(ids(await store.list("/p/b")), b.toReversed());

    const byCount = await pruneSessions(dir, { keep: 1, now });
    assert.deepEqual(byCount.removed.map((s) => s.id).sort(), [a[2], a[3], a[4], b[0]].sort());
    assert.deepEqual(ids(await store.list()), [a[5], b[1]]);
    const files = [];
    for await (const entry of Deno.readDir(projectSessionsDir(dir, "/p/a"))) files.push(entry.name);
    assert.deepEqual(files, [`${a[5]}.jsonl`], "the files are gone");
    const error = await store.load(a[2]).catch((error) => error);
    assert.ok(error instanceof SessionError && error.reason === "not_found");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("pruneSessions() never removes a session another process is writing", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    const held = await record(store, { cwd: "/p/a" }, 1, 0);
    const free = await record(store, { cwd: "/p/a" }, 1, 1);
    const script = join(dir, "holder.ts");
    await Deno.writeTextFile(
      script,
      `import { fileSessionStore } from ${JSON.stringify(MODULE)};
await fileSessionStore({ dir: Deno.args[0] }).open(Deno.args[1]);
console.log("holding");
setInterval(() => {}, 60_000);`,
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--config", CONFIG, "--allow-read", "--allow-write", script, dir, held],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    try {
      assert.equal((await reader.read()).value?.trim(), "holding");
      const result = await pruneSessions(dir, { keep: 0 });
      assert.deepEqual(result.removed.map((s) => s.id), [free]);
      assert.deepEqual(result.busy.map((s) => s.id), [held]);
      assert.deepEqual(ids(await store.list("/p/a")), [held]);
    } finally {
      child.kill("SIGKILL");
      await child.status;
      await reader.cancel();
    }
    // Once its writer is gone, it can go.
    assert.deepEqual((await pruneSessions(dir, { keep: 0 })).removed.map((s) => s.id), [held]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Runs the CLI in this process with `env`; its exit code and what it printed. */
async function cli(args: string[], env: Record<string, string>) {
  const { main } = await import("../cli.ts");
  let out = "";
  let err = "";
  const code = await main(args, {
    out: (text) => out += text,
    err: (text) => err += text,
    readStdin: () => Promise.resolve(undefined),
    env: (name) => env[name],
    color: false,
    onInterrupt: () => () => {},
  });
  return { code, out, err };
}

Deno.test("agent --sessions shows a page, newest first, and how to see the next", async () => {
  const data = await tempDir();
  try {
    const store = fileSessionStore({ dir: join(data, "sessions") });
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push(await record(store, { cwd: data }, 1, i));
    const env = { AGENT_DATA_DIR: data, HOME: data, OPENAI_API_KEY: "sk-test" };
    const first = await cli(["--sessions", "--limit", "2", "--cwd", data], env);
    assert.equal(first.code, 0, first.err);
    const lines = first.out.trimEnd().split("\n");
    assert.deepEqual(lines.slice(0, 2).map((line) => line.split(" ")[0]), [made[4], made[3]]);
    assert.match(
      lines[2],
      /^Sessions 1-2 of 5 in .*, newest first\. Next: .*--sessions --page 2 --limit 2$/,
    );
    const last = await cli(["--sessions", "--limit", "2", "--page", "3", "--cwd", data], env);
    assert.deepEqual(last.out.trimEnd().split("\n").map((line) => line.split(" ")[0]), [
      made[0],
      "Sessions",
    ]);
    assert.match(last.out, /Sessions 5-5 of 5 in .*, newest first\.\n$/);
    const listed = await cli(["sessions", "list", "--limit", "4", "--cwd", data], env);
    assert.equal(listed.out.split("\n").length, 6, listed.out);
    const wrong = await cli(["--page", "2"], env);
    assert.deepEqual([wrong.code, wrong.err], [2, "agent: --page is an option of --sessions\n"]);
  } finally {
    await Deno.remove(data, { recursive: true });
  }
});

Deno.test("agent sessions prune says what it removed and the bytes freed", async () => {
  const data = await tempDir();
  try {
    const store = fileSessionStore({ dir: join(data, "sessions") });
    // Updated 60, 50, 40 days ago (by their entries' dates), and one today.
    const daysAgo = (n: number) =>
      Math.round((Date.now() - n * 86_400_000 - Date.parse(at(0))) / 60_000);
    const old = [];
    for (const n of [60, 50, 40]) old.push(await record(store, { cwd: "/p/a" }, 1, daysAgo(n)));
    const today = await record(store, { cwd: "/p/a" }, 1, daysAgo(0));
    const env = { AGENT_DATA_DIR: data, HOME: data };
    const dry = await cli(
      ["sessions", "prune", "--older-than", "30d", "--keep", "2", "--dry-run"],
      env,
    );
    assert.equal(dry.code, 0, dry.err);
    assert.deepEqual(dry.out.split("\n").slice(0, 2).map((line) => line.split("  ")[1]), [
      old[1],
      old[0],
    ]);
    assert.match(
      dry.out,
      /Would remove 2 sessions \(\d+ B freed\); nothing was removed \(--dry-run\)\.\n$/,
    );
    assert.equal((await store.list("/p/a")).length, 4);
    const done = await cli(["sessions", "prune", "--older-than", "30d", "--keep", "2"], env);
    assert.match(done.out, /Removed 2 sessions \(\d+ B freed\)\.\n$/);
    assert.deepEqual(ids(await store.list("/p/a")), [today, old[2]]);
    const none = await cli(["sessions", "prune"], env);
    assert.equal(none.code, 2);
    assert.match(none.err, /needs --older-than <age>, --keep <n>, or both/);
    const bad = await cli(["sessions", "prune", "--older-than", "soon"], env);
    assert.deepEqual([bad.code, bad.out], [2, ""]);
  } finally {
    await Deno.remove(data, { recursive: true });
  }
});

/** Runs `pruneSessions(dir, options)` in a process Deno grants `permissions`; what it returned. */
async function pruneElsewhere(
  dir: string,
  options: { keep: number; dryRun?: boolean },
  permissions: string[],
) {
  const script = join(await tempDir(), "prune.ts");
  try {
    await Deno.writeTextFile(
      script,
      `import { pruneSessions } from ${JSON.stringify(MODULE)};
console.log(JSON.stringify(await pruneSessions(Deno.args[0], JSON.parse(Deno.args[1]))));`,
    );
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--config", CONFIG, ...permissions, script, dir, JSON.stringify(options)],
      stdin: "null",
    }).output();
    const text = new TextDecoder().decode(stdout);
    assert.equal(code, 0, new TextDecoder().decode(stderr));
    return JSON.parse(text) as Awaited<ReturnType<typeof pruneSessions>>;
  } finally {
    await Deno.remove(join(script, ".."), { recursive: true });
  }
}

Deno.test("pruneSessions() keeps a session it cannot remove, says why, and goes on", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push(await record(store, { cwd: "/p/a" }, 1, i));
    await store.close?.();
    const stuck = join(projectSessionsDir(dir, "/p/a"), `${made[1]}.jsonl`);
    // A file this process may not write (as a file of another user, or made immutable, is).
    const result = await pruneElsewhere(dir, { keep: 0 }, [
      "--allow-read",
      `--allow-write=${dir}`,
      `--deny-write=${stuck}`,
    ]);
    assert.deepEqual(result.removed.map((s) => s.id).sort(), [made[0], made[2]].sort());
    assert.deepEqual(result.kept.map((s) => s.id), [made[1]]);
    assert.match(result.kept[0].reason, /write access/);
    assert.ok(!result.kept[0].reason.includes(dir), "the report names the session, not its path");
    assert.match(pruneReport(result, false), new RegExp(`\nkept ${made[1]}: cannot remove: .+\n$`));
    assert.deepEqual(ids(await store.list("/p/a")), [made[1]]);

    // A dry run needs no leave to write at all.
    const dry = await pruneElsewhere(dir, { keep: 0, dryRun: true }, ["--allow-read"]);
    assert.deepEqual(dry.removed.map((s) => s.id), [made[1]]);
    assert.deepEqual(dry.kept, []);
    assert.deepEqual(ids(await store.list("/p/a")), [made[1]]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A service over `store` for the project `cwd`, asked in process; the status and JSON body. */
function service(store: SessionStore, cwd: string) {
  const handler = createAgentHandler({
    model: scriptedModel([]),
    token: false,
    cwd,
    sessions: store,
  });
  const get = async (path: string) => {
    const response = await handler(new Request(`http://localhost${path}`));
    return { status: response.status, body: await response.json() };
  };
  return { get, [Symbol.asyncDispose]: () => handler.close() };
}

Deno.test("fileSessionStore: a link among the session files is no session, by id or prefix", async () => {
  const dir = await tempDir();
  const outside = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    const mine = await record(store, { cwd: "/p/a" }, 1, 0);
    const target = await writeBehind(outside, { id: "link0000-0000", cwd: "/p/a" }, 1, 5);
    const link = join(projectSessionsDir(dir, "/p/a"), "link0000-0000.jsonl");
    await Deno.symlink(target, link);
    await using api = service(store, "/p/a");
    for (let round = 0; round < 2; round++) {
      for (const id of ["link0000-0000", "link0000"]) {
        const error = await store.load(id).catch((error) => error);
        assert.ok(error instanceof SessionError && error.reason === "not_found", String(error));
        assert.ok(!(await store.read!(id).catch(() => undefined)), `read(${id})`);
        assert.ok(!(await store.open(id).catch(() => undefined)), `open(${id})`);
        const { status, body } = await api.get(`/v1/sessions/${id}`);
        assert.equal(status, 404, JSON.stringify(body));
      }
      assert.deepEqual(ids(await store.list("/p/a")), [mine]);
      assert.equal((await api.get("/v1/sessions")).body.total, 1);
    }
    assert.equal((await Deno.readTextFile(target)).split("\n").length, 3, "the target untouched");
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("fileSessionStore: a session is found by the id it is listed by, its file's name", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    const older = await record(store, { cwd: "/p/a" }, 1, 0);
    const newer = await record(store, { cwd: "/p/a" }, 1, 5);
    const folder = projectSessionsDir(dir, "/p/a");
    // A copy beside it (a backup), and a file whose header names another session.
    await new Promise((done) => setTimeout(done, 30));
    await Deno.copyFile(join(folder, `${older}.jsonl`), join(folder, `${older}.bak.jsonl`));
    const named = await writeBehind(dir, { id: "inside-0001", cwd: "/p/a" }, 1, 2);
    await Deno.rename(named, join(folder, "outside-0001.jsonl"));
    const listed = ids(await store.list("/p/a"));
    assert.deepEqual(listed.toSorted(), [older, `${older}.bak`, newer, "outside-0001"].sort());
    for (const id of listed) {
      assert.equal((await store.load(id)).header.id, id);
      const reader = await store.read!(id);
      assert.equal(reader.header.id, id);
      await reader.close();
      const writer = await store.open(id);
      assert.equal(writer.id, id);
      await writer.close();
    }
    // Pages of one session each show every session once, and the service serves each listed.
    await using api = service(store, "/p/a");
    const paged: string[] = [];
    let cursor = "";
    for (let page = 0; page < 6; page++) {
      const { body } = await api.get(`/v1/sessions?limit=1${cursor && `&cursor=${cursor}`}`);
      assert.equal(body.total, 4);
      paged.push(...body.sessions.map((session: SessionInfo) => session.id));
      if (!body.next) break;
      cursor = encodeURIComponent(body.next);
    }
    assert.deepEqual(paged, listed);
    for (const id of listed) {
      const { status, body } = await api.get(`/v1/sessions/${id}`);
      assert.deepEqual([status, body.id], [200, id]);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore: pages through sessions of one id in two folders, each once", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    const id = await record(store, { cwd: "/p/a" }, 1, 0);
    await record(store, { cwd: "/p/a" }, 1, 9);
    // The project's folder copied whole: the same files, the same times, in another folder.
    const from = projectSessionsDir(dir, "/p/a");
    await Deno.mkdir(join(dir, "copy"));
    await Deno.copyFile(join(from, `${id}.jsonl`), join(dir, "copy", `${id}.jsonl`));
    const all = ids(await store.list());
    assert.equal(all.filter((listed) => listed === id).length, 2);
    const paged: string[] = [];
    for (let cursor: string | undefined, page = 0; page < 5; page++) {
      const { sessions, next } = await store.list(undefined, { limit: 1, cursor });
      paged.push(...ids(sessions));
      if (!(cursor = next)) break;
    }
    assert.deepEqual(paged, all);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the service's refusals of a session name no path of the server's files", async () => {
  const dir = await tempDir();
  try {
    const files = fileSessionStore({ dir });
    const id = await record(files, { cwd: "/p/a" }, 1, 0);
    // Its file gone between the listing and the read (another process pruned it).
    const gone = (): never => {
      throw new SessionError(
        `No session matches "${id}". The sessions are the files under ${dir}`,
        {
          reason: "not_found",
        },
      );
    };
    const store: SessionStore = { ...files, load: gone, read: gone };
    await using api = service(store, "/p/a");
    for (const asked of [id, id.slice(0, 8)]) {
      const { status, body } = await api.get(`/v1/sessions/${asked}`);
      assert.equal(status, 404);
      assert.ok(!JSON.stringify(body).includes(dir), JSON.stringify(body));
    }
    const { loadListedSession } = await import("../lib/service/session_lookup.ts");
    const error = await loadListedSession(store, "/p/a", id).catch((error) => error);
    assert.equal(error.status, 404);
    assert.ok(!error.message.includes(dir), error.message);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore: a new session with a random UUID looks in no other project's folder; a chosen id does", async () => {
  const dir = await tempDir();
  const { lstat } = Deno;
  const looked: string[] = [];
  try {
    const store = fileSessionStore({ dir });
    for (let i = 0; i < 5; i++) await record(store, { cwd: `/p/${i}` }, 1, i);
    Object.assign(Deno, {
      lstat: (path: string | URL) => {
        looked.push(String(path));
        return lstat(path);
      },
    });
    const id = crypto.randomUUID();
    await (await store.create({ id, cwd: "/p/new", model: "a/b" })).close();
    assert.deepEqual(looked.filter((path) => path.endsWith(`${id}.jsonl`)), []);
    await (await store.create({ id: "chosen", cwd: "/p/new", model: "a/b" })).close();
    assert.equal(looked.filter((path) => path.endsWith("chosen.jsonl")).length, 6);
    await assert.rejects(
      store.create({ id: "chosen", cwd: "/p/0", model: "a/b" }),
      (error: unknown) => error instanceof SessionError && error.reason === "exists",
    );
    await store.close?.();
  } finally {
    Object.assign(Deno, { lstat });
    await Deno.remove(dir, { recursive: true });
  }
});
