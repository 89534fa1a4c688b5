import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Message } from "../lib/messages.ts";
import {
  defaultSessionsDir,
  fileSessionStore,
  isSecretEnvName,
  memorySessionStore,
  projectSessionsDir,
  resumeSession,
  secretRedactor,
  secretsFromEnv,
  SessionError,
  type SessionStore,
  sessionTitle,
} from "../lib/session/mod.ts";

const at = (minute: number) => new Date(Date.UTC(2025, 0, 1, 0, minute)).toISOString();
const user = (content: string): Message => ({ role: "user", content });
const MODULE = new URL("../lib/session/mod.ts", import.meta.url).href;
/** The project's configuration: a child script in a temp directory resolves "zod" with it. */
const CONFIG = fileURLToPath(new URL("../deno.json", import.meta.url));

/** A conversation with every kind of message and part. */
const CONVERSATION: Message[] = [
  user("Fix the failing test\nin lib/"),
  {
    role: "assistant",
    content: [
      { type: "reasoning", text: "Let me look.", signature: "sig-abc" },
      { type: "reasoning", text: "", redacted: "opaque==" },
      { type: "text", text: "Looking at the tests." },
      { type: "tool_call", id: "c1", name: "bash", input: { command: "deno test" } },
      {
        type: "tool_call",
        id: "c2",
        name: "read",
        input: {},
        invalidInput: "{bad",
        extra: { x: 1 },
      },
    ],
  },
  {
    role: "tool",
    toolCallId: "c1",
    name: "bash",
    content: '1 failed\n"quoted" ünïcode',
    isError: false,
  },
  { role: "tool", toolCallId: "c2", name: "read", content: "Bad arguments", isError: true },
  { role: "assistant", content: [{ type: "text", text: "Fixed." }] },
];

async function tempDir(): Promise<string> {
  return await Deno.realPath(await Deno.makeTempDir({ prefix: "session_test_" }));
}

/** Appends messages to a new session whose entries are dated from `minute` on. */
async function record(
  store: SessionStore,
  init: { id?: string; cwd: string },
  messages: Message[],
  minute = 0,
): Promise<string> {
  const writer = await store.create({ model: "openai/gpt-4.1-mini", ...init });
  for (const [i, message] of messages.entries()) {
    await writer.append({ type: "message", message, at: at(minute + i) });
  }
  await writer.close();
  return writer.id;
}

const STORES: { name: string; make(): Promise<[SessionStore, () => Promise<void>]> }[] = [
  {
    name: "fileSessionStore",
    async make() {
      const dir = await tempDir();
      return [fileSessionStore({ dir }), () => Deno.remove(dir, { recursive: true })];
    },
  },
  {
    name: "memorySessionStore",
    make: () => Promise.resolve([memorySessionStore(), () => Promise.resolve()]),
  },
];

