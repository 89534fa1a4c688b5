/**
 * The agent service over real HTTP on loopback: `Deno.serve` with the handler, the real OpenAI
 * SDK against the loopback mock server, SSE read off the wire.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { z } from "zod";
import { createAgentHandler } from "../lib/service/mod.ts";
import { defineTool, type Model, type Tool } from "../mod.ts";
import { memorySessionStore } from "../lib/session/mod.ts";
import { resolveModel } from "../lib/providers/mod.ts";
import { type MockReply, type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { openMemory } from "../lib/memory/sqlite.ts";
import type { AgentHandlerOptions } from "../lib/service/handler.ts";
import { serveHandler } from "./serve_support.ts";

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

function openaiModel(server: MockServer): Model {
  return resolveModel("openai/test", {
    baseURL: server.url,
    env: (name) => name === "OPENAI_API_KEY" ? "sk-test" : undefined,
  });
}

/** Writes all of `bytes` (a single `write` may take only part of them). */
async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}

function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
) {
  return fetch(url, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json", ...headers },
    signal,
  });
}

/**
 * Starts a one-shot run ("Write the notes", `complete`) and sends `message` to its run loop
 * while the run loop's archive waits (`archiving` resolves as it starts, `release` lets it go
 * on): the run loop's id, and the run's events to its end.
 */
async function queuedWhileArchiving(
  url: string,
  message: string,
  gate: { archiving: PromiseWithResolvers<void>; release: PromiseWithResolvers<void> },
): Promise<{ loopId: string; events: { id?: number; data: Json }[] }> {
  const started = await post(`${url}/v1/runs`, {
    message: "Write the notes",
    complete: true,
    stream: true,
  });
  const loopId = started.headers.get("x-run-loop-id")!;
  const events = readSse(started);
  await gate.archiving.promise;
  const sent = await post(`${url}/v1/run-loops/${loopId}/messages`, { message });
  assert.equal((await sent.json()).delivery, "queued");
  gate.release.resolve();
  return { loopId, events: await events };
}

/** Reads an SSE body to its end: each event's id and parsed data. */
async function readSse(response: Response): Promise<{ id?: number; data: Json }[]> {
  const events: { id?: number; data: Json }[] = [];
  const text = await response.text();
  for (const block of text.split("\n\n")) {
    const id = /^id: (\d+)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (data) events.push({ id: id ? Number(id) : undefined, data: JSON.parse(data) });
  }
  return events;
}

/** A tool that waits until the test opens its gate; `entered` resolves when a call waits. */
function gateTool() {
  let open = Promise.withResolvers<void>();
  let entered = Promise.withResolvers<void>();
  const signals: AbortSignal[] = [];
  const tool = defineTool({
    name: "wait",
    description: "Waits for the gate",
    parameters: z.object({}),
    capabilities: [],
    execute: async (_input, ctx) => {
      signals.push(ctx.signal);
      entered.resolve();
      await new Promise<void>((resolve, reject) => {
        open.promise.then(resolve);
        ctx.signal.addEventListener("abort", () => reject(new Error("cancelled")), { once: true });
      });
      return "waited";
    },
  });
  return {
    tool: tool as Tool,
    signals,
    get entered() {
      return entered.promise;
    },
    open() {
      open.resolve();
      open = Promise.withResolvers<void>();
      entered = Promise.withResolvers<void>();
    },
  };
}

/** The user messages of a request body the mock received. */
function userTexts(body: Json): string[] {
  return (body.messages as Json[]).filter((m) => m.role === "user").map((m) => m.content);
}

/** A mock model: call `wait` once, then answer with every user message it was sent. */
function waitThenEcho(): MockServer {
  return startMockOpenAIServer({
    replies: (body) => {
      const waited = (body.messages as Json[]).some((m) => m.role === "tool");
      return waited
        ? { text: `heard: ${userTexts(body).join(" + ")}` }
        : { toolCalls: [{ name: "wait", arguments: {} }] };
    },
  });
}

Deno.test("service: a run streams its events as SSE, or answers its result as JSON", async () => {
  await using model = startMockOpenAIServer({ replies: () => ({ text: "Hello there." }) });
  await using service = serveHandler({ model: openaiModel(model) });

  const streamed = await post(`${service.url}/v1/runs`, { message: "Hi", stream: true });
  assert.equal(streamed.status, 200);
  assert.match(streamed.headers.get("content-type")!, /^text\/event-stream/);
  const runId = streamed.headers.get("x-run-id");
  const events = await readSse(streamed);
  const types = events.map((e) => e.data.type);
  assert.deepEqual(types.slice(0, 3), ["start", "run_loop_start", "message"]);
  assert.equal(types.at(-1), "result");
  assert.equal(events.at(-1)!.data.text, "Hello there.");
  assert.deepEqual(events.map((e) => e.id), events.map((_, i) => i + 1));
  assert.equal(events[1].data.runLoopId, streamed.headers.get("x-run-loop-id"));

  const json = await post(`${service.url}/v1/runs`, { message: "Hi again" });
  assert.equal(json.status, 200);
  const body = await json.json();
  assert.equal(body.delivery, "started");
  assert.equal(body.run.status, "success");
  assert.equal(body.run.result.text, "Hello there.");
  assert.notEqual(body.run.runLoopId, events[1].data.runLoopId, "a new run loop for a new run");

  // The ended run is kept, and its events can be read again from any point.
  const info = await (await fetch(`${service.url}/v1/runs/${runId}`)).json();
  assert.equal(info.status, "success");
  const again = await readSse(
    await fetch(`${service.url}/v1/runs/${runId}/events`, { headers: { "last-event-id": "3" } }),
  );
  assert.equal(again[0].id, 4);
  assert.equal(again.at(-1)!.data.type, "result");
});

