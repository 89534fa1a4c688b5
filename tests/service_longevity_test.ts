/**
 * `agent serve` kept up under what a long life brings it, as a real child process on a free
 * loopback port: many large sessions read at once, and a stop (SIGINT, SIGTERM) while it works.
 * Its resident memory is read from /proc, as an operator's tools read it.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Message } from "../mod.ts";
import { fileSessionStore } from "../lib/session/mod.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { startServe } from "./serve_support.ts";

const KEY = "sk-longevity-test-0123456789abcdef";
const TOKEN = "longevity-test-token-0123456789";
/** The service's environment: its model's key, and the token clients send. */
const ENV = { OPENAI_API_KEY: KEY, AGENT_SERVE_TOKEN: TOKEN };

/** The kB of memory a process holds now (VmRSS) and has held at most (VmHWM). */
function residentKb(pid: number): { now: number; peak: number } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]);
  return { now: kb("VmRSS"), peak: kb("VmHWM") };
}

/** Starts the count of a process's peak memory (VmHWM) again from what it holds now. */
function resetPeak(pid: number): void {
  Deno.writeTextFileSync(`/proc/${pid}/clear_refs`, "5");
}

/**
 * Writes a session of `count` messages of `filler` each (the first `first`) in the service's
 * project, through the session store, as runs write it; gives its id.
 */
async function writeSession(
  dirs: { dataDir: string; cwd: string },
  count: number,
  filler: string,
  first = filler,
): Promise<string> {
  const store = fileSessionStore({ dir: join(dirs.dataDir, "sessions") });
  const writer = await store.create({ cwd: dirs.cwd, model: "openai/test" });
  const at = "2026-01-01T00:00:00.000Z";
  for (let i = 0; i < count; i++) {
    await writer.append({ type: "message", message: largeMessage(i, i ? filler : first), at });
  }
  await writer.close();
  return writer.id;
}

