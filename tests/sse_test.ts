/**
 * Reading server-sent events from a real `fetch` body: into one buffer of the reader's own,
 * reused from read to read, with every event whole and in order whatever the size of the pieces
 * the server sends; and from a stream that is not a byte stream, as it comes.
 */

import assert from "node:assert/strict";
import { readSse, readSseBatches } from "../lib/providers/sse.ts";

const OPTIONS = { idleTimeoutMs: 10_000, provider: "test" };

/** A loopback server answering each request with `pieces`, one write each. */
function serve(pieces: readonly string[]): { url: string } & AsyncDisposable {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
    const encoder = new TextEncoder();
    let next = 0;
    return new Response(
      new ReadableStream({
        pull(controller) {
          if (next === pieces.length) return controller.close();
          controller.enqueue(encoder.encode(pieces[next++]));
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  });
  const { port } = server.addr as Deno.NetAddr;
  return { url: `http://127.0.0.1:${port}/`, [Symbol.asyncDispose]: () => server.shutdown() };
}

Deno.test("readSse() reads a fetch body whole and in order: small pieces, events split across pieces, and an event far larger than its buffer", async () => {
  const big = "x".repeat(300_000);
  const small = Array.from({ length: 2_000 }, (_, i) => `data: ${i}\n\n`);
  const split = ["da", "ta: spl", "it\n", "\ndata: ", `${big}\n\n`];
  await using server = serve([...small, ...split, "data: last"]);
  const data: string[] = [];
  for await (const event of readSse((await fetch(server.url)).body!, OPTIONS)) {
    data.push(event.data);
  }
  assert.equal(data.length, 2_003);
  assert.deepEqual(data.slice(0, 3), ["0", "1", "2"]);
  assert.equal(data[1_999], "1999");
  assert.equal(data[2_000], "split");
  assert.equal(data[2_001].length, big.length);
  assert.equal(data[2_002], "last", "an event left open at the end is delivered");
});

Deno.test("readSseBatches() gives the events of each piece together, never an empty batch", async () => {
  const body = ReadableStream.from(["data: 1\n\ndata: 2\n\n", ": ping\n\n", "data: 3\n", "\n"])
    .pipeThrough(new TextEncoderStream());
  const batches: string[][] = [];
  for await (const events of readSseBatches(body, OPTIONS)) {
    batches.push(events.map((event) => event.data));
  }
  assert.deepEqual(batches, [["1", "2"], ["3"]]);
});

Deno.test("readSse() reads a stream that is not a byte stream as it comes", async () => {
  const encoder = new TextEncoder();
  const pieces = ["data: a\n\n", "data: b\n", "\n"];
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const piece = pieces.shift();
      if (piece === undefined) controller.close();
      else controller.enqueue(encoder.encode(piece));
    },
  });
  const data: string[] = [];
  for await (const event of readSse(body, OPTIONS)) data.push(event.data);
  assert.deepEqual(data, ["a", "b"]);
});

Deno.test("readSse() stops reading the body when its reader stops early", async () => {
  let cancelled = false;
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    type: "bytes",
    pull(controller) {
      controller.enqueue(encoder.encode("data: again\n\n"));
    },
    cancel() {
      cancelled = true;
    },
  });
  for await (const event of readSse(body, OPTIONS)) {
    assert.equal(event.data, "again");
    break;
  }
  assert.ok(cancelled);
});