Deno.test("service: a message sent to a busy run loop joins the run at its next turn boundary", async () => {
  await using model = waitThenEcho();
  const gate = gateTool();
  await using service = serveHandler({ model: openaiModel(model), tools: [gate.tool] });

  const started = await post(`${service.url}/v1/runs`, { message: "Start", stream: true });
  const loopId = started.headers.get("x-run-loop-id")!;
  const events = readSse(started);
  await gate.entered;

  const sent = await post(`${service.url}/v1/run-loops/${loopId}/messages`, {
    message: "Also check the tests",
  });
  assert.equal(sent.status, 202);
  const delivery = await sent.json();
  assert.equal(delivery.delivery, "queued");
  assert.equal(delivery.run.id, started.headers.get("x-run-id"));
  assert.equal(delivery.run.queued, 1);
  gate.open();

  const all = await events;
  const result = all.at(-1)!.data;
  assert.equal(result.text, "heard: Start + Also check the tests");
  // It reached the model with the tool's result, in the next request of the same run.
  assert.deepEqual(userTexts(model.requests[1].body), ["Start", "Also check the tests"]);
  const joined = all.find((e) =>
    e.data.type === "message" && e.data.message.content === "Also check the tests"
  );
  assert.ok(joined, "the stream shows the message taken in");
  assert.equal(all.filter((e) => e.data.type === "start").length, 1);
});

Deno.test("service: a message after the last turn boundary runs next, in the same run", async () => {
  await using model = startMockOpenAIServer({
    replies: (body) => ({ text: `heard: ${userTexts(body).at(-1)}` }),
  });
  const memory = await openMemory({ path: ":memory:" });
  // Archiving the completed run loop waits for the test: the run's last turn is over by then.
  const archiving = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const archive = memory.archive.bind(memory);
  memory.archive = async (loop) => {
    archiving.resolve();
    await release.promise;
    return await archive(loop);
  };
  await using service = serveHandler({ model: openaiModel(model), memory });
  const { events: all } = await queuedWhileArchiving(service.url, "Add dates", {
    archiving,
    release,
  });
  const results = all.filter((e) => e.data.type === "result").map((e) => e.data.text);
  assert.deepEqual(results, ["heard: Write the notes", "heard: Add dates"]);
  await memory.close();
});

Deno.test("service: a run whose run loop memory cannot archive succeeds with its answer; its end and the completion say why", async () => {
  await using model = startMockOpenAIServer({
    replies: (body) => ({ text: `heard: ${userTexts(body).at(-1)}` }),
  });
  const memory = await openMemory({ path: ":memory:" });
  await memory.close(); // archiving now fails, as it does on a full disk or a damaged file
  const heard: string[] = [];
  await using service = serveHandler({
    model: openaiModel(model),
    memory,
    onArchiveError: (id, error) => heard.push(`${id}: ${error}`),
  });
  // Answered as JSON: the run succeeded, and its info says what memory could not do.
  const plain = await (await post(`${service.url}/v1/runs`, {
    message: "Check the links",
    complete: true,
  })).json();
  assert.equal(plain.run.status, "success");
  assert.equal(plain.run.result.text, "heard: Check the links");
  assert.match(plain.run.archiveError, /memory is closed/);
  assert.deepEqual(heard, [`${plain.run.runLoopId}: The memory is closed`]);

  const started = await post(`${service.url}/v1/runs`, {
    message: "Write the notes",
    complete: true,
    stream: true,
  });
  const events = await readSse(started);
  const result = events.at(-1)?.data;
  assert.equal(result?.type, "result");
  assert.equal(result?.status, "success");
  assert.equal(result?.text, "heard: Write the notes");
  assert.ok(!events.some((e) => e.data.type === "notice" && e.data.kind === "error"));
  const end = events.find((e) => e.data.type === "run_loop_end")?.data;
  assert.equal(end?.status, "completed");
  assert.match(end?.archiveError ?? "", /memory is closed/);
  const runId = started.headers.get("x-run-id");
  const run = await (await fetch(`${service.url}/v1/runs/${runId}`)).json();
  assert.equal(run.status, "success");

  // Completing an idle run loop: it is completed, and the answer says it was not archived.
  const idle = await (await post(`${service.url}/v1/runs`, { message: "Draft the plan" })).json();
  assert.equal(idle.run.status, "success");
  const prefix = idle.run.runLoopId.slice(0, 8);
  const completed = await post(`${service.url}/v1/run-loops/${prefix}/complete`, {});
  assert.equal(completed.status, 200);
  const body = await completed.json();
  assert.equal(body.status, "completed");
  assert.equal(body.runLoopId, idle.run.runLoopId);
  assert.match(body.archiveError ?? "", /memory is closed/);
  const loops = await (await fetch(`${service.url}/v1/run-loops`)).json();
  assert.deepEqual(loops.runLoops, []);
  // Kept until memory works again: it is still found.
  const kept = await (await fetch(`${service.url}/v1/run-loops/${idle.run.runLoopId}`)).json();
  assert.equal(kept.status, "completed");
  assert.equal(heard.length, 3);

  // A prefix an active run loop shares with a kept one names neither.
  const first = idle.run.runLoopId.slice(0, 1);
  let sharing: string | undefined;
  for (let tries = 0; !sharing && tries < 400; tries++) {
    const started = await (await post(`${service.url}/v1/runs`, { message: "Another" })).json();
    if (started.run.runLoopId.startsWith(first)) sharing = started.run.runLoopId;
  }
  assert.ok(sharing, "an active run loop whose id starts as the kept one's");
  assert.equal((await fetch(`${service.url}/v1/run-loops/${first}`)).status, 404);
  const sent = await post(`${service.url}/v1/run-loops/${first}/messages`, { message: "Which?" });
  assert.equal(sent.status, 404);
  await sent.body?.cancel();
  assert.equal((await fetch(`${service.url}/v1/run-loops/${sharing}`)).status, 200);
});