for (const { name, make } of STORES) {
  const test = (title: string, body: (store: SessionStore) => Promise<void>) =>
    Deno.test(`${name}: ${title}`, async () => {
      const [store, cleanup] = await make();
      try {
        await body(store);
      } finally {
        await cleanup();
      }
    });

  test("what is appended loads back: every kind of message, compaction, model", async (store) => {
    const before = Date.now();
    const writer = await store.create({ cwd: "/work/app/", model: "openai/gpt-4.1-mini" });
    assert.match(writer.id, /^[0-9a-f-]{36}$/);
    for (const message of CONVERSATION.slice(0, 3)) {
      await writer.append({ type: "message", message, at: at(1) });
    }
    const state = { summary: "Looked at the tests.", replaces: 2 };
    await writer.append({
      type: "compaction",
      state: { summary: "old", replaces: 1 },
      tokensBefore: 9,
      tokensAfter: 1,
      at: at(2),
    });
    await writer.append({
      type: "compaction",
      state,
      tokensBefore: 9000,
      tokensAfter: 800,
      at: at(2),
    });
    await writer.append({ type: "model", model: "anthropic/claude-sonnet-4-5", at: at(3) });
    for (const message of CONVERSATION.slice(3)) {
      await writer.append({ type: "message", message, at: at(4) });
    }
    await writer.close();
    await assert.rejects(writer.append({ type: "model", model: "x/y", at: at(5) }), /closed/);

    const session = await store.load(writer.id);
    assert.deepEqual(session.messages, CONVERSATION);
    assert.deepEqual(session.compaction, state);
    assert.equal(session.model, "anthropic/claude-sonnet-4-5");
    assert.deepEqual(session.warnings, []);
    const { created, ...header } = session.header;
    assert.deepEqual(header, {
      type: "session",
      version: 1,
      id: writer.id,
      cwd: "/work/app",
      model: "openai/gpt-4.1-mini",
    });
    assert.ok(Date.parse(created) >= before - 1 && Date.parse(created) <= Date.now(), created);
  });

  test("stores a copy: changing a message after appending it changes nothing", async (store) => {
    const message = { role: "user", content: "first" } as const;
    const writer = await store.create({ cwd: "/w", model: "a/b" });
    await writer.append({ type: "message", message: { ...message }, at: at(0) });
    const mutable = { role: "user" as const, content: "second" };
    const appended = writer.append({ type: "message", message: mutable, at: at(1) });
    mutable.content = "changed";
    await appended;
    assert.deepEqual((await store.load(writer.id)).messages, [message, user("second")]);
  });

  test("a bad entry or id is a TypeError; a taken id is a SessionError", async (store) => {
    const writer = await store.create({ cwd: "/w", model: "a/b" });
    // @ts-expect-error: not an entry
    await assert.rejects(writer.append({ type: "note", at: at(0) }), TypeError);
    await assert.rejects(store.create({ id: "../escape", cwd: "/w", model: "a/b" }), TypeError);
    await store.create({ id: "taken", cwd: "/w", model: "a/b" });
    await assert.rejects(
      store.create({ id: "taken", cwd: "/elsewhere", model: "a/b" }).then(() => undefined),
      (error: unknown) => error instanceof SessionError && error.reason === "exists",
    );
  });

  test("open() resumes a session: entries appended later follow the earlier ones", async (store) => {
    const id = await record(store, { cwd: "/w" }, CONVERSATION.slice(0, 2));
    const writer = await store.open(id.slice(0, 6));
    assert.equal(writer.id, id);
    for (const message of CONVERSATION.slice(2)) {
      await writer.append({ type: "message", message, at: at(30) });
    }
    await writer.append({ type: "model", model: "openai/gpt-5", at: at(31) });
    await writer.close();
    const session = await store.load(id);
    assert.deepEqual(session.messages, CONVERSATION);
    assert.equal(session.model, "openai/gpt-5");
    const [info] = await store.list("/w");
    assert.deepEqual([info.messages, info.updated, info.model], [5, at(31), "openai/gpt-4.1-mini"]);
  });

  test("latest() picks the newest session of this directory only", async (store) => {
    assert.equal(await store.latest("/p/a"), undefined);
    const older = await record(store, { cwd: "/p/a" }, [user("old")], 0);
    const newer = await record(store, { cwd: "/p/a" }, [user("new")], 10);
    await record(store, { cwd: "/p/b" }, [user("other dir, newest of all")], 20);
    assert.equal((await store.latest("/p/a"))?.id, newer);
    // A session resumed and appended to becomes the newest.
    const writer = await store.open(older);
    await writer.append({ type: "message", message: user("again"), at: at(15) });
    await writer.close();
    assert.equal((await store.latest("/p/a/"))?.id, older);
  });

  test("list() orders newest first, filters by cwd, and gives titles and counts", async (store) => {
    const long = "x".repeat(200);
    const a1 = await record(store, { cwd: "/p/a" }, [user("\n  First   task\nmore"), user("2")], 0);
    const a2 = await record(store, { cwd: "/p/a" }, [user(long)], 20);
    const b1 = await record(store, { cwd: "/p/b" }, [user("Elsewhere")], 10);
    const empty = await store.create({ cwd: "/p/a", model: "a/b" });
    await empty.close();

    const all = await store.list();
    assert.deepEqual(all.map((info) => info.id), [empty.id, a2, b1, a1]);
    const inA = await store.list("/p/a");
    assert.deepEqual(inA.map((info) => info.id), [empty.id, a2, a1]);
    assert.deepEqual(inA.map((info) => [info.title, info.messages]), [
      ["", 0],
      ["x".repeat(79) + "…", 1],
      ["First task", 2],
    ]);
    assert.equal(inA[2].updated, at(1));
    assert.deepEqual(Object.keys(inA[2]).sort(), [
      "created",
      "cwd",
      "id",
      "messages",
      "model",
      "title",
      "updated",
    ]);
    assert.equal(inA[0].updated, inA[0].created);
    assert.deepEqual(await store.list("/p/none"), []);
  });

  test("list() titles a session with what the user wrote, not the notes the program put first", async (store) => {
    const memories = "[Memories from earlier work that may help]\n[abc#1 user 2025-01-01T00:00] x";
    const seed = "[Memory of run loop 1a2b3c4d, completed ]\nGoal: old\n[End of memory.]";
    await record(store, { cwd: "/p/notes" }, [user(seed), user(memories), user("Fix the build")]);
    const [info] = await store.list("/p/notes");
    assert.equal(info.title, "Fix the build");
    assert.equal(info.messages, 3);
  });

  test("a session has one writer: a second open() is refused until the first closes", async (store) => {
    const id = await record(store, { cwd: "/w" }, [user("one")]);
    const first = await store.open(id);
    const refused = await store.open(id.slice(0, 6)).catch((error) => error);
    assert.ok(refused instanceof SessionError, String(refused));
    assert.equal(refused.reason, "busy");
    assert.equal(refused.holder?.pid, Deno.pid);
    assert.match(
      refused.message,
      new RegExp(
        `^Session ${id} is being written by another process \\(pid ${Deno.pid}, this one\\)\\. ` +
          `A session has one writer at a time, so that its lines never ` +
          `interleave: wait until that process ends \\(or stop it\\), or go on in a new session\\.$`,
      ),
    );
    // A session being created is held the same way.
    const fresh = await store.create({ cwd: "/w", model: "a/b" });
    await assert.rejects(
      store.open(fresh.id),
      (error) => (error as SessionError).reason === "busy",
    );
    await fresh.close();
    await first.append({ type: "message", message: user("two"), at: at(1) });
    await first.close();
    const second = await store.open(id);
    await second.append({ type: "message", message: user("three"), at: at(2) });
    await second.close();
    assert.deepEqual((await store.load(id)).messages, [user("one"), user("two"), user("three")]);
  });

  test("resumeSession() holds the session it loads, or forks a busy one with its history", async (store) => {
    const id = await record(store, { cwd: "/w" }, CONVERSATION.slice(0, 3));
    const holder = await store.open(id);
    await holder.append({
      type: "compaction",
      state: { summary: "So far.", replaces: 2 },
      tokensBefore: 10,
      tokensAfter: 2,
      at: at(5),
    });
    await holder.append({ type: "model", model: "openai/gpt-5", at: at(6) });
    await assert.rejects(
      resumeSession(store, id),
      (error) => (error as SessionError).reason === "busy",
    );

    const fork = await resumeSession(store, id, { fork: true });
    assert.notEqual(fork.header.id, id);
    assert.equal(fork.forkedFrom?.id, id);
    assert.equal(fork.forkedFrom?.holder?.pid, Deno.pid);
    // The call c2 has no result yet in the original (its process is amid the turn): the copy
    // answers it with an error that says so.
    assert.deepEqual(fork.messages.slice(0, 3), CONVERSATION.slice(0, 3));
    assert.deepEqual(fork.messages.slice(3), [{
      role: "tool",
      toolCallId: "c2",
      name: "read",
      content: "No result: the call was still running in another process when this session " +
        "was copied from the one that process writes.",
      isError: true,
    }]);
    assert.deepEqual(fork.compaction, { summary: "So far.", replaces: 2 });
    assert.equal(fork.model, "openai/gpt-5");
    assert.equal(fork.header.cwd, "/w");
    await fork.writer.append({ type: "message", message: user("in the fork"), at: at(7) });
    await fork.writer.close();
    await holder.append({ type: "message", message: user("in the original"), at: at(7) });
    await holder.close();
    assert.deepEqual((await store.load(fork.header.id)).messages.at(-1), user("in the fork"));
    assert.deepEqual((await store.load(id)).messages.at(-1), user("in the original"));

    const resumed = await resumeSession(store, id.slice(0, 8));
    assert.equal(resumed.header.id, id);
    assert.equal(resumed.forkedFrom, undefined);
    assert.equal(resumed.messages.length, 4, "the original is as its writer left it");
    await assert.rejects(store.open(id), (error) => (error as SessionError).reason === "busy");
    await resumed.writer.close();
  });

  test("ids resolve from a unique prefix; ambiguous and unknown ones are clear errors", async (store) => {
    for (const id of ["abc123", "abd456", "zz", "zz9"]) {
      await record(store, { id, cwd: "/w" }, [user(id)]);
    }
    assert.equal((await store.load("abc")).header.id, "abc123");
    assert.equal((await store.load("zz")).header.id, "zz", "an exact id wins over a longer one");
    const ambiguous = await store.load("ab").catch((error) => error);
    assert.ok(ambiguous instanceof SessionError);
    assert.equal(ambiguous.reason, "ambiguous");
    assert.match(ambiguous.message, /"ab" is ambiguous.*abc123, abd456.*Type more/);
    const unknown = await store.open("nope").catch((error) => error);
    assert.ok(unknown instanceof SessionError);
    assert.equal(unknown.reason, "not_found");
    assert.match(unknown.message, /No session matches "nope"\. .*(list|ls )/);
  });
}

