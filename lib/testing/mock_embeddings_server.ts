/**
 * A loopback HTTP server that speaks the OpenAI `/v1/embeddings` API with deterministic vectors:
 * a hashed bag of words, so that texts sharing words are close, with synonyms that hash alike.
 * For tests and benchmarks: point any OpenAI client at `server.url`.
 *
 * @module
 */

import { sleep } from "../async.ts";

/** Options of {@link startMockEmbeddingsServer}. */
export interface MockEmbeddingsServerOptions {
  /** The vectors' dimension when a request names none (default 64). */
  dimensions?: number;
  /** Words embedded as another, e.g. `{ automobile: "car" }`: synonyms hash alike. */
  synonyms?: Readonly<Record<string, string>>;
  /** A vector of the test's own for a text; `undefined` falls back to the hashed one. */
  embed?: (text: string, dimensions: number) => number[] | undefined;
  /** Answer every request with this HTTP status (an outage) from the start. */
  status?: number;
  /** A wait before each answer (cut short when the server closes). */
  delayMs?: number;
}

/** A request the mock server received. */
export interface MockEmbeddingsRequest {
  /** The parsed JSON body. */
  body: Record<string, unknown>;
  /** The texts to embed. */
  inputs: string[];
  /** The request headers. */
  headers: Headers;
}

/** A running mock embeddings server. */
export interface MockEmbeddingsServer extends AsyncDisposable {
  /** The API root, including `/v1`. */
  readonly url: string;
  /** Every embeddings request received, in order (failed ones too). */
  readonly requests: MockEmbeddingsRequest[];
  /** When set, every following request gets this HTTP status and an error body; unset heals. */
  status: number | undefined;
  /** Stops the server. */
  close(): Promise<void>;
}

/**
 * A deterministic embedding: each word (letters and digits, lowercased, mapped through
 * `synonyms`) is hashed (FNV-1a) to one dimension with a sign, weighted `1 + ln(count)`; the
 * vector is normalized to length 1. Texts sharing words are close; texts sharing none are
 * nearly orthogonal.
 *
 * @example
 * ```ts
 * import { hashedEmbedding } from "./mock_embeddings_server.ts";
 * const dot = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i], 0);
 * const car = hashedEmbedding("red car", 64, { automobile: "car" });
 * const automobile = hashedEmbedding("automobile", 64, { automobile: "car" });
 * if (!(dot(car, automobile) > 0.5)) throw new Error("unexpected");
 * ```
 */
export function hashedEmbedding(
  text: string,
  dimensions: number,
  synonyms: Readonly<Record<string, string>> = {},
): number[] {
  const counts = new Map<string, number>();
  for (const match of text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) {
    const word = Object.hasOwn(synonyms, match[0]) ? synonyms[match[0]] : match[0];
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  const vector = new Array<number>(dimensions).fill(0);
  for (const [word, count] of counts) {
    let hash = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) hash = Math.imul(hash ^ word.charCodeAt(i), 0x01000193);
    hash >>>= 0;
    vector[hash % dimensions] += (hash & 0x80000000 ? -1 : 1) * (1 + Math.log(count));
  }
  // Not `Math.hypot(...vector)`: a request may ask for more dimensions than a call takes arguments.
  const norm = Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0)) || 1;
  return vector.map((x) => x / norm);
}

/**
 * Starts the mock server on a free loopback port. It answers `POST …/embeddings` with one vector
 * per input (base64 when the request asks for `encoding_format: "base64"`, as the OpenAI SDK
 * does), honouring `dimensions`.
 *
 * @example
 * ```ts
 * import { startMockEmbeddingsServer } from "./mock_embeddings_server.ts";
 * await using server = startMockEmbeddingsServer({ dimensions: 4 });
 * const response = await fetch(`${server.url}/embeddings`, {
 *   method: "POST",
 *   body: JSON.stringify({ model: "m", input: ["hello"], encoding_format: "float" }),
 * });
 * const { data } = await response.json();
 * if (data[0].embedding.length !== 4 || server.requests[0].inputs[0] !== "hello") {
 *   throw new Error("unexpected");
 * }
 * server.status = 503; // an outage from now on
 * const failed = await fetch(`${server.url}/embeddings`, { method: "POST", body: "{}" });
 * await failed.body?.cancel();
 * if (failed.status !== 503) throw new Error("unexpected");
 * ```
 */
export function startMockEmbeddingsServer(
  options: MockEmbeddingsServerOptions = {},
): MockEmbeddingsServer {
  const requests: MockEmbeddingsRequest[] = [];
  const closing = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const path = new URL(request.url).pathname;
      if (request.method !== "POST" || !path.endsWith("/embeddings")) {
        return _error(404, `mock: no route ${request.method} ${path}`);
      }
      let body: Record<string, unknown>;
      try {
        body = await request.json();
      } catch {
        body = {};
      }
      const input = body.input;
      const inputs = typeof input === "string"
        ? [input]
        : Array.isArray(input) && input.every((item) => typeof item === "string")
        ? input as string[]
        : [];
      requests.push({ body, inputs, headers: request.headers });
      if (options.delayMs) await sleep(options.delayMs, closing.signal).catch(() => {});
      if (mock.status) return _error(mock.status, `mock error ${mock.status}`);
      if (inputs.length === 0) return _error(400, "mock: input must be a string or strings");
      const dimensions = typeof body.dimensions === "number"
        ? body.dimensions
        : options.dimensions ?? 64;
      const base64 = body.encoding_format === "base64";
      const data = inputs.map((text, index) => {
        const vector = options.embed?.(text, dimensions) ??
          hashedEmbedding(text, dimensions, options.synonyms);
        return { object: "embedding", index, embedding: base64 ? _base64(vector) : vector };
      });
      const tokens = inputs.reduce((sum, text) => sum + Math.ceil(text.length / 4), 0);
      return Response.json({
        object: "list",
        data,
        model: String(body.model ?? "mock"),
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      });
    },
  );
  const { port } = server.addr as Deno.NetAddr;
  const close = () => {
    closing.abort(); // ends delays still pending, so that shutting down does not wait on them
    return server.shutdown();
  };
  const mock: MockEmbeddingsServer = {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    status: options.status,
    close,
    [Symbol.asyncDispose]: close,
  };
  return mock;
}

function _error(status: number, message: string): Response {
  return Response.json({ error: { message, type: "mock_error", code: null } }, { status });
}

/** A vector as base64 of its little-endian f32 bytes, as the OpenAI API sends it. */
function _base64(vector: number[]): string {
  const bytes = new Uint8Array(Float32Array.from(vector).buffer);
  let binary = "";
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
  return btoa(binary);
}