Deno.test("service: a message for a run loop that memory could not archive never goes to another client's", async () => {
  await using model = startMockOpenAIServer({
    replies: (body) => ({ text: `heard: ${userTexts(body).join(" | ")}` }),
  });
  const memory = await openMemory({ path: ":memory:" });
  // Archiving waits for the test, then fails as on a full disk.
  const archiving = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  memory.archive = async () => {
    archiving.resolve();
    await release.promise;
    throw new Error("database or disk is full");
  };
  await using service = serveHandler({ model: openaiModel(model), memory, onArchiveError() {} });
  // Another client's run loop, idle.
  const other = await (await post(`${service.url}/v1/runs`, { message: "Notes of B" })).json();
  const queued = await queuedWhileArchiving(service.url, "Also add the date", {
    archiving,
    release,
  });
  const { loopId } = queued;
  const all = queued.events.map((e) => e.data);
  const placed = all.filter((e) => e.type === "run_loop_start");
  assert.equal(placed.length, 2);
  assert.equal(placed[1].decision, "reopened");
  assert.equal(placed[1].seededFrom, loopId);
  assert.notEqual(placed[1].runLoopId, other.run.runLoopId);
  const results = all.filter((e) => e.type === "result").map((e) => e.text);
  assert.equal(results.length, 2);
  // The second went on from the first run loop's memory, and from nothing of the other's.
  assert.match(results[1], /Goal: Write the notes[\s\S]* \| Also add the date$/);
  assert.ok(!results.some((text) => text.includes("Notes of B")));
  // The other client's run loop is still there, as it was.
  const active = await (await fetch(`${service.url}/v1/run-loops`)).json();
  const theirs = active.runLoops.find((loop: Json) => loop.id === other.run.runLoopId);
  assert.equal(theirs?.iterations.length, 1);
  await memory.close();
});

Deno.test("service: cancel ends a run as aborted, and its tool call is stopped", async () => {
  await using model = waitThenEcho();
  const gate = gateTool();
  await using service = serveHandler({ model: openaiModel(model), tools: [gate.tool] });
  const started = await post(`${service.url}/v1/runs`, { message: "Go", background: true });
  assert.equal(started.status, 202);
  const { run } = await started.json();
  assert.equal(started.headers.get("location"), `/v1/runs/${run.id}`);
  await gate.entered;
  const cancel = await post(`${service.url}/v1/runs/${run.id}/cancel`, {});
  assert.equal(cancel.status, 202);
  const events = await readSse(await fetch(`${service.url}/v1/runs/${run.id}/events`));
  assert.equal(events.at(-1)!.data.status, "aborted");
  assert.equal(gate.signals[0].aborted, true);
  const again = await post(`${service.url}/v1/runs/${run.id}/cancel`, {});
  assert.equal(again.status, 409);
  assert.equal((await again.json()).error.code, "run_ended");
  assert.equal((await post(`${service.url}/v1/runs/nope/cancel`, {})).status, 404);
});

Deno.test("service: a client that comes back after the kept events hears how many it missed", async () => {
  await using model = startMockOpenAIServer({
    replies: () => ({ text: ["One", " two", " three"] }),
  });
  await using service = serveHandler({ model: openaiModel(model), maxEventsPerRun: 3 });
  const { run } = await (await post(`${service.url}/v1/runs`, { message: "Count" })).json();
  const first = run.events - 2;
  const follow = async (lastEventId?: number) => {
    const events = await readSse(
      await fetch(`${service.url}/v1/runs/${run.id}/events`, {
        headers: lastEventId === undefined ? {} : { "last-event-id": String(lastEventId) },
      }),
    );
    assert.deepEqual(events.slice(1).map((e) => e.id), [first, first + 1, first + 2]);
    return events[0].data;
  };
  assert.deepEqual(await follow(), {
    type: "notice",
    kind: "error",
    message: `${first - 1} events are no longer kept; the stream goes on from event ${first}`,
  });
  assert.equal(
    (await follow(first - 2)).message,
    `1 event is no longer kept; the stream goes on from event ${first}`,
  );
});