Deno.test("fileSessionStore keeps <dir>/<project>/<id>.jsonl: a header line, then a line per entry", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir, listHint: "Run agent --sessions." });
    const id = await record(store, { cwd: "/home/ada/my app" }, CONVERSATION.slice(0, 2));
    const folder = projectSessionsDir(dir, "/home/ada/my app");
    assert.match(folder, /\/home-ada-my_app-[0-9a-f]{8}$/);
    const path = join(folder, `${id}.jsonl`);
    const lines = (await Deno.readTextFile(path)).split("\n");
    assert.equal(lines.length, 4);
    assert.equal(lines[3], "");
    assert.deepEqual(JSON.parse(lines[0]).type, "session");
    assert.deepEqual(JSON.parse(lines[1]), {
      type: "message",
      message: CONVERSATION[0],
      n: 1,
      at: at(0),
    });
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(folder)).mode! & 0o777, 0o700);
    await assert.rejects(store.load("nope"), /No session matches "nope"\. Run agent --sessions\./);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("projectSessionsDir() names are readable and distinct for paths that differ only in separators", () => {
  const a = projectSessionsDir("/s", "/x/a-b");
  const b = projectSessionsDir("/s", "/x/a/b");
  assert.notEqual(a, b);
  assert.match(a, /^\/s\/x-a-b-[0-9a-f]{8}$/);
  assert.match(projectSessionsDir("/s", "/"), /^\/s\/root-[0-9a-f]{8}$/);
  const deep = projectSessionsDir("/s", "/" + "very-long-directory/".repeat(10) + "project");
  assert.ok(deep.length < 80 && deep.includes("-project-"), deep);
});

