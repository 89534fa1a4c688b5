/**
 * The service's sessions over real HTTP on loopback (`Deno.serve` with the handler, sessions in
 * JSONL files): listings by pages, a session sent as it is read, the bound on reads at once,
 * and a handler that drains before its server stops.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import type { AgentHandlerOptions } from "../lib/service/handler.ts";
import { fileSessionStore, type SessionStore } from "../lib/session/mod.ts";
import { secretRedactor } from "../lib/secrets/redact.ts";
import { resolveModel } from "../lib/providers/mod.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { scriptedModel } from "../lib/testing/scripted_model.ts";
import { serveHandler } from "./serve_support.ts";

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

const CWD = "/work/app";
const SECRET = "sk-sessions-test-0123456789abcdef";

/** A file session store in a directory of its own, removed when disposed. */
async function tempStore(): Promise<{ store: SessionStore; dir: string } & AsyncDisposable> {
  const dir = await Deno.makeTempDir({ prefix: "service_sessions_" });
  return {
    store: fileSessionStore({ dir }),
    dir,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

/** A service on a free loopback port over `store`; `url` is its root. */
function serve(store: SessionStore, options: Partial<AgentHandlerOptions> = {}) {
  return serveHandler({
    model: scriptedModel([]),
    cwd: CWD,
    sessions: store,
    redact: secretRedactor([SECRET]),
    ...options,
  });
}

/** Writes `count` sessions of `cwd`, one second apart; gives their ids, oldest first. */
async function writeSessions(store: SessionStore, count: number, cwd = CWD): Promise<string[]> {
  const ids: string[] = [];
  const start = Date.parse("2026-01-01T00:00:00Z");
  for (let i = 0; i < count; i++) {
    const writer = await store.create({ cwd, model: "openai/test" });
    const at = new Date(start + i * 1000).toISOString();
    await writer.append({ type: "message", message: { role: "user", content: `task ${i}` }, at });
    await writer.close();
    ids.push(writer.id);
  }
  return ids;
}

Deno.test("service: GET /v1/sessions answers pages, newest first, each session once", async () => {
  await using temp = await tempStore();
  const ids = await writeSessions(temp.store, 120);
  await writeSessions(temp.store, 3, "/elsewhere");
  await using service = serve(temp.store);

  const first = await (await fetch(`${service.url}/v1/sessions`)).json();
  assert.equal(first.sessions.length, 50, "a page holds 50 unless told");
  assert.equal(first.total, 120, "only the service's own directory");
  assert.equal(first.sessions[0].id, ids.at(-1));
  assert.equal(first.sessions[0].title, "task 119");

  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const page: Json = await (await fetch(`${service.url}/v1/sessions?limit=45${query}`)).json();
    seen.push(...page.sessions.map((session: Json) => session.id));
    assert.equal(page.total, 120);
    cursor = page.next;
    pages++;
  } while (cursor);
  assert.equal(pages, 3);
  assert.deepEqual(seen, ids.toReversed());
  // The API's description says how to page.
  const doc = await (await fetch(`${service.url}/openapi.json`)).json();
  const listing = doc.paths["/v1/sessions"].get;
  assert.deepEqual(listing.parameters.map((p: Json) => p.name), ["limit", "cursor"]);
  assert.equal(
    listing.responses["200"].content["application/json"].schema.$ref.split("/").at(-1),
    "SessionPage",
  );
});

Deno.test("service: a bad limit or cursor of a listing is a 400 that says what to give", async () => {
  await using temp = await tempStore();
  await writeSessions(temp.store, 2);
  await using service = serve(temp.store);
  for (const query of ["limit=0", "limit=1001", "limit=ten", "limit=2.5", "cursor=nonsense"]) {
    const response = await fetch(`${service.url}/v1/sessions?${query}`);
    assert.equal(response.status, 400, query);
    const { error } = await response.json();
    assert.equal(error.code, "bad_request");
    assert.match(error.message, query.startsWith("limit") ? /1 to 1000/ : /"next" of the page/);
  }
});

Deno.test("service: GET /v1/sessions/{id} sends what the session holds, read as it is sent, redacted", async () => {
  await using temp = await tempStore();
  const writer = await temp.store.create({ cwd: CWD, model: "openai/test" });
  const at = "2026-01-01T00:00:00.000Z";
  const big = "é€𝄞 ".repeat(40_000); // characters of 2, 3 and 4 bytes, across the chunks read
  await writer.append({ type: "message", message: { role: "user", content: `key ${SECRET}` }, at });
  await writer.append({
    type: "message",
    message: {
      role: "assistant",
      content: [
        { type: "text", text: big },
        { type: "tool_call", id: "c1", name: "read", input: { path: SECRET } },
      ],
    },
    at,
  });
  await writer.append({
    type: "message",
    message: { role: "tool", toolCallId: "c1", name: "read", content: "ok", isError: false },
    at,
  });
  await writer.append({
    type: "compaction",
    state: { summary: "s", replaces: 1 },
    tokensBefore: 9,
    tokensAfter: 2,
    at,
  });
  await writer.append({ type: "model", model: "anthropic/other", at });
  await writer.close();
  await using service = serve(temp.store);

  const response = await fetch(`${service.url}/v1/sessions/${writer.id.slice(0, 8)}`);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "application/json");
  const text = await response.text();
  assert.ok(!text.includes(SECRET), "the secret is redacted everywhere");
  const loaded = await temp.store.load(writer.id);
  const clean = (value: string) => value.replaceAll(SECRET, "[redacted]");
  // The same as the session loaded whole and sent with JSON.stringify.
  assert.deepEqual(
    JSON.parse(text),
    JSON.parse(clean(JSON.stringify({
      ...loaded.header,
      model: loaded.model,
      messages: loaded.messages,
      compaction: loaded.compaction,
    }))),
  );
  assert.equal(JSON.parse(text).model, "anthropic/other");
});