Deno.test("service: a client that disconnects does not stop its run, unless it asked to", async () => {
  await using model = waitThenEcho();
  const gate = gateTool();
  await using service = serveHandler({ model: openaiModel(model), tools: [gate.tool] });

  const kept = await post(`${service.url}/v1/runs`, { message: "Keep going", stream: true });
  const keptId = kept.headers.get("x-run-id")!;
  await gate.entered;
  await kept.body!.cancel();
  gate.open();
  const info = await (await fetch(`${service.url}/v1/runs/${keptId}`)).json();
  const done = info.status === "running"
    ? (await readSse(await fetch(`${service.url}/v1/runs/${keptId}/events`))).at(-1)!.data
    : info.result;
  assert.equal(done.status, "success");
  assert.equal(done.text, "heard: Keep going");

  const dropped = await post(`${service.url}/v1/runs`, {
    message: "Stop when I leave",
    stream: true,
    cancelOnDisconnect: true,
  });
  const droppedId = dropped.headers.get("x-run-id")!;
  await gate.entered;
  await dropped.body!.cancel();
  const rest = await readSse(await fetch(`${service.url}/v1/runs/${droppedId}/events`));
  assert.equal(rest.at(-1)!.data.status, "aborted");

  // The same for a client waiting for the JSON result.
  const leaving = new AbortController();
  const waiting = post(
    `${service.url}/v1/runs`,
    {
      message: "Stop when I leave",
      cancelOnDisconnect: true,
    },
    {},
    leaving.signal,
  ).catch((error) => error);
  await gate.entered;
  const [listed] = (await (await fetch(`${service.url}/v1/runs`)).json()).runs;
  leaving.abort();
  assert.equal((await waiting).name, "AbortError");
  const last = await readSse(await fetch(`${service.url}/v1/runs/${listed.id}/events`));
  assert.equal(last.at(-1)!.data.status, "aborted");
});

Deno.test("service: every request but health needs the token, wherever it comes from", async () => {
  await using model = startMockOpenAIServer({ replies: () => ({ text: "ok" }) });
  await using locked = serveHandler({ model: openaiModel(model), token: "s3cret-token" });
  const none = await fetch(`${locked.url}/v1/runs`);
  assert.equal(none.status, 401);
  assert.equal(none.headers.get("www-authenticate"), "Bearer");
  assert.deepEqual((await none.json()).error, {
    code: "unauthorized",
    message: "This service needs its token: send Authorization: Bearer <token>",
  });
  const wrong = await fetch(`${locked.url}/v1/runs`, { headers: { authorization: "Bearer no" } });
  assert.equal(wrong.status, 401);
  assert.match((await wrong.json()).error.message, /The bearer token is wrong/);
  const right = await post(`${locked.url}/v1/runs`, { message: "hi" }, {
    authorization: "Bearer s3cret-token",
  });
  assert.equal(right.status, 200);
  assert.equal((await right.json()).run.result.text, "ok");
  assert.equal(model.requests.length, 1, "only the run with the token reached the model");

  // Health tells anyone that it is up, and nothing more; the rest is for the token's holders.
  assert.deepEqual(await (await fetch(`${locked.url}/v1/health`)).json(), { status: "ok" });
  const health = await (await fetch(`${locked.url}/v1/health`, {
    headers: { authorization: "Bearer s3cret-token" },
  })).json();
  assert.deepEqual(Object.keys(health).sort(), ["runs", "status", "version"]);
  for (const path of ["/openapi.json", "/v1/sessions", "/v1/run-loops", "/v1/nothing"]) {
    const refused = await fetch(`${locked.url}${path}`);
    assert.equal(refused.status, 401, path);
    await refused.body?.cancel();
  }
  // A page in the user's browser, or a name rebound to loopback, has no token either.
  const page = await post(`${locked.url}/v1/runs`, { message: "hi" }, {
    origin: "https://evil.example",
  });
  assert.equal(page.status, 401);
  await page.body?.cancel();
  // fetch() sets Host itself: the rebound name is written on a raw connection.
  const conn = await Deno.connect({
    hostname: "127.0.0.1",
    port: Number(new URL(locked.url).port),
  });
  await writeAll(
    conn,
    new TextEncoder().encode(
      "GET /v1/runs HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    ),
  );
  const rebound = await new Response(conn.readable).text();
  assert.match(rebound, /^HTTP\/1\.1 401/);
  assert.equal(model.requests.length, 1);
});

Deno.test("createAgentHandler() needs a token, or token: false for a server that authenticates", async () => {
  await using model = startMockOpenAIServer({ replies: () => ({ text: "ok" }) });
  const options = { model: openaiModel(model) } as AgentHandlerOptions;
  assert.throws(() => createAgentHandler(options), {
    name: "TypeError",
    message: "createAgentHandler needs a token: pass { token } (e.g. newServiceToken(), given to " +
      "your clients), or { token: false } when the server it is mounted in authenticates every " +
      "request itself",
  });
  assert.throws(() => createAgentHandler({ ...options, token: " " }), {
    name: "TypeError",
    message: /token is empty/,
  });
  // Mounted in a server that authenticates, the handler takes what that server lets through.
  await using open = serveHandler({ model: openaiModel(model), token: false });
  const answer = await post(`${open.url}/v1/runs`, { message: "hi" });
  assert.equal((await answer.json()).run.result.text, "ok");
});

Deno.test("service: past the limit of runs at once, a clear 429; a message to a busy loop still goes", async () => {
  await using model = waitThenEcho();
  const gate = gateTool();
  await using service = serveHandler({
    model: openaiModel(model),
    tools: [gate.tool],
    maxConcurrentRuns: 2,
  });
  const first = await (await post(`${service.url}/v1/runs`, { message: "A", background: true }))
    .json();
  await post(`${service.url}/v1/runs`, { message: "B", background: true }).then((r) => r.json());
  const third = await post(`${service.url}/v1/runs`, { message: "C" });
  assert.equal(third.status, 429);
  assert.equal(third.headers.get("retry-after"), "1");
  const error = (await third.json()).error;
  assert.equal(error.code, "too_many_runs");
  assert.match(error.message, /2 runs are going/);
  const joined = await post(`${service.url}/v1/run-loops/${first.run.runLoopId}/messages`, {
    message: "A, more",
  });
  assert.equal(joined.status, 202);
  await joined.body?.cancel();
  const health = await (await fetch(`${service.url}/v1/health`)).json();
  assert.deepEqual(health.runs, { running: 2, limit: 2 });
  gate.open();
  const done = await readSse(await fetch(`${service.url}/v1/runs/${first.run.id}/events`));
  assert.equal(done.at(-1)!.data.text, "heard: A + A, more");
  gate.open();
  // A slot is free again.
  let fourth = await post(`${service.url}/v1/runs`, { message: "D", background: true });
  for (let i = 0; fourth.status === 429 && i < 50; i++) {
    await fourth.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 20));
    fourth = await post(`${service.url}/v1/runs`, { message: "D", background: true });
  }
  assert.equal(fourth.status, 202);
  await fourth.body?.cancel();
  gate.open();
});

