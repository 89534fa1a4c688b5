/**
 * A run's SSE stream holds a bounded amount for a client that reads slower than the run goes:
 * it stops listening while the client holds about 1 MiB unread, and goes on from the run's own
 * log once the client reads, saying what the log no longer keeps.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { ServiceRun } from "../lib/service/mod.ts";
import { sseResponse } from "../lib/service/sse.ts";

/** The ids of the events of an SSE body, and the messages of its notices, read to the end. */
async function readAll(response: Response): Promise<{ ids: number[]; notices: string[] }> {
  const text = await response.text();
  const ids: number[] = [];
  const notices: string[] = [];
  for (const block of text.split("\n\n")) {
    const id = block.match(/^id: (\d+)$/m);
    if (id) ids.push(Number(id[1]));
    else if (block.startsWith("data: ")) notices.push(JSON.parse(block.slice(6)).message);
  }
  return { ids, notices };
}

const event = (i: number) => ({ type: "text", text: `${i} ${"x".repeat(1000)}` }) as never;

Deno.test("sse: a client that reads nothing while a run streams 30 MB gets what the run still keeps, and a notice of the rest", async () => {
  const run = new ServiceRun("loop", 1000);
  const response = sseResponse(run, 0, {});
  for (let i = 1; i <= 30_000; i++) run.emit(event(i));
  run.finish("success");
  const { ids, notices } = await readAll(response);
  // What the stream held for the client (about 1 MiB), then the run's last 1,000 events.
  assert.ok(ids.length < 3000, `the stream held ${ids.length} events for a client that read none`);
  assert.deepEqual(ids.slice(-1000), Array.from({ length: 1000 }, (_, i) => 29_001 + i));
  assert.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]), "in order, none twice");
  assert.equal(ids[0], 1);
  assert.equal(notices.length, 1);
  assert.match(notices[0], /^\d+ events are no longer kept; the stream goes on from event 29001$/);
});

Deno.test("sse: a client that reads along gets every event of a run longer than the stream holds", async () => {
  const run = new ServiceRun("loop", 10_000);
  const response = sseResponse(run, 0, {});
  const read = readAll(response);
  for (let i = 1; i <= 6000; i++) {
    run.emit(event(i));
    if (i % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 0));
  }
  run.finish("success");
  const { ids, notices } = await read;
  assert.deepEqual(notices, []);
  assert.deepEqual(ids, Array.from({ length: 6000 }, (_, i) => i + 1));
});

Deno.test("sse: a client that comes back with Last-Event-ID goes on after it, and one cancelled is let go", async () => {
  const run = new ServiceRun("loop", 100);
  for (let i = 1; i <= 10; i++) run.emit(event(i));
  let disconnected = false;
  const first = sseResponse(run, 0, {}, () => disconnected = true);
  const reader = first.body!.getReader();
  await reader.read();
  await reader.cancel();
  assert.ok(disconnected);
  const again = sseResponse(run, 7, {});
  run.emit(event(11));
  run.finish("success");
  assert.deepEqual((await readAll(again)).ids, [8, 9, 10, 11]);
});

async function eventIds(response: Response): Promise<number[]> {
  const text = await response.text();
  return [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
}

const bigEvent = (i: number, size: number) =>
  ({ type: "text", text: `${i} ${"x".repeat(size)}` }) as never;

Deno.test("sse: a client reading in fits and starts while a run streams in bursts gets every event once, in order", async () => {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const run = new ServiceRun("loop", 100_000);
  const reader = sseResponse(run, 0, {}).body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const reading = (async () => {
    for (let step = await reader.read(); !step.done; step = await reader.read()) {
      text += decoder.decode(step.value, { stream: true });
      if (random() < 0.3) await new Promise((resolve) => setTimeout(resolve, 1));
    }
  })();
  for (let i = 0; i < 2000;) {
    const burst = Math.floor(random() * 300);
    for (let k = 0; k < burst && i < 2000; k++) {
      run.emit(bigEvent(++i, Math.floor(random() * 8000)));
    }
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  run.finish("success");
  await reading;
  const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
  assert.deepEqual(ids, Array.from({ length: 2000 }, (_, k) => k + 1));
  assert.ok(!text.includes("no longer kept"));
});

Deno.test("sse: a client that goes away while the stream is held is let go, and the run's end reaches no one", async () => {
  const run = new ServiceRun("loop", 100_000);
  let gone = 0;
  const response = sseResponse(run, 0, {}, () => gone++);
  for (let i = 1; i <= 3000; i++) run.emit(bigEvent(i, 1000));
  const reader = response.body!.getReader();
  await reader.read();
  await reader.cancel();
  run.emit(bigEvent(3001, 10));
  run.finish("success");
  assert.equal(gone, 1);
});

Deno.test("sse: a run that ends while the stream is held is streamed to its end once read", async () => {
  const run = new ServiceRun("loop", 100_000);
  const response = sseResponse(run, 0, {});
  for (let i = 1; i <= 3000; i++) run.emit(bigEvent(i, 1000));
  run.finish("success");
  assert.deepEqual(await eventIds(response), Array.from({ length: 3000 }, (_, k) => k + 1));
});