Deno.test("service: a session whose last line a crash cut off is sent without it", async () => {
  await using temp = await tempStore();
  const [id] = await writeSessions(temp.store, 1);
  await using service = serve(temp.store);
  const before = await (await fetch(`${service.url}/v1/sessions/${id}`)).json();
  // Cut off mid-line, as a crash leaves it.
  const file = await findFile(temp.dir, id);
  await Deno.writeTextFile(file, '{"type":"message","message":{"role":"assistant","con', {
    append: true,
  });
  const after = await (await fetch(`${service.url}/v1/sessions/${id}`)).json();
  assert.deepEqual(after.messages, before.messages);
  assert.equal(after.messages[0].content, "task 0");
});

/** The JSONL file of session `id` in a file store's directory. */
async function findFile(dir: string, id: string): Promise<string> {
  for await (const project of Deno.readDir(dir)) {
    const path = `${dir}/${project.name}/${id}.jsonl`;
    if (project.isDirectory && await Deno.stat(path).then(() => true, () => false)) return path;
  }
  throw new Error(`No file of session ${id} in ${dir}`);
}

/** Writes a session of `cwd` of `parts` messages of 100 kB: over 1 MiB (a large one). */
async function writeLargeSession(store: SessionStore, parts = 12): Promise<string> {
  const writer = await store.create({ cwd: CWD, model: "openai/test" });
  const at = "2026-01-01T00:00:00.000Z";
  for (let i = 0; i < parts; i++) {
    const content = `part ${i} ${"y".repeat(100_000)}`;
    await writer.append({ type: "message", message: { role: "user", content }, at });
  }
  await writer.close();
  return writer.id;
}

Deno.test("service: past the large sessions it reads at once, a read waits its turn; past 16 times as many, a 503", async () => {
  await using temp = await tempStore();
  const id = await writeLargeSession(temp.store);
  const [small] = await writeSessions(temp.store, 1);
  await using service = serve(temp.store, { maxConcurrentSessionReads: 1 });
  // Asked of the handler itself, a body nobody reads holds its slot.
  const read = (which = id) =>
    service.handler(new Request(`http://127.0.0.1/v1/sessions/${which}`));
  const held = await read();
  assert.equal(held.status, 200);
  // 17 more: 16 wait their turn, one is refused at once.
  const more = Array.from({ length: 17 }, () => read());
  const settled: Response[] = [];
  for (const response of more) response.then((answered) => settled.push(answered));
  await delay(300);
  assert.equal(settled.length, 1, "only the one past those that may wait is answered");
  assert.equal(settled[0].status, 503);
  assert.equal(settled[0].headers.get("retry-after"), "1");
  assert.equal((await settled[0].json()).error.code, "too_many_reads");
  // A small session takes no slot: it never waits.
  assert.equal((await (await read(small)).json()).messages[0].content, "task 0");
  await held.body!.cancel(); // the client goes away: its slot passes on
  // Each read to its end gives its slot to the next.
  const bodies = await Promise.all(more.map(async (response) => {
    const answered = await response;
    return answered.status === 200 ? await answered.json() : undefined;
  }));
  assert.equal(bodies.filter((body) => body?.messages.length === 12).length, 16);
});