Deno.test("service: with a limit of one run at once, the refusal speaks of one run", async () => {
  await using model = waitThenEcho();
  const gate = gateTool();
  await using service = serveHandler({
    model: openaiModel(model),
    tools: [gate.tool],
    maxConcurrentRuns: 1,
  });
  const first = await post(`${service.url}/v1/runs`, { message: "A", background: true });
  assert.equal(first.status, 202);
  await first.body?.cancel();
  const second = await post(`${service.url}/v1/runs`, { message: "B" });
  assert.equal(second.status, 429);
  assert.deepEqual(await second.json(), {
    error: {
      code: "too_many_runs",
      message: "1 run is going, the most this service runs at once; try again when it ends",
    },
  });
  gate.open();
});

Deno.test("service: messages a cancelled run did not take in are counted in the notice", async () => {
  await using model = waitThenEcho();
  const gate = gateTool();
  await using service = serveHandler({ model: openaiModel(model), tools: [gate.tool] });
  const notices: string[] = [];
  for (const count of [1, 2]) {
    const { run } = await (await post(`${service.url}/v1/runs`, {
      message: "Go",
      background: true,
    })).json();
    await gate.entered;
    for (let i = 0; i < count; i++) {
      const sent = await post(`${service.url}/v1/run-loops/${run.runLoopId}/messages`, {
        message: `more ${i}`,
      });
      assert.equal((await sent.json()).delivery, "queued");
    }
    await (await post(`${service.url}/v1/runs/${run.id}/cancel`, {})).body?.cancel();
    const events = await readSse(await fetch(`${service.url}/v1/runs/${run.id}/events`));
    const notice = events.find((e) => e.data.type === "notice" && e.data.kind === "error");
    notices.push(notice?.data.message);
    gate.open();
  }
  assert.deepEqual(notices, [
    "1 message sent to this run was not taken in: it was cancelled first",
    "2 messages sent to this run were not taken in: it was cancelled first",
  ]);
});

