/**
 * A session file read entry by entry (`readSessionFile`, the file store's `read`) gives what the
 * file read whole gives (`parseSessionText`, `load`), whatever the size of the chunks it reads.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { readSessionFile } from "../lib/session/file_reader.ts";
import { parseSessionText } from "../lib/session/jsonl.ts";
import { checkEntryLine, sessionEntrySchema } from "../lib/session/schema.ts";
import { fileSessionStore, SessionError } from "../lib/session/mod.ts";

const HEADER =
  '{"type":"session","version":1,"id":"s1","cwd":"/w","model":"a/b","created":"2026-01-01T00:00:00Z"}';

/** Lines of every kind: multi-byte text, a blank line, a line not JSON, one of the wrong shape. */
const LINES = [
  HEADER,
  '{"type":"message","message":{"role":"user","content":"é€𝄞 naïve 日本"},"n":1,"at":"a"}',
  "",
  '{"type":"message","message":{"role":"user","content":42},"n":2,"at":"b"}',
  "not json",
  '{"type":"model","model":"a/c","n":2,"at":"c"}',
  '{"type":"compaction","state":{"summary":"s","replaces":1},"tokensBefore":9,"tokensAfter":2,"n":2,"at":"d"}',
  `{"type":"message","message":{"role":"user","content":"${"𝄞".repeat(5000)}"},"n":3,"at":"e"}`,
];

for (const ending of ["\n", '\n{"type":"message","mess']) {
  for (const chunkBytes of [1, 7, 64 * 1024]) {
    Deno.test(`readSessionFile() reads what parseSessionText() does, in chunks of ${chunkBytes} bytes${ending === "\n" ? "" : ", its last line cut off"}`, async () => {
      const path = await Deno.makeTempFile({ suffix: ".jsonl" });
      try {
        const text = LINES.join("\n") + ending;
        await Deno.writeTextFile(path, text);
        const whole = parseSessionText(text, path);
        await using reader = await readSessionFile(path, { chunkBytes });
        assert.deepEqual(reader.header, whole.header);
        assert.deepEqual(await Array.fromAsync(reader), whole.entries);
        assert.deepEqual(reader.warnings, whole.warnings);
        assert.equal(reader.warnings.length, ending === "\n" ? 2 : 3);
      } finally {
        await Deno.remove(path);
      }
    });
  }
}

Deno.test("readSessionFile() refuses a file that is not a session, and lets it go", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "x.jsonl");
    await Deno.writeTextFile(path, '{"type":"other"}\n');
    const error = await readSessionFile(path).catch((error) => error);
    assert.ok(error instanceof SessionError && error.reason === "invalid");
    await Deno.writeTextFile(path, "");
    assert.equal((await readSessionFile(path).catch((error) => error)).reason, "invalid");
    await assert.rejects(readSessionFile(join(dir, "gone.jsonl")), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the file store's read() gives a session's entries as load() replays them; stopping early lets the file go", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const store = fileSessionStore({ dir });
    const writer = await store.create({ cwd: "/w", model: "a/b" });
    for (let i = 0; i < 300; i++) {
      const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
      await writer.append({ type: "message", message: { role: "user", content: `m${i}` }, at });
    }
    await writer.close();
    const loaded = await store.load(writer.id);
    const reader = await store.read!(writer.id.slice(0, 8));
    assert.equal(reader.header.id, writer.id);
    const messages = [];
    for await (const entry of reader) if (entry.type === "message") messages.push(entry.message);
    assert.deepEqual(messages, loaded.messages);

    const early = await store.read!(writer.id);
    for await (const _entry of early) break; // leaving the loop closes it
    await early.close();
    const unread = await store.read!(writer.id);
    await unread.close(); // never iterated: closed all the same
    await assert.rejects(async () => {
      for await (const _entry of unread) break;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkEntryLine() gives what sessionEntrySchema gives, for lines of every shape", () => {
  const text = { type: "text", text: "t" };
  const call = { type: "tool_call", id: "c1", name: "read", input: { path: "a" } };
  const think = { type: "reasoning", text: "r", signature: "s" };
  const assistant = (content: unknown) => ({ role: "assistant", content });
  const tool = { role: "tool", toolCallId: "c1", name: "read", content: "out", isError: false };
  const messages: unknown[] = [
    { role: "user", content: "hi" },
    { role: "user", content: "hi", extra: { kept: true } },
    { role: "user", content: 42 },
    { role: "user" },
    assistant([text, call, think]),
    assistant([]),
    assistant("not a list"),
    assistant([{ ...text, origin: "openai" }]),
    assistant([{ ...text, origin: 5 }]),
    assistant([{ ...text, extra: { id: "x" } }]),
    assistant([{ ...text, extra: [1] }]),
    assistant([{ ...text, extra: null }]),
    assistant([{ ...call, input: undefined }]),
    assistant([{ type: "tool_call", id: "c1", name: "read" }]),
    assistant([{ ...call, invalidInput: "{" }]),
    assistant([{ ...call, invalidInput: 1 }]),
    assistant([{ ...think, signature: null }]),
    assistant([{ ...think, redacted: "r" }]),
    assistant([{ type: "image", url: "u" }]),
    assistant([null]),
    assistant([[text]]),
    tool,
    { ...tool, isError: "no" },
    { ...tool, toolCallId: undefined },
    { role: "system", content: "s" },
    null,
    [],
    "text",
  ];
  const values: unknown[] = [];
  for (const message of messages) {
    for (const at of ["2026-01-01T00:00:00Z", undefined, 5, null]) {
      values.push({ type: "message", message, n: 1, ...(at === undefined ? {} : { at }) });
    }
  }
  values.push(
    { type: "model", model: "a/b", n: 1, at: "x" },
    { type: "model", model: 5, at: "x" },
    { type: "compaction", state: { summary: "s", replaces: 2 }, tokensBefore: -1, at: "x" },
    { type: "compaction", state: { summary: "s", replaces: 1.5 }, at: "x" },
    { type: "other", at: "x" },
    [{ type: "message", message: { role: "user", content: "hi" } }],
    null,
    "line",
  );
  for (const value of values) {
    const copy = structuredClone(value);
    const checked = checkEntryLine(value);
    const parsed = sessionEntrySchema.safeParse(copy);
    const what = JSON.stringify(value);
    assert.equal(checked.entry !== undefined, parsed.success, what);
    if (parsed.success) assert.deepEqual(checked.entry, parsed.data, what);
    else assert.ok(checked.problem, what);
  }
});

Deno.test({
  name: "checkEntryLine: a message line with a __proto__ key reads as zod reads it",
  fn() {
    const line =
      '{"type":"message","message":{"role":"user","content":"hi","__proto__":{"polluted":1}},"at":"x"}';
    const zod = sessionEntrySchema.parse(JSON.parse(line));
    const fast = checkEntryLine(JSON.parse(line)).entry;
    assert.deepEqual(Object.keys(fast!.type === "message" ? fast!.message : {}), [
      "role",
      "content",
    ]);
    assert.equal(JSON.stringify(fast), JSON.stringify(zod));
  },
});