Deno.test("service: a client that takes nothing of a large session for sendIdleMs has it cut off; its slot passes on", async () => {
  await using temp = await tempStore();
  // 16 MB: far more than the sockets between them hold.
  const id = await writeLargeSession(temp.store, 160);
  await using service = serve(temp.store, { maxConcurrentSessionReads: 1, sendIdleMs: 500 });
  // Asks for it and reads nothing of the answer: the one slot is its own.
  const port = Number(new URL(service.url).port);
  using stalled = await Deno.connect({ hostname: "127.0.0.1", port });
  await stalled.write(
    new TextEncoder().encode(`GET /v1/sessions/${id} HTTP/1.1\r\nHost: x\r\n\r\n`),
  );
  await delay(200);
  const next = await fetch(`${service.url}/v1/sessions/${id}`, {
    signal: AbortSignal.timeout(10_000),
  }).catch((error) => error as Error);
  assert.ok(next instanceof Response, `the next read got no answer: ${next}`);
  assert.equal(next.status, 200);
  assert.equal((await next.json()).messages.length, 160, "the next read is sent whole");
  // The stalled client got part of the session, then the end of the connection.
  let got = 0;
  const buffer = new Uint8Array(1 << 16);
  for (let n = await stalled.read(buffer); n !== null; n = await stalled.read(buffer)) got += n;
  assert.ok(got > 0 && got < 16e6, `the stalled client got ${got} bytes`);
});

Deno.test("service: a handler that drains answers 503 with Retry-After; the run going ends with its result", async () => {
  await using temp = await tempStore();
  await using model = startMockOpenAIServer({
    replies: [{ text: Array.from({ length: 10 }, (_, i) => `w${i} `), eventDelayMs: 50 }],
  });
  await using service = serve(temp.store, {
    model: resolveModel("openai/test", {
      baseURL: model.url,
      env: (name) => name === "OPENAI_API_KEY" ? "sk-test" : undefined,
    }),
  });
  const started = await fetch(`${service.url}/v1/runs`, {
    method: "POST",
    body: JSON.stringify({ message: "Go slowly", stream: true }),
  });
  const events = started.body!.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!seen.includes('"text_delta"')) seen += (await events.read()).value ?? "";

  const drained = service.handler.drain();
  assert.equal(service.handler.draining, true);
  for (
    const [method, path] of [["GET", "/v1/health"], ["POST", "/v1/runs"], ["GET", "/v1/sessions"]]
  ) {
    const refused = await fetch(`${service.url}${path}`, {
      method,
      ...(method === "POST" ? { body: '{"message":"More"}' } : {}),
    });
    assert.equal(refused.status, 503, path);
    assert.equal(refused.headers.get("retry-after"), "5");
    const { error } = await refused.json();
    assert.equal(error.code, "closing");
    assert.match(error.message, /shutting down.*try again in 5 s/);
  }
  for (let step = await events.read(); !step.done; step = await events.read()) seen += step.value;
  const result = JSON.parse(/data: (\{"type":"result".*)\n/.exec(seen)![1]);
  assert.equal(result.status, "success");
  assert.equal(result.text, Array.from({ length: 10 }, (_, i) => `w${i} `).join(""));
  await drained;
  assert.equal(service.handler.service.load().running, 0);
});

function delay(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

Deno.test("service: a drain waits for the sessions being sent; close() stops them there", async () => {
  await using temp = await tempStore();
  const [id] = await writeSessions(temp.store, 1);
  const large = await writeLargeSession(temp.store);
  await using service = serve(temp.store);
  const held = await service.handler(new Request(`http://127.0.0.1/v1/sessions/${id}`));
  const reader = held.body!.getReader();
  const heldLarge = await service.handler(new Request(`http://127.0.0.1/v1/sessions/${large}`));
  let drained = false;
  const draining = service.handler.drain().then(() => drained = true);
  await delay(200);
  assert.equal(drained, false, "the drain waits for the session being sent");
  await service.handler.close();
  await draining;
  await assert.rejects(reader.read(), /stopped sending the session/);
  await assert.rejects(heldLarge.text(), /stopped sending the session/);
});