Deno.test("service: 100 runs at once against the mock model, with no cross-talk", async () => {
  // Each conversation is answered from its own first message: run K asks the tool for K.
  await using model = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Json[];
      const key = /run (\d+)/.exec(userTexts(body)[0])![1];
      const tool = messages.find((m) => m.role === "tool");
      return tool
        ? { text: `answer ${key} from ${tool.content}`, delayMs: 20 }
        : { toolCalls: [{ name: "echo", arguments: { key } }], delayMs: 20 };
    },
  });
  const echo = defineTool({
    name: "echo",
    description: "Echoes the key",
    parameters: z.object({ key: z.string() }),
    capabilities: [],
    execute: async ({ key }) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return `tool saw ${key}`;
    },
  });
  const sessions = memorySessionStore();
  await using service = serveHandler({
    model: openaiModel(model),
    tools: [echo as Tool],
    sessions,
    maxConcurrentRuns: 100,
  });
  const runs = await Promise.all(
    Array.from({ length: 100 }, async (_, k) => {
      const response = await post(`${service.url}/v1/runs`, { message: `run ${k}`, stream: true });
      assert.equal(response.status, 200);
      return { k, events: await readSse(response) };
    }),
  );
  const loopIds = new Set<string>();
  for (const { k, events } of runs) {
    const result = events.at(-1)!.data;
    assert.equal(result.status, "success");
    assert.equal(result.text, `answer ${k} from tool saw ${k}`);
    const outputs = events.filter((e) => e.data.type === "tool_result").map((e) => e.data.output);
    assert.deepEqual(outputs, [`tool saw ${k}`]);
    const texts = JSON.stringify(events.map((e) => e.data));
    assert.doesNotMatch(texts, new RegExp(`run (?!${k}\\b)\\d+\\b`), "only its own messages");
    loopIds.add(events[1].data.runLoopId);
  }
  assert.equal(loopIds.size, 100);
  // Each run loop's session holds its own conversation only.
  const listed = await (await fetch(`${service.url}/v1/sessions?limit=100`)).json();
  assert.equal(listed.sessions.length, 100);
  const one = runs[42];
  const session = await (await fetch(`${service.url}/v1/sessions/${one.events[1].data.runLoopId}`))
    .json();
  assert.deepEqual(
    session.messages.map((m: Json) => m.role),
    ["user", "assistant", "tool", "assistant"],
  );
  assert.equal(session.messages[0].content, "run 42");
});

Deno.test("service: routed messages, run loops, sessions and memory search", async () => {
  await using model = startMockOpenAIServer({
    replies: (body) => ({ text: `done: ${userTexts(body).at(-1)}` }),
  });
  const memory = await openMemory({ path: ":memory:" });
  const sessions = memorySessionStore();
  await using service = serveHandler({ model: openaiModel(model), memory, sessions });

  const first =
    await (await post(`${service.url}/v1/runs`, { message: "Rename the parser module" }))
      .json();
  const loopId = first.run.runLoopId;
  // Named in the message: the service routes it to that run loop.
  const routed = await (await post(`${service.url}/v1/messages`, {
    message: `loop:${loopId.slice(0, 8)} and update the imports`,
  })).json();
  assert.equal(routed.delivery, "started");
  assert.equal(routed.run.runLoopId, loopId);
  assert.equal(routed.placement.decision, "named");

  const loops = await (await fetch(`${service.url}/v1/run-loops`)).json();
  assert.deepEqual(loops.runLoops.map((l: Json) => l.id), [loopId]);
  assert.equal(loops.runLoops[0].iterations.length, 2);

  assert.equal((await post(`${service.url}/v1/run-loops/${loopId}/complete`, {})).status, 200);
  const archived = await (await fetch(`${service.url}/v1/run-loops/${loopId}`)).json();
  assert.equal(archived.status, "completed");
  const found = await (await fetch(`${service.url}/v1/memory/search?q=parser`)).json();
  assert.equal(found.results[0].anchor.runLoopId, loopId);

  const session = await (await fetch(`${service.url}/v1/sessions/${loopId}`)).json();
  assert.equal(session.id, loopId);
  assert.equal(session.messages.filter((m: Json) => m.role === "user").length, 2);

  assert.equal((await fetch(`${service.url}/v1/run-loops/ffffffff`)).status, 404);
  const missing = await post(`${service.url}/v1/run-loops/ffffffff/messages`, { message: "x" });
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
  const noQuery = await fetch(`${service.url}/v1/memory/search`);
  assert.equal(noQuery.status, 400);
  await noQuery.body?.cancel();
  await memory.close();
});

Deno.test("service: bad requests get clear errors; the OpenAPI document lists every endpoint", async () => {
  await using model = startMockOpenAIServer({ replies: [] as MockReply[] });
  await using service = serveHandler({ model: openaiModel(model), basePath: "/agent" });
  const notJson = await fetch(`${service.url}/agent/v1/runs`, { method: "POST", body: "{oops" });
  assert.equal(notJson.status, 400);
  assert.match((await notJson.json()).error.message, /not JSON/);
  const noMessage = await post(`${service.url}/agent/v1/runs`, { messag: "typo" });
  assert.equal(noMessage.status, 400);
  assert.match((await noMessage.json()).error.message, /message/);
  const unknown = await fetch(`${service.url}/agent/v1/nothing`);
  assert.equal(unknown.status, 404);
  await unknown.body?.cancel();
  const outside = await fetch(`${service.url}/v1/health`);
  assert.equal(outside.status, 404);
  await outside.body?.cancel();

  const doc = await (await fetch(`${service.url}/agent/openapi.json`)).json();
  assert.equal(doc.openapi, "3.1.0");
  for (
    const path of [
      "/agent/v1/runs",
      "/agent/v1/runs/{id}",
      "/agent/v1/runs/{id}/events",
      "/agent/v1/runs/{id}/cancel",
      "/agent/v1/messages",
      "/agent/v1/run-loops",
      "/agent/v1/run-loops/{id}",
      "/agent/v1/run-loops/{id}/messages",
      "/agent/v1/run-loops/{id}/complete",
      "/agent/v1/sessions",
      "/agent/v1/sessions/{id}",
      "/agent/v1/memory/search",
    ]
  ) assert.ok(path in doc.paths, path);
  assert.deepEqual(doc.components.schemas.RunRequest.required, ["message"]);
});

