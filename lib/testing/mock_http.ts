/**
 * What the loopback mock servers of the providers share: a server on a free loopback port that
 * records each POST to its endpoint and answers it with the next scripted reply, and an SSE body
 * that streams frames one by one, with cuts, connection resets and waits between them.
 *
 * @module
 */

import { sleep } from "../async.ts";

/** A request a mock server received. */
export interface MockRequest {
  /** The parsed JSON body. */
  body: Record<string, unknown>;
  /** The size of the body as sent, in bytes. */
  bytes: number;
  /** The request headers. */
  headers: Headers;
}

/** How one mock endpoint answers. */
export interface MockEndpoint<Reply> {
  /** Whether a POST to `path` is this endpoint. */
  route(path: string): boolean;
  /** The replies, one per request in order, or a function of the body and the request's index. */
  replies: readonly Reply[] | ((body: Record<string, unknown>, index: number) => Reply);
  /** The API's error response, for an unknown route (404) or a request with no reply (500). */
  error(status: number, message: string): Response;
  /**
   * A request refused before its reply is taken (as a real server checks its input), or
   * `undefined` to go on.
   */
  refuse?(body: Record<string, unknown>): Response | undefined;
  /** The response to a request; `closing` aborts when the server closes. */
  respond(
    reply: Reply,
    body: Record<string, unknown>,
    index: number,
    closing: AbortSignal,
  ): Response;
}

/** A running mock server. */
export interface MockHttpServer extends AsyncDisposable {
  /** The server's origin, `http://127.0.0.1:<port>`. */
  readonly origin: string;
  /** Every request to the endpoint, in order, refused ones included. */
  readonly requests: MockRequest[];
  /** Stops the server. */
  close(): Promise<void>;
}

const _decoder = new TextDecoder();

/** The error an SSE body fails with to break its connection (a `"reset"` frame). */
export const MOCK_RESET: Error = new Error("mock: connection reset");

/**
 * Starts a mock endpoint on a free loopback port. A reply's `delayMs` waits before the
 * response starts.
 *
 * @example
 * ```ts
 * import { serveMock } from "./mock_http.ts";
 * await using server = serveMock<{ text: string; delayMs?: number }>({
 *   route: (path) => path === "/echo",
 *   replies: [{ text: "one" }],
 *   error: (status, message) => Response.json({ message }, { status }),
 *   respond: (reply) => new Response(reply.text),
 * });
 * const post = () => fetch(`${server.origin}/echo`, { method: "POST", body: "{}" });
 * const [first, second] = [await post(), await post()];
 * if (await first.text() !== "one" || second.status !== 500) throw new Error("unexpected");
 * await second.body?.cancel();
 * if (server.requests.length !== 2 || server.requests[0].bytes !== 2) throw new Error("unexpected");
 * ```
 */
export function serveMock<Reply extends { delayMs?: number }>(
  endpoint: MockEndpoint<Reply>,
): MockHttpServer {
  const requests: MockRequest[] = [];
  const closing = new AbortController();
  const server = Deno.serve(
    {
      hostname: "127.0.0.1",
      port: 0,
      onListen: () => {},
      // A reset is deliberate: it is not logged as a server failure.
      onError: (error) => {
        if (error !== MOCK_RESET) console.error(error);
        return new Response("mock: internal error", { status: 500 });
      },
    },
    async (request) => {
      const path = new URL(request.url).pathname;
      if (request.method !== "POST" || !endpoint.route(path)) {
        return endpoint.error(404, `mock: no route ${request.method} ${path}`);
      }
      const raw = await request.bytes();
      const body = JSON.parse(_decoder.decode(raw));
      const index = requests.length;
      requests.push({ body, bytes: raw.byteLength, headers: request.headers });
      const refused = endpoint.refuse?.(body);
      if (refused) return refused;
      const reply = typeof endpoint.replies === "function"
        ? endpoint.replies(body, index)
        : endpoint.replies[index];
      if (!reply) return endpoint.error(500, `mock: no reply for request ${index + 1}`);
      if (reply.delayMs) await mockPause(reply.delayMs, closing.signal);
      return endpoint.respond(reply, body, index, closing.signal);
    },
  );
  const { port } = server.addr as Deno.NetAddr;
  const close = async () => {
    closing.abort(); // ends delays still pending, so that shutting down does not wait on them
    await server.shutdown();
  };
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * An SSE body of `frames`, sent one by one: `"cut"` ends the body cleanly there, `"reset"` breaks
 * the connection ({@link MOCK_RESET}); `eventDelayMs` waits before every frame but the first.
 *
 * @example
 * ```ts
 * import { mockSseBody } from "./mock_http.ts";
 * const body = mockSseBody(["data: 1\n\n", "cut", "data: 2\n\n"], undefined, new AbortController().signal);
 * if (await new Response(body).text() !== "data: 1\n\n") throw new Error("unexpected");
 * ```
 */
export function mockSseBody(
  frames: ReadonlyArray<string | "cut" | "reset">,
  eventDelayMs: number | undefined,
  signal: AbortSignal,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let next = 0;
  return new ReadableStream({
    async pull(controller) {
      const frame = frames[next++];
      if (frame === undefined || frame === "cut") return controller.close();
      if (frame === "reset") return controller.error(MOCK_RESET);
      if (eventDelayMs && next > 1) await mockPause(eventDelayMs, signal);
      controller.enqueue(encoder.encode(frame));
    },
  });
}

/**
 * Waits `ms`, or less when `signal` aborts (the server closes).
 *
 * @example
 * ```ts
 * import { mockPause } from "./mock_http.ts";
 * const closing = new AbortController();
 * closing.abort();
 * await mockPause(60_000, closing.signal); // returns at once
 * ```
 */
export function mockPause(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, signal).catch(() => {});
}
