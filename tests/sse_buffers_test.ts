/**
 * SSE bodies read one after another through the reused read buffers: each is read whole and
 * right, whether the one before it ended, was left early, or ended mid-event.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { readSse } from "../lib/providers/sse.ts";

Deno.test("readSse() gives each fetch body its own events when read buffers go from one to the next", async () => {
  const bodies: Record<string, string> = {
    "/a": Array.from({ length: 50 }, (_, i) => `data: a${i}\n\n`).join(""),
    "/b": "data: b0\n\n" + `data: ${"b".repeat(200_000)}\n\n` + "data: b2\n\n",
    "/c": "data: c0\n\ndata: c1",
  };
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const text = bodies[new URL(request.url).pathname];
    // Sent in small pieces, so that each read of a buffer holds a part of the body.
    const bytes = new TextEncoder().encode(text);
    return new Response(
      new ReadableStream({
        async start(controller) {
          for (let at = 0; at < bytes.length; at += 1000) {
            controller.enqueue(bytes.slice(at, at + 1000));
            if (at % 20_000 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
          }
          controller.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  });
  const read = async (path: string, stopAfter = Infinity) => {
    const response = await fetch(`http://127.0.0.1:${server.addr.port}${path}`);
    const data: string[] = [];
    for await (const event of readSse(response.body!, { idleTimeoutMs: 5_000, provider: "t" })) {
      data.push(event.data);
      if (data.length >= stopAfter) break;
    }
    return data;
  };
  const a = Array.from({ length: 50 }, (_, i) => `a${i}`);
  for (let round = 0; round < 3; round++) {
    assert.deepEqual(await read("/a", 3), a.slice(0, 3), "left early");
    assert.deepEqual(await read("/b"), ["b0", "b".repeat(200_000), "b2"]);
    assert.deepEqual(await read("/a"), a);
    assert.deepEqual(await read("/c"), ["c0", "c1"], "ended mid-event");
    const all = await Promise.all([read("/a"), read("/b"), read("/a", 10), read("/c")]);
    assert.deepEqual(all, [a, ["b0", "b".repeat(200_000), "b2"], a.slice(0, 10), ["c0", "c1"]]);
  }
});