Deno.test("service: a known path asked with a method it does not take answers 405 with Allow", async () => {
  await using model = startMockOpenAIServer({ replies: [] as MockReply[] });
  await using service = serveHandler({ model: openaiModel(model), basePath: "/agent" });
  const root = `${service.url}/agent`;

  const deleted = await fetch(`${root}/v1/runs`, { method: "DELETE" });
  assert.equal(deleted.status, 405);
  assert.equal(deleted.headers.get("allow"), "GET, POST");
  assert.match(deleted.headers.get("content-type")!, /^application\/json/);
  assert.deepEqual(await deleted.json(), {
    error: {
      code: "method_not_allowed",
      message: "/agent/v1/runs takes GET, POST, not DELETE",
    },
  });
  const got = await fetch(`${root}/v1/messages`);
  assert.equal(got.status, 405);
  assert.equal(got.headers.get("allow"), "POST");
  assert.equal((await got.json()).error.code, "method_not_allowed");

  // Every path of the OpenAPI document says the methods it lists, and only those.
  const doc = await (await fetch(`${root}/openapi.json`)).json();
  const documented = doc.components.responses.MethodNotAllowed;
  assert.ok(documented.headers.Allow);
  assert.equal(documented.content["application/json"].schema.$ref, "#/components/schemas/Error");
  for (const [path, operations] of Object.entries(doc.paths as Json)) {
    const methods = Object.keys(operations).map((m) => m.toUpperCase()).sort();
    const response = await fetch(`${service.url}${path.replace("{id}", "abcd1234")}`, {
      method: "PATCH",
    });
    assert.equal(response.status, 405, path);
    assert.equal(response.headers.get("allow"), methods.join(", "), path);
    await response.body?.cancel();
  }

  // Unknown paths are still not found, whatever the method.
  for (const [method, path] of [["GET", "/v1/nothing"], ["DELETE", "/v1/runs/x/y/z"]]) {
    const unknown = await fetch(`${root}${path}`, { method });
    assert.equal(unknown.status, 404, path);
    assert.equal(unknown.headers.get("allow"), null);
    assert.equal((await unknown.json()).error.code, "not_found");
  }
  // A malformed escape in the path is the client's error, said in the usual shape.
  const malformed = await fetch(`${root}/v1/runs/%E0%A4%A`);
  assert.equal(malformed.status, 400);
  assert.deepEqual((await malformed.json()).error, {
    code: "bad_request",
    message: "The path /v1/runs/%E0%A4%A has a malformed %-escape: write each % as %25, and " +
      "escape only UTF-8",
  });
});

Deno.test("service: a run that fails outside the loop says why, and the service goes on", async () => {
  await using model = startMockOpenAIServer({ replies: () => ({ text: "ok" }) });
  const store = memorySessionStore();
  let full = true;
  const create = store.create.bind(store);
  store.create = (init) =>
    full ? Promise.reject(new Error("No space left on device")) : create(init);
  await using service = serveHandler({ model: openaiModel(model), sessions: store });
  const failed = await (await post(`${service.url}/v1/runs`, { message: "Save this" })).json();
  assert.equal(failed.run.status, "error");
  assert.match(failed.run.error, /No space left on device/);
  full = false;
  const next = await (await post(`${service.url}/v1/runs`, { message: "Again" })).json();
  assert.equal(next.run.status, "success");
  assert.equal(next.run.error, undefined);
});

Deno.test("service: a chunked body past the limit is refused as it arrives, not read to its end", async () => {
  await using model = startMockOpenAIServer({ replies: [] as MockReply[] });
  await using service = serveHandler({ model: openaiModel(model), maxBodyBytes: 64 * 1024 });
  // A body with no length that never ends: only counting it as it comes can refuse it.
  const conn = await Deno.connect({
    hostname: "127.0.0.1",
    port: Number(new URL(service.url).port),
  });
  const encoder = new TextEncoder();
  await writeAll(
    conn,
    encoder.encode(
      "POST /v1/runs HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" +
        "transfer-encoding: chunked\r\n\r\n",
    ),
  );
  let answered = false;
  let sent = 0;
  const chunk = encoder.encode(`4000\r\n${" ".repeat(0x4000)}\r\n`);
  const sending = (async () => {
    while (!answered && sent < 64 * 1024 * 1024) {
      await writeAll(conn, chunk);
      sent += 0x4000;
    }
  })().catch(() => {}); // the service may close the connection under the writes
  const buffer = new Uint8Array(4096);
  const read = await conn.read(buffer);
  answered = true;
  await sending;
  conn.close();
  const head = new TextDecoder().decode(buffer.subarray(0, read ?? 0));
  assert.match(head, /^HTTP\/1\.1 413 /);
  assert.match(head, /"too_large"/);
  assert.ok(sent < 64 * 1024 * 1024, `${sent} bytes were sent before the refusal`);
});

