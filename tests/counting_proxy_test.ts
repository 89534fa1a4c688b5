/**
 * The counting proxy of `deno task size`: a `CONNECT` tunnel to a loopback server, direct or
 * through another proxy, counts exactly the bytes the server sent.
 *
 * @module
 */

import assert from "node:assert/strict";
import { startCountingProxy } from "../bench/counting_proxy.ts";

/** A loopback server that sends `size` bytes to each connection, then closes it. */
function startSender(size: number): { port: number; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  (async () => {
    for await (const conn of listener) {
      const bytes = new Uint8Array(size).fill(7);
      let written = 0;
      while (written < size) written += await conn.write(bytes.subarray(written));
      conn.close();
    }
  })().catch(() => {});
  return { port: (listener.addr as Deno.NetAddr).port, close: () => listener.close() };
}

/** Opens a tunnel through the proxy at `proxyUrl` and reads all the server sends. */
async function readThrough(
  proxyUrl: string,
  port: number,
): Promise<{ head: string; body: number }> {
  const proxy = new URL(proxyUrl);
  const conn = await Deno.connect({ hostname: proxy.hostname, port: Number(proxy.port) });
  await conn.write(new TextEncoder().encode(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`));
  const all: number[] = [];
  const chunk = new Uint8Array(4096);
  while (true) {
    const n = await conn.read(chunk);
    if (n === null) break;
    all.push(...chunk.subarray(0, n));
  }
  conn.close();
  const text = new TextDecoder().decode(new Uint8Array(all));
  const end = text.indexOf("\r\n\r\n");
  return { head: text.slice(0, end), body: all.length - end - 4 };
}

Deno.test("startCountingProxy() counts the bytes a tunnelled server sends", async () => {
  const sender = startSender(100_000);
  const proxy = startCountingProxy();
  try {
    const { head, body } = await readThrough(proxy.url, sender.port);
    assert.match(head, /^HTTP\/1\.1 200/);
    assert.equal(body, 100_000);
    assert.equal(proxy.received(), 100_000);
    assert.deepEqual(proxy.hosts(), [`127.0.0.1:${sender.port}`]);
    proxy.reset();
    assert.equal(proxy.received(), 0);
  } finally {
    await proxy.close();
    sender.close();
  }
});

Deno.test("startCountingProxy() tunnels through the proxy it is given", async () => {
  const sender = startSender(5_000);
  const upstream = startCountingProxy();
  const proxy = startCountingProxy(new URL(upstream.url));
  try {
    const { head, body } = await readThrough(proxy.url, sender.port);
    assert.match(head, /^HTTP\/1\.1 200/);
    assert.equal(body, 5_000);
    assert.equal(proxy.received(), 5_000);
    assert.equal(upstream.received(), 5_000);
  } finally {
    await proxy.close();
    await upstream.close();
    sender.close();
  }
});
