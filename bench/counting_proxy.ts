/**
 * A loopback HTTPS proxy (HTTP `CONNECT` tunnels) that counts the bytes passing through it, for
 * `bench/size.ts`: a child process given `HTTPS_PROXY=<url>` sends all its HTTPS traffic here,
 * and `received()` is what it downloaded, as it came over the wire (TLS, compressed). When the
 * environment already names a proxy (`http://[user:pass@]host:port`), tunnels go through it.
 *
 * @module
 */

/** The proxy, once listening. */
export interface CountingProxy {
  /** `http://127.0.0.1:<port>`, for `HTTPS_PROXY`. */
  readonly url: string;
  /** Bytes sent to clients (downloaded) since the start or the last `reset()`. */
  received(): number;
  /** Hosts tunnelled to since the start or the last `reset()`. */
  hosts(): string[];
  /** Starts counting again from zero. */
  reset(): void;
  /** Stops listening and ends every open tunnel. */
  close(): Promise<void>;
}

const _encoder = new TextEncoder();
const _decoder = new TextDecoder();

/**
 * Starts the proxy on a free loopback port; `upstream` is the proxy it tunnels through, if any.
 *
 * @example
 * ```ts
 * import { startCountingProxy } from "./counting_proxy.ts";
 * const proxy = startCountingProxy();
 * if (!proxy.url.startsWith("http://127.0.0.1:") || proxy.received() !== 0) {
 *   throw new Error("unexpected");
 * }
 * await proxy.close();
 * ```
 */
export function startCountingProxy(upstream?: URL): CountingProxy {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  let received = 0;
  let hosts = new Set<string>();
  const serving = (async () => {
    for await (const conn of listener) {
      open.add(conn);
      _tunnel(conn, upstream, (target) => hosts.add(target), (bytes) => received += bytes, open)
        .catch(() => {})
        .finally(() => {
          open.delete(conn);
          _close(conn);
        });
    }
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    received: () => received,
    hosts: () => [...hosts],
    reset() {
      received = 0;
      hosts = new Set();
    },
    async close() {
      listener.close();
      for (const conn of open) _close(conn);
      await serving;
    },
  };
}

/** Serves one `CONNECT`: opens the tunnel (directly or through `upstream`) and pipes both ways. */
async function _tunnel(
  client: Deno.Conn,
  upstream: URL | undefined,
  onHost: (target: string) => void,
  onReceived: (bytes: number) => void,
  open: Set<Deno.Conn>,
): Promise<void> {
  const { head, rest } = await _readHead(client);
  const [method, target] = head.split("\r\n")[0].split(" ");
  if (method !== "CONNECT" || !target) {
    await client.write(_encoder.encode("HTTP/1.1 501 Not Implemented\r\n\r\n"));
    return;
  }
  onHost(target);
  let server: Deno.Conn;
  if (upstream) {
    server = await Deno.connect({
      hostname: upstream.hostname,
      port: Number(upstream.port || 80),
    });
    open.add(server);
    const auth = upstream.username
      ? `Proxy-Authorization: Basic ${
        btoa(`${decodeURIComponent(upstream.username)}:${decodeURIComponent(upstream.password)}`)
      }\r\n`
      : "";
    await _writeAll(
      server,
      _encoder.encode(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth}\r\n`),
    );
    const answer = await _readHead(server);
    if (!/^HTTP\/1\.[01] 2\d\d/.test(answer.head)) {
      await _writeAll(client, _encoder.encode(`${answer.head}\r\n\r\n`));
      open.delete(server);
      _close(server);
      return;
    }
    if (answer.rest.length) await _writeAll(client, answer.rest);
  } else {
    const [hostname, port] = _splitTarget(target);
    server = await Deno.connect({ hostname, port });
    open.add(server);
  }
  try {
    await _writeAll(client, _encoder.encode("HTTP/1.1 200 Connection established\r\n\r\n"));
    if (rest.length) await _writeAll(server, rest);
    await Promise.all([
      _pipe(server, client, onReceived).finally(() => _close(client)),
      _pipe(client, server, () => {}).finally(() => _close(server)),
    ]);
  } finally {
    open.delete(server);
    _close(server);
  }
}

/** `host:port` and `[v6]:port` as a host name and a port number. */
function _splitTarget(target: string): [string, number] {
  const colon = target.lastIndexOf(":");
  return [target.slice(0, colon).replace(/^\[|\]$/g, ""), Number(target.slice(colon + 1))];
}

/** Reads up to the end of an HTTP head; `rest` is what came after it. */
async function _readHead(conn: Deno.Conn): Promise<{ head: string; rest: Uint8Array }> {
  let buffer = new Uint8Array(0);
  const chunk = new Uint8Array(16 * 1024);
  while (buffer.length < 64 * 1024) {
    const n = await conn.read(chunk);
    if (n === null) break;
    const joined = new Uint8Array(buffer.length + n);
    joined.set(buffer);
    joined.set(chunk.subarray(0, n), buffer.length);
    buffer = joined;
    for (let i = 3; i < buffer.length; i++) {
      if (
        buffer[i - 3] === 13 && buffer[i - 2] === 10 && buffer[i - 1] === 13 && buffer[i] === 10
      ) {
        return { head: _decoder.decode(buffer.subarray(0, i - 3)), rest: buffer.slice(i + 1) };
      }
    }
  }
  return { head: _decoder.decode(buffer), rest: new Uint8Array(0) };
}

async function _pipe(from: Deno.Conn, to: Deno.Conn, count: (bytes: number) => void) {
  const chunk = new Uint8Array(64 * 1024);
  while (true) {
    const n = await from.read(chunk).catch(() => null);
    if (n === null) return;
    count(n);
    await _writeAll(to, chunk.subarray(0, n));
  }
}

async function _writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));
}

function _close(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}
