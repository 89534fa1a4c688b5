/**
 * Reading sessions from `agent serve`:
 * `deno run -A bench/service_reads.ts [sessions] [bigMb] [--root <checkout>]`.
 *
 * The data directory is written through the session store, as runs write it: `sessions` small
 * sessions of the service's working directory (default 5,000; a few messages each) and one
 * session of `bigMb` MB (default 50). `agent serve` then runs as a child process, from this
 * checkout or the one `--root` names (to compare two versions on the same data), and this
 * process is its client:
 *
 * - `GET /v1/sessions/{id}` of a small session, by its whole id and by an 8-character prefix:
 *   the median of 50 reads, one at a time.
 * - `GET /v1/sessions`: the median of 5 listings (the first page of 50, where the service
 *   pages; the whole listing where it does not).
 * - 16 concurrent reads of the big session: the wall time until all 16 bodies are read, and
 *   how far the service's resident memory (VmRSS, sampled every 10 ms) rose above what it was
 *   before.
 */

import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { fileSessionStore } from "../lib/session/mod.ts";
import type { Message } from "../mod.ts";
import { median } from "./stats.ts";

const numbers = Deno.args.filter((arg, i) =>
  !arg.startsWith("--") && Deno.args[i - 1] !== "--root"
);
const SESSIONS = Number(numbers[0] ?? 5_000);
const BIG_MB = Number(numbers[1] ?? 50);
const rootAt = Deno.args.indexOf("--root");
const root = rootAt >= 0 ? Deno.args[rootAt + 1] : fileURLToPath(new URL("..", import.meta.url));
const TOKEN = "bench-service-reads-token-0123456789";

const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "bench_reads_" }));
const dataDir = join(base, "data");
const cwd = join(base, "work");
await Deno.mkdir(cwd, { recursive: true });
const store = fileSessionStore({ dir: join(dataDir, "sessions") });

/** Writes a session of `messages` messages of `size` characters each; gives its id. */
async function writeSession(messages: number, size: number, at: Date): Promise<string> {
  const writer = await store.create({ cwd, model: "openai/test" });
  const filler = "x".repeat(size);
  for (let i = 0; i < messages; i++) {
    const when = new Date(at.getTime() + i).toISOString();
    await writer.append({ type: "message", message: sessionMessage(i, filler), at: when });
  }
  await writer.close();
  return writer.id;
}

/** The `i`th message of a session: a question, a tool call with its text, the tool's output. */
function sessionMessage(i: number, filler: string): Message {
  if (i % 3 === 0) return { role: "user", content: `Question ${i}: ${filler}` };
  if (i % 3 === 1) {
    return {
      role: "assistant",
      content: [
        { type: "text", text: `Looking ${i}: ${filler}` },
        { type: "tool_call", id: `call_${i}`, name: "read", input: { path: "notes.txt" } },
      ],
    };
  }
  return {
    role: "tool",
    toolCallId: `call_${i - 1}`,
    name: "read",
    content: filler,
    isError: false,
  };
}

const built = performance.now();
const start = Date.parse("2026-01-01T00:00:00Z");
const small: string[] = [];
for (let i = 0; i < SESSIONS; i++) {
  small.push(await writeSession(4, 200, new Date(start + i * 1000)));
}
const bigId = await writeSession(BIG_MB * 100, 10_000, new Date(start - 86_400_000));
console.log(
  `data: ${SESSIONS} sessions of 4 messages, one of ${BIG_MB} MB; written in ` +
    `${((performance.now() - built) / 1000).toFixed(1)} s`,
);

const child = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", join(root, "mod.ts"), "serve", "--port", "0", "-m", "openai/test"],
  cwd,
  env: {
    AGENT_DATA_DIR: dataDir,
    AGENT_SERVE_TOKEN: TOKEN,
    OPENAI_API_KEY: "sk-bench-unused",
    OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
    NO_COLOR: "1",
  },
  stdin: "null",
  stdout: "null",
  stderr: "piped",
}).spawn();
const url = await (async () => {
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (true) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`agent serve did not start:\n${text}`);
    text += value;
    const found = /serving \S+ on (http:\/\/\S+) /.exec(text);
    if (found) {
      (async () => {
        while (!(await reader.read()).done);
      })();
      return found[1];
    }
  }
})();

const headers = { authorization: `Bearer ${TOKEN}` };
/** Reads a path's whole body; gives its status and size in bytes. */
async function read(path: string): Promise<{ status: number; bytes: number }> {
  const response = await fetch(`${url}${path}`, { headers });
  let bytes = 0;
  for await (const chunk of response.body!) bytes += chunk.length;
  return { status: response.status, bytes };
}
/** The median ms of `times` reads of what `path(i)` names. */
async function timed(times: number, path: (i: number) => string): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const began = performance.now();
    const { status } = await read(path(i));
    ms.push(performance.now() - began);
    if (status !== 200) throw new Error(`${path(i)} answered ${status}`);
  }
  return median(ms);
}
const rssKb = () =>
  Number(/VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${child.pid}/status`))![1]);

try {
  await read(`/v1/sessions/${small[0]}`); // warm up
  const byId = await timed(50, (i) => `/v1/sessions/${small[(i * 97) % SESSIONS]}`);
  const byPrefix = await timed(50, (i) => `/v1/sessions/${small[(i * 89) % SESSIONS].slice(0, 8)}`);
  const listing = await timed(5, () => "/v1/sessions?limit=50");
  console.log(
    `GET /v1/sessions/{id}: ${byId.toFixed(1)} ms by id, ${byPrefix.toFixed(1)} ms by prefix`,
  );
  console.log(`GET /v1/sessions?limit=50: ${listing.toFixed(1)} ms`);

  await new Promise((done) => setTimeout(done, 500));
  const before = rssKb();
  let peak = before;
  const sampler = setInterval(() => peak = Math.max(peak, rssKb()), 10);
  const began = performance.now();
  const reads = await Promise.all(Array.from({ length: 16 }, () => read(`/v1/sessions/${bigId}`)));
  const wall = performance.now() - began;
  clearInterval(sampler);
  peak = Math.max(peak, rssKb());
  const statuses = [...new Set(reads.map((r) => r.status))].join(",");
  const mb = (reads.reduce((sum, r) => sum + r.bytes, 0) / 16 / 1e6).toFixed(1);
  console.log(
    `16 concurrent reads of the ${BIG_MB} MB session: ${(wall / 1000).toFixed(2)} s ` +
      `(status ${statuses}, ${mb} MB each); RSS ${(before / 1024).toFixed(0)} → ` +
      `${(peak / 1024).toFixed(0)} MB peak, growth ${((peak - before) / 1024).toFixed(0)} MB`,
  );
} finally {
  child.kill("SIGKILL");
  await child.status;
  await Deno.remove(base, { recursive: true });
}