/** Writes a session file by hand. */
async function writeSession(dir: string, id: string, lines: string[]): Promise<string> {
  const folder = projectSessionsDir(dir, "/w");
  await Deno.mkdir(folder, { recursive: true });
  const path = join(folder, `${id}.jsonl`);
  await Deno.writeTextFile(path, lines.join(""));
  return path;
}
const HEADER = (version: unknown = 1) =>
  JSON.stringify({ type: "session", version, id: "s", cwd: "/w", model: "a/b", created: at(0) }) +
  "\n";
const LINE = (content: string, n: number) =>
  JSON.stringify({ type: "message", message: user(content), n, at: at(n) }) + "\n";

Deno.test("fileSessionStore tolerates a last line cut off by a crash, and appends after it safely", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    const path = await writeSession(dir, "s", [
      HEADER(),
      LINE("one", 1),
      LINE("two", 2),
      LINE("three", 3).slice(0, 30),
    ]);
    const session = await store.load("s");
    assert.deepEqual(session.messages, [user("one"), user("two")]);
    assert.deepEqual(session.warnings, [
      `the last line of ${path} was cut off (the agent probably stopped mid-write); it was skipped`,
    ]);
    assert.equal((await store.list("/w"))[0].messages, 2);

    const writer = await store.open("s");
    await writer.append({ type: "message", message: user("four"), at: at(4) });
    await writer.close();
    const resumed = await store.load("s");
    assert.deepEqual(resumed.messages, [user("one"), user("two"), user("four")]);
    assert.deepEqual(resumed.warnings, [
      `line 4 of ${path} is not valid JSON (probably cut off by a crash); it was skipped`,
    ]);
    assert.deepEqual((await store.list("/w")).map((info) => [info.messages, info.updated]), [[
      3,
      at(4),
    ]]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore skips an invalid line in the middle, naming its line number", async () => {
  const dir = await tempDir();
  try {
    const path = await writeSession(dir, "s", [
      HEADER(),
      LINE("one", 1),
      '{"type":"mess\n',
      '{"type":"alien"}\n',
      LINE("two", 2),
    ]);
    const session = await fileSessionStore({ dir }).load("s");
    assert.deepEqual(session.messages, [user("one"), user("two")]);
    assert.deepEqual(session.warnings, [
      `line 3 of ${path} is not valid JSON (probably cut off by a crash); it was skipped`,
      `line 4 of ${path} is not a session entry (type: Invalid discriminator value. Expected ` +
      `'message' | 'compaction' | 'model'); it was skipped`,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore skips lines of the wrong shape with a warning, and resumes the rest", async () => {
  const dir = await tempDir();
  try {
    const wrong = [
      '{"type":"message","message":42,"n":1,"at":"x"}',
      "[]",
      '"x"',
      "null",
      '{"type":"message","message":{"role":"system","content":"x"},"n":1,"at":"x"}',
      '{"type":"message","message":{"role":"user","content":42},"n":1,"at":"x"}',
      '{"type":"message","message":{"role":"assistant","content":"hi"},"n":1,"at":"x"}',
      '{"type":"message","message":{"role":"assistant","content":[{"type":"picture"}]},"n":1,"at":"x"}',
      '{"type":"message","message":{"role":"tool","content":"x"},"n":1,"at":"x"}',
      '{"type":"compaction","state":{"summary":5,"replaces":1},"n":1,"at":"x"}',
      '{"type":"model","model":null,"n":1,"at":"x"}',
    ];
    const path = await writeSession(dir, "s", [
      HEADER(),
      LINE("one", 1),
      ...wrong.map((line) => line + "\n"),
      LINE("two", 2),
    ]);
    const store = fileSessionStore({ dir });
    const session = await store.load("s");
    assert.deepEqual(session.messages, [user("one"), user("two")]);
    assert.equal(session.compaction, undefined);
    assert.equal(session.model, "a/b");
    assert.equal(session.warnings.length, wrong.length);
    session.warnings.forEach((warning, i) =>
      assert.match(
        warning,
        new RegExp(`^line ${i + 3} of ${path} is not a session entry \\(.+\\); it was skipped$`),
      )
    );
    assert.match(session.warnings[5], /\(message\.content: .*expected string/);
    assert.match(session.warnings[6], /\(message\.content: .*expected array/);
    assert.deepEqual((await store.list("/w")).map((info) => [info.title, info.messages]), [
      ["one", 2],
    ]);
    // Resumed and appended to, the session reads back with the same lines skipped.
    const writer = await store.open("s");
    await writer.append({ type: "message", message: user("three"), at: at(9) });
    await writer.close();
    assert.deepEqual((await store.load("s")).messages.map((m) => m.content), [
      "one",
      "two",
      "three",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore: the writer's lock dies with its process; the refusal names the holder", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    const id = await record(store, { cwd: "/w" }, [user("one")]);
    const script = join(dir, "holder.ts");
    await Deno.writeTextFile(
      script,
      `import { fileSessionStore } from ${JSON.stringify(MODULE)};
await fileSessionStore({ dir: Deno.args[0] }).open(Deno.args[1]);
console.log("holding");
setInterval(() => {}, 60_000);`,
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--config", CONFIG, "--allow-read", "--allow-write", script, dir, id],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    assert.equal((await reader.read()).value?.trim(), "holding");
    const refused = await store.open(id).catch((error) => error);
    assert.ok(refused instanceof SessionError, String(refused));
    assert.equal(refused.reason, "busy");
    assert.equal(refused.holder?.pid, child.pid);
    assert.ok(refused.message.includes(`another process (pid ${child.pid}).`), refused.message);
    // A process Deno does not let read the system's table of locks is refused all the same,
    // without a pid and without a prompt.
    const probe = join(dir, "probe.ts");
    await Deno.writeTextFile(
      probe,
      `import { fileSessionStore } from ${JSON.stringify(MODULE)};
await fileSessionStore({ dir: Deno.args[0] }).open(Deno.args[1]).catch((e) => console.log(e.message));`,
    );
    const confined = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--config",
        CONFIG,
        "--no-prompt",
        `--allow-read=${dir}`,
        `--allow-write=${dir}`,
      ]
        .concat([probe, dir, id]),
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(
      new TextDecoder().decode(confined.stdout).trim(),
      `Session ${id} is being written by another process. A session has one writer at a time, ` +
        `so that its lines never interleave: wait until that process ends (or stop it), or go ` +
        `on in a new session.`,
      new TextDecoder().decode(confined.stderr),
    );

    child.kill("SIGKILL");
    assert.equal((await child.status).signal, "SIGKILL");
    await reader.cancel();
    // Nothing to clean up: the lock went with the process.
    const writer = await store.open(id);
    await writer.append({ type: "message", message: user("two"), at: at(1) });
    await writer.close();
    assert.deepEqual((await store.load(id)).messages, [user("one"), user("two")]);
    const folder = projectSessionsDir(dir, "/w");
    const names = [...Deno.readDirSync(folder)].map((entry) => entry.name);
    assert.deepEqual(names, [`${id}.jsonl`], "nothing but the session is kept");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore refuses a session of an unknown format version", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir });
    await writeSession(dir, "v2", [HEADER(2), LINE("one", 1)]);
    for (const attempt of [() => store.load("v2"), () => store.open("v2")]) {
      const error = await attempt().then(() => undefined, (error) => error);
      assert.ok(error instanceof SessionError);
      assert.equal(error.reason, "unsupported_version");
      assert.match(error.message, /format version 2, .*reads version 1 only: update the agent/);
    }
    await writeSession(dir, "junk", ["not json\n"]);
    await assert.rejects(
      store.load("junk"),
      /is not a session: its first line is not a session header/,
    );
    assert.deepEqual(await store.list(), [], "unreadable sessions are left out of the list");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore lists big sessions from their first and last KB, as load() counts them", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir, sync: true });
    const first = "Title line of a huge prompt " + 'é\\"'.repeat(20_000);
    const messages = [
      user(first),
      ...Array.from({ length: 40 }, (_, i) => user(`message ${i} ${"y".repeat(i * 100)}`)),
    ];
    const id = await record(store, { cwd: "/w" }, messages);
    const [info] = await store.list("/w");
    assert.equal(info.messages, (await store.load(id)).messages.length);
    assert.equal(info.updated, at(40));
    assert.equal(info.title, sessionTitle(first));
    // The same file with its end cut off is read in full.
    const path = join(projectSessionsDir(dir, "/w"), `${id}.jsonl`);
    const text = await Deno.readTextFile(path);
    await Deno.writeTextFile(path, text.slice(0, -20));
    const [cut] = await store.list("/w");
    assert.deepEqual([cut.messages, cut.updated, cut.title], [40, at(39), info.title]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore lists a big session by the user's words when memories fill its first KB", async () => {
  const dir = await tempDir();
  try {
    const store = fileSessionStore({ dir, sync: true });
    const memories = `[Memories from earlier work that may help]\n${
      "[a#1 user] z\n".repeat(1_000)
    }`;
    const messages = [
      user(memories),
      user("Where is the staging database?"),
      ...Array.from({ length: 20 }, (_, i) => user(`message ${i} ${"y".repeat(i * 100)}`)),
    ];
    await record(store, { cwd: "/w" }, messages);
    const [info] = await store.list("/w");
    assert.equal(info.title, "Where is the staging database?");
    assert.equal(info.messages, messages.length);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fileSessionStore never writes a secret: a key printed by a tool is redacted in the file", async () => {
  const dir = await tempDir();
  const key = "sk-proj-Abc123SECRETxyz";
  const quoted = 'pa"ss\\word-42';
  try {
    const env: Record<string, string> = {
      OPENAI_API_KEY: key,
      DB_PASSWORD: quoted,
      SHORT_TOKEN: "1234",
    };
    // Names are scanned in the real environment only; this one is passed by name.
    const redact = secretRedactor(secretsFromEnv((name) => env[name], ["DB_PASSWORD"]));
    const store = fileSessionStore({ dir, redact });
    const id = await record(store, { cwd: "/w" }, [
      user(`use ${key}`),
      {
        role: "assistant",
        content: [{
          type: "tool_call",
          id: "c",
          name: "bash",
          input: { command: `curl -H ${key}` },
        }],
      },
      {
        role: "tool",
        toolCallId: "c",
        name: "bash",
        content: `OPENAI_API_KEY=${key}\nDB_PASSWORD=${quoted}\nSHORT_TOKEN=1234`,
        isError: false,
      },
    ]);
    const raw = await Deno.readTextFile(join(projectSessionsDir(dir, "/w"), `${id}.jsonl`));
    assert.ok(!raw.includes(key) && !raw.includes("Abc123SECRET"), raw);
    assert.ok(!raw.includes(JSON.stringify(quoted).slice(1, -1)), raw);
    const session = await store.load(id);
    assert.deepEqual(session.warnings, []);
    assert.deepEqual(session.messages[0], user("use [redacted]"));
    assert.equal(
      session.messages[2].role === "tool" && session.messages[2].content,
      "OPENAI_API_KEY=[redacted]\nDB_PASSWORD=[redacted]\nSHORT_TOKEN=1234",
    );
    // A "secret" spanning JSON syntax must not make the line unreadable.
    const odd = fileSessionStore({ dir, redact: secretRedactor(['zz"},"n":1']) });
    const oddId = await record(odd, { cwd: "/w" }, [user("zz")]);
    assert.deepEqual(await odd.load(oddId).then((s) => [s.messages, s.warnings]), [
      [user("zz")],
      [],
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("secret env names, and the values collected from them", () => {
  for (
    const name of [
      "GITHUB_TOKEN",
      "AWS_SECRET_ACCESS_KEY",
      "MY_API_KEY",
      "CLIENT_SECRET",
      "PGPASSWORD",
      "XAI_API_KEY",
    ]
  ) {
    assert.ok(isSecretEnvName(name), name);
  }
  for (const name of ["HOME", "PATH", "KEYBOARD", "TOKENIZER_DIR"]) {
    assert.ok(!isSecretEnvName(name), name);
  }
  const env: Record<string, string> = {
    GROQ_API_KEY: "gsk_1234567890",
    ODD_NAME: "odd-secret-value",
    OTHER: "not-collected",
  };
  assert.deepEqual(secretsFromEnv((name) => env[name], ["ODD_NAME"]).sort(), [
    "gsk_1234567890",
    "odd-secret-value",
  ]);
});

Deno.test("secretsFromEnv() scans all env vars when allowed, else only the known names, without prompting", async () => {
  Deno.env.set("SESSION_TEST_DEPLOY_TOKEN", "deploy-token-value-1");
  try {
    assert.ok(secretsFromEnv((name) => Deno.env.get(name)).includes("deploy-token-value-1"));
  } finally {
    Deno.env.delete("SESSION_TEST_DEPLOY_TOKEN");
  }
  const dir = await tempDir();
  try {
    const script = join(dir, "child.ts");
    await Deno.writeTextFile(
      script,
      `import { secretsFromEnv, sessionsWritable } from ${JSON.stringify(MODULE)};
const env = (name: string) => { try { return Deno.env.get(name); } catch { return undefined; } };
console.log(JSON.stringify({ secrets: secretsFromEnv(env), inside: sessionsWritable(Deno.args[0] + "/sessions"),
  outside: sessionsWritable("/elsewhere") }));`,
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--config",
        CONFIG,
        "--no-prompt",
        "--allow-read",
        `--allow-write=${dir}`,
        "--allow-env=OPENAI_API_KEY,DEPLOY_TOKEN",
        script,
        dir,
      ],
      env: { OPENAI_API_KEY: "sk-child-123456789", DEPLOY_TOKEN: "deploy-token-value-2" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    const result = JSON.parse(new TextDecoder().decode(output.stdout));
    assert.deepEqual(result, { secrets: ["sk-child-123456789"], inside: true, outside: false });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("defaultSessionsDir() follows AGENT_DATA_DIR, then XDG_DATA_HOME, then HOME", () => {
  const dir = (vars: Record<string, string>) => defaultSessionsDir((name) => vars[name]);
  assert.equal(dir({ AGENT_DATA_DIR: "/d", XDG_DATA_HOME: "/x", HOME: "/h" }), "/d/sessions");
  assert.equal(dir({ XDG_DATA_HOME: "/x", HOME: "/h" }), "/x/agent/sessions");
  assert.equal(dir({ AGENT_DATA_DIR: "", HOME: "/h" }), "/h/.local/share/agent/sessions");
  assert.equal(dir({}), undefined);
});

Deno.test("sessionTitle() keeps the first non-blank line, cut to 80 characters", () => {
  assert.equal(sessionTitle("\n\n  Refactor\tthe   loop  \nand more"), "Refactor the loop");
  assert.equal(sessionTitle("é".repeat(100)), "é".repeat(79) + "…");
  assert.equal(sessionTitle("   "), "");
});

Deno.test("a session survives SIGKILL: every acknowledged append is there, at most a torn last line", async () => {
  const dir = await tempDir();
  try {
    const script = join(dir, "child.ts");
    await Deno.writeTextFile(
      script,
      `import { fileSessionStore } from ${JSON.stringify(MODULE)};
const writer = await fileSessionStore({ dir: Deno.args[0] }).create({ id: "crash", cwd: "/crash", model: "a/b" });
const ack = new TextEncoder();
for (let i = 0; ; i++) {
  const content = String(i).padEnd((i % 13) * 40_000 + 10, "x");
  await writer.append({ type: "message", message: { role: "tool", toolCallId: "c" + i, name: "bash", content, isError: false }, at: new Date().toISOString() });
  Deno.stdout.writeSync(ack.encode(i + "\\n"));
}`,
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--config", CONFIG, "--allow-read", "--allow-write", script, dir],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    let acked = -1;
    let killed = false;
    let buffer = "";
    const decoder = new TextDecoder();
    for await (const chunk of child.stdout) {
      buffer += decoder.decode(chunk, { stream: true });
      const lines = buffer.split("\n");
      buffer = lines.pop()!;
      for (const line of lines) acked = Number(line);
      if (acked >= 150 && !killed) {
        child.kill("SIGKILL");
        killed = true;
      }
    }
    const status = await child.status;
    assert.equal(status.signal, "SIGKILL");
    assert.ok(acked >= 150, `acknowledged ${acked}`);

    const session = await fileSessionStore({ dir }).load("crash");
    assert.ok(
      session.messages.length >= acked + 1,
      `${session.messages.length} messages, ${acked + 1} acknowledged`,
    );
    session.messages.forEach((message, i) =>
      assert.ok(message.role === "tool" && message.toolCallId === `c${i}`)
    );
    assert.ok(session.warnings.length <= 1, session.warnings.join("\n"));
    for (const warning of session.warnings) {
      assert.match(warning, /^the last line of .* was cut off/);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