/** Writes `text` on a new connection to `url`, half-closes it after `closeAfterMs`, reads all. */
async function raw(url: string, text: string, closeAfterMs?: number): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(url).port) });
  await writeAll(conn, new TextEncoder().encode(text));
  const timer = closeAfterMs === undefined
    ? undefined
    : setTimeout(() => conn.closeWrite().catch(() => {}), closeAfterMs);
  try {
    return await new Response(conn.readable).text();
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("service: what a request gets wrong is a 400 in the usual shape, never a 500", async () => {
  await using model = startMockOpenAIServer({ replies: [] as MockReply[] });
  await using service = serveHandler({ model: openaiModel(model), token: "s3cret-token" });
  const auth = "Authorization: Bearer s3cret-token\r\n";
  const cases = {
    "a Host that is no host":
      `GET /v1/runs HTTP/1.1\r\nHost: [::1\r\n${auth}Connection: close\r\n\r\n`,
    "a malformed %-escape": `GET /v1/sessions/%E0%A4%A HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}` +
      "Connection: close\r\n\r\n",
    "a body cut short": `POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}` +
      'Content-Length: 100\r\n\r\n{"mess',
    "a chunked body cut short": `POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}` +
      'Transfer-Encoding: chunked\r\n\r\n6\r\n{"mess\r\n',
  };
  for (const [what, request] of Object.entries(cases)) {
    const answer = await raw(service.url, request, what.includes("cut") ? 200 : undefined);
    assert.match(answer, /^HTTP\/1\.1 400 /, `${what}: ${answer}`);
    const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));
    assert.equal(body.error.code, "bad_request", what);
    assert.match(body.error.message, /Host header|%-escape|cut off/, what);
  }
  // The same without the token: refused, still not a 500.
  const bare = await raw(
    service.url,
    "GET /v1/runs HTTP/1.1\r\nHost: [::1\r\nConnection: close\r\n\r\n",
  );
  assert.match(bare, /^HTTP\/1\.1 400 /);
});

Deno.test("service: a session of another project is not served; a prefix needs 8 characters and names no other id", async () => {
  await using model = startMockOpenAIServer({ replies: [] as MockReply[] });
  const sessions = memorySessionStore();
  const here = await Deno.makeTempDir({ prefix: "agent_service_here_" });
  const elsewhere = await Deno.makeTempDir({ prefix: "agent_service_elsewhere_" });
  try {
    const make = async (id: string, cwd: string) => {
      const writer = await sessions.create({ id, cwd, model: "openai/test" });
      const message = { role: "user" as const, content: `secret plans of ${id}` };
      await writer.append({ type: "message", message, at: new Date().toISOString() });
      await writer.close();
    };
    await make("a1b2c3d4-0000-elsewhere", elsewhere);
    await make("c0ffee00-1111-elsewhere", elsewhere);
    await make("c0ffee00-2222-here", here);
    await make("d00d0000-3333-here", here);
    await make("d00d0000-4444-here", here);
    await using service = serveHandler({ model: openaiModel(model), sessions, cwd: here });
    const get = async (id: string) => {
      const response = await fetch(`${service.url}/v1/sessions/${id}`);
      return { status: response.status, body: await response.json() };
    };

    const listed = (await (await fetch(`${service.url}/v1/sessions`)).json()).sessions;
    assert.deepEqual(listed.map((s: Json) => s.id).sort(), [
      "c0ffee00-2222-here",
      "d00d0000-3333-here",
      "d00d0000-4444-here",
    ]);
    // Another project's session, by its whole id or a long prefix, is not there.
    for (const id of ["a1b2c3d4-0000-elsewhere", "a1b2c3d4"]) {
      const other = await get(id);
      assert.equal(other.status, 404, id);
      assert.doesNotMatch(JSON.stringify(other.body), /secret plans|c0ffee00/);
    }
    // One character, or seven, finds nothing: no enumerating by short prefixes.
    for (const id of ["a", "c", "d00d000"]) {
      const short = await get(id);
      assert.equal(short.status, 400, id);
      assert.match(short.body.error.message, /its first 8 characters or more/);
      assert.doesNotMatch(JSON.stringify(short.body), /-(0000|1111|2222|3333|4444)-/);
    }
    // A prefix that another project's session shares finds the one here.
    const mine = await get("c0ffee00");
    assert.equal(mine.status, 200);
    assert.equal(mine.body.id, "c0ffee00-2222-here");
    // An ambiguous prefix says how many, not which.
    const both = await get("d00d0000");
    assert.equal(both.status, 409);
    assert.deepEqual(both.body.error, {
      code: "ambiguous",
      message: '"d00d0000" starts 2 sessions: give more of the id (GET /v1/sessions lists them)',
    });
    assert.equal(
      (await get("d00d0000-4444-here")).body.messages[0].content,
      "secret plans of d00d0000-4444-here",
    );
  } finally {
    await Deno.remove(here, { recursive: true });
    await Deno.remove(elsewhere, { recursive: true });
  }
});