/** The `i`th message of a large session: a question, a call and its text, the tool's output. */
function largeMessage(i: number, filler: string): Message {
  if (i % 3 === 0) return { role: "user", content: `Question ${i}: ${filler}` };
  if (i % 3 === 1) {
    return {
      role: "assistant",
      content: [
        { type: "text", text: `Reading ${i}: ${filler}` },
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

Deno.test({
  name: "agent serve: 16 reads at once of a 50 MB session keep its memory growth under 100 MB",
  ignore: Deno.build.os !== "linux",
  async fn() {
    await using model = startMockOpenAIServer({ replies: () => ({ text: "unused" }) });
    const messages = 5_000; // of 10 kB each: 50 MB
    let id = "";
    await using served = await startServe(model, {
      env: ENV,
      // A key it must never send, in the first message.
      prepare: async (dirs) =>
        void (id = await writeSession(dirs, messages, "x".repeat(10_000), `key ${KEY}`)),
    });
    const size = (await Deno.stat(join(
      served.dataDir,
      "sessions",
      [...Deno.readDirSync(join(served.dataDir, "sessions"))].find((e) => e.isDirectory)!.name,
      `${id}.jsonl`,
    ))).size;
    assert.ok(size > 50e6, `the session is ${size} bytes`);

    // Warmed up: one read of the whole session, as a first client's, grows the V8 heap once to
    // what its young generation keeps for reads like it (some 30 MB, counted otherwise as
    // growth, and more or less of it depending on when its GC runs on a loaded machine).
    // From there, the peak the process reaches while the 16 reads go on is theirs.
    const warmUp = await served.fetch(`/v1/sessions/${id}`);
    assert.equal(warmUp.status, 200);
    await warmUp.body!.pipeTo(new WritableStream());
    await new Promise((done) => setTimeout(done, 500));
    const before = residentKb(served.pid).now;
    resetPeak(served.pid);
    const reads = await Promise.all(Array.from({ length: 16 }, async (_, i) => {
      const response = await served.fetch(`/v1/sessions/${id}`);
      assert.equal(response.status, 200);
      if (i === 0) return await response.text(); // one read whole, to look at
      let bytes = 0;
      let last = "";
      for await (const chunk of response.body!.pipeThrough(new TextDecoderStream())) {
        bytes += chunk.length;
        assert.ok(!(last.slice(-64) + chunk).includes(KEY), "the key is never sent");
        last = chunk;
      }
      return { bytes, end: last.slice(-40) };
    }));
    const growthMb = (residentKb(served.pid).peak - before) / 1024;
    assert.ok(growthMb < 100, `resident memory grew ${growthMb.toFixed(0)} MB (from ${before} kB)`);

    const whole = reads[0] as string;
    const session = JSON.parse(whole);
    assert.equal(session.id, id);
    assert.equal(session.messages.length, messages);
    assert.equal(session.messages[0].content, "Question 0: key [redacted]");
    assert.equal(session.model, "openai/test");
    for (const read of reads.slice(1) as { bytes: number; end: string }[]) {
      assert.equal(read.bytes, whole.length, "each read is the whole session");
      assert.equal(read.end, whole.slice(-40));
    }
  },
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.test(`agent serve: on ${signal} new requests get 503 with Retry-After, the run going ends with its result, and it exits 0`, async () => {
    const words = Array.from({ length: 20 }, (_, i) => `w${i} `);
    // A slow stream: the run is still going when the signal comes.
    await using model = startMockOpenAIServer({
      replies: () => ({ text: words, eventDelayMs: 100 }),
    });
    await using served = await startServe(model, { env: ENV });
    const started = await served.fetch("/v1/runs", {
      method: "POST",
      body: JSON.stringify({ message: "Take your time", stream: true }),
    });
    const events = started.body!.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    while (!seen.includes('"text_delta"')) seen += (await events.read()).value ?? "";

    served.kill(signal);
    let ended = false;
    served.exited.then(() => ended = true);
    while (!/stopping/.test(served.stderr())) {
      assert.ok(!ended, `it ended at once:\n${served.stderr()}`);
      await new Promise((done) => setTimeout(done, 20));
    }
    assert.match(served.stderr(), /new requests get 503; 1 run going may take 5 s to end/);
    for (const [method, path] of [["GET", "/v1/health"], ["POST", "/v1/runs"]]) {
      const refused = await served.fetch(path, {
        method,
        ...(method === "POST" ? { body: '{"message":"One more"}' } : {}),
      });
      assert.equal(refused.status, 503, `${method} ${path}`);
      assert.equal(refused.headers.get("retry-after"), "5");
      const { error } = await refused.json();
      assert.equal(error.code, "closing");
      assert.match(error.message, /shutting down/);
    }

    for (let step = await events.read(); !step.done; step = await events.read()) seen += step.value;
    const result = JSON.parse(/data: (\{"type":"result".*)\n/.exec(seen)![1]);
    assert.equal(result.status, "success");
    assert.equal(result.text, words.join(""));
    assert.equal(await served.exited, 0);
    assert.doesNotMatch(served.stderr(), /cancelling/);
  });
}

Deno.test({
  name:
    "agent serve: on SIGTERM, clients that take nothing of their answers or send their body slowly are cut off after the grace, and it exits 0",
  ignore: Deno.build.os === "windows",
  async fn() {
    // A run whose answer is far more than the sockets between them hold.
    const part = "y".repeat(64 * 1024);
    await using model = startMockOpenAIServer({
      replies: () => ({ text: Array.from({ length: 150 }, () => part) }),
    });
    let id = "";
    await using served = await startServe(model, {
      env: ENV,
      // 16 MB: a session far larger than the sockets hold, too.
      prepare: async (dirs) => void (id = await writeSession(dirs, 160, "x".repeat(100_000))),
    });
    const port = Number(new URL(served.url).port);
    /** A client that sends `head` (and the start of a body, maybe), then reads nothing. */
    const stalled = async (head: string, body = "") => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      await conn.write(new TextEncoder().encode(
        `${head} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n` +
          (body ? `Content-Type: application/json\r\nContent-Length: 100\r\n` : "") +
          `\r\n${body}`,
      ));
      return conn;
    };
    const run = '{"message":"Write a lot","stream":true}';
    using _events = await stalled("POST /v1/runs", run.padEnd(100));
    using _session = await stalled(`GET /v1/sessions/${id}`);
    using slow = await stalled("POST /v1/runs", '{"message":'); // 11 bytes of 100
    while ((await (await served.fetch("/v1/health")).json()).runs.running === 0) {
      await new Promise((done) => setTimeout(done, 50));
    }
    await new Promise((done) => setTimeout(done, 1000)); // the sockets fill up

    served.kill("SIGTERM");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const code = await Promise.race([
      served.exited,
      new Promise((done) => timer = setTimeout(() => done("still running 15 s after"), 15_000)),
    ]);
    clearTimeout(timer);
    assert.equal(code, 0, served.stderr());
    assert.match(
      served.stderr(),
      /closing the connections whose clients did not take their answers/,
    );
    // The body that had not all come when the runs were cancelled is answered 503.
    const answer = new TextDecoder().decode(await new Response(slow.readable).bytes());
    assert.match(answer, /^HTTP\/1\.1 503/);
    assert.match(answer, /"code":"closing".*had not all come \(11 bytes came\)/);
  },
});
