/**
 * The agent as an HTTP service under load: `deno run -A bench/service.ts [runs] [turns] [delayMs]`.
 *
 * `agent serve` runs as a child process, as users start it; the mock model answers from a
 * process of its own after `delayMs` (default 50 ms); this process is the clients. Each run has
 * `turns` model calls (default 10): `read` of a small file each turn, then the answer.
 *
 * - Wall time of `runs` runs at once (default 100), each through `POST /v1/runs` answering
 *   JSON, against one run alone. The two alternate, five rounds, so that drift in the
 *   machine's speed hits both alike; the ratio is the median of the rounds' ratios
 *   (target ≤ 1.3×). The service's CPU time per model turn (all its threads; target ≤ 0.3 ms)
 *   shows where the time goes.
 * - Its resident memory once idle (target ≤ 120 MiB): after it started, and after the load
 *   ended, once the garbage of the load is collected (as a service left alone collects it).
 * - The same with the service in this process and a model that costs nothing but its 50 ms
 *   (sessions and memory on files as `agent serve` keeps them): what the service, the loop,
 *   the tool and the stores cost, without the HTTP client of the provider. And the floor of
 *   that client: CPU per bare `fetch` of one mock answer.
 * - Memory per active run: a second service, started with the V8 inspector so that its
 *   garbage can be collected before each reading, holds `runs` runs open in their last model
 *   call; its JS heap and resident memory then, less when idle, divided by `runs`.
 * - A body far past the limit: how much of a chunked 400 MiB body the service took before its
 *   413, and how much its peak resident memory grew meanwhile.
 *
 * Every request carries the service's bearer token, as its clients' do.
 */

import process from "node:process";
import { fileURLToPath } from "node:url";
import { createAgentHandler, newServiceToken } from "../lib/service/mod.ts";
import { createReadTool } from "../tools/mod.ts";
import { fileSessionStore } from "../lib/session/mod.ts";
import type { Model } from "../mod.ts";
import { openMemory } from "../lib/memory/mod.ts";
import { median } from "./stats.ts";

const RUNS = Number(Deno.args[0] ?? 100);
const TURNS = Number(Deno.args[1] ?? 10);
const DELAY_MS = Number(Deno.args[2] ?? 50);
const ROUNDS = 5;
const root = fileURLToPath(new URL("..", import.meta.url));
const TOKEN = newServiceToken();
const authorization = `Bearer ${TOKEN}`;

/** Reads a stream until `pattern` matches; gives its groups. */
async function watchFor(
  stream: ReadableStream<Uint8Array>,
  pattern: RegExp,
): Promise<string[]> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (true) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`not started:\n${text}`);
    text += value;
    const found = pattern.exec(text);
    if (found) {
      // Keep draining, so that the child never blocks on a full pipe.
      (async () => {
        while (!(await reader.read()).done);
      })();
      return found.slice(1);
    }
  }
}

const mock = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", `${root}bench/service_mock.ts`, String(TURNS), String(DELAY_MS)],
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const [mockUrl] = await watchFor(mock.stdout, /^(http\S+)\n/);
const workspace = await Deno.makeTempDir({ prefix: "bench_service_" });
await Deno.writeTextFile(`${workspace}/notes.txt`, "Ship on Friday.\n");

/** Starts `agent serve`; gives its pid, URL and, with `inspect`, its inspector's URL. */
async function serve(inspect = false) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      ...(inspect ? ["--inspect=127.0.0.1:0"] : []),
      `${root}mod.ts`,
      "serve",
      "--port",
      "0",
      "--max-runs",
      String(RUNS),
      "-m",
      "openai/bench",
      "--sandbox",
      "off",
    ],
    cwd: workspace,
    env: {
      OPENAI_API_KEY: "sk-bench",
      OPENAI_BASE_URL: mockUrl,
      AGENT_DATA_DIR: await Deno.makeTempDir({ prefix: "bench_service_data_" }),
      AGENT_CONFIG_DIR: await Deno.makeTempDir({ prefix: "bench_service_config_" }),
      AGENT_SERVE_TOKEN: TOKEN,
      NO_COLOR: "1",
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const [inspector, url] = await watchFor(
    child.stderr,
    inspect
      ? /(ws:\/\/\S+)[\s\S]*serving \S+ on (http:\/\/\S+) /
      : /()serving \S+ on (http:\/\/\S+) /,
  );
  return { child, url, inspector };
}

async function run(url: string, message: string): Promise<void> {
  const response = await fetch(`${url}/v1/runs`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization },
    body: JSON.stringify({ message, complete: true }),
  });
  const { run } = await response.json();
  if (run?.status !== "success" || run.result.turns !== TURNS) {
    throw new Error(`a run went wrong: ${JSON.stringify(run)}`);
  }
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/** CPU time a process has used, in ms (user + system, all its threads). */
function cpuMs(pid: number): number {
  const fields = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function rssKb(pid: number, field = "VmRSS"): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]);
}

/**
 * Sends a chunked body of up to 400 MiB to `POST /v1/runs` until the service answers; gives the
 * MiB sent, the answer's status line, and how much the service's peak resident memory grew.
 */
async function oversized(url: string, pid: number) {
  const before = rssKb(pid, "VmHWM");
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(url).port) });
  const writeAll = async (bytes: Uint8Array) => {
    for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
  };
  const encoder = new TextEncoder();
  await writeAll(encoder.encode(
    `POST /v1/runs HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${authorization}\r\n` +
      "content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
  ));
  const chunk = encoder.encode(`100000\r\n${" ".repeat(0x100000)}\r\n`);
  let answered = false;
  let sentMiB = 0;
  const sending = (async () => {
    while (!answered && sentMiB < 400) {
      await writeAll(chunk);
      sentMiB++;
    }
    if (!answered) await writeAll(encoder.encode("0\r\n\r\n"));
  })().catch(() => {});
  const buffer = new Uint8Array(1024);
  const read = await conn.read(buffer);
  answered = true;
  await sending;
  conn.close();
  const status = new TextDecoder().decode(buffer.subarray(0, read ?? 0)).split("\r\n")[0];
  return { sentMiB, status, grownMiB: (rssKb(pid, "VmHWM") - before) / 1024 };
}

const many = (url: string, label: string) =>
  Promise.all(Array.from({ length: RUNS }, (_, k) => run(url, `${label} ${k}`)));

/**
 * The service's resident memory once it is idle: read every half second until it has not
 * fallen for 20 seconds (V8 gives back the memory of a load's garbage some seconds after the
 * load ended), at most `maxMs`; in MiB.
 */
async function idleRssMiB(pid: number, maxMs = 60_000): Promise<number> {
  let lowest = rssKb(pid);
  let since = performance.now();
  for (const started = performance.now(); performance.now() - started < maxMs;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = rssKb(pid);
    if (now < lowest) [lowest, since] = [now, performance.now()];
    else if (performance.now() - since >= 20_000) break;
  }
  return lowest / 1024;
}

// Wall time.
const timing = await serve();
const url = timing.url;
const startRss = await idleRssMiB(timing.child.pid, 15_000);
for (let i = 0; i < 3; i++) await many(url, `warm-up ${i}`);
const single: number[] = [];
const all: number[] = [];
const cpu = { agent: 0, mock: 0 };
for (let round = 0; round < ROUNDS; round++) {
  single.push(await timed(() => run(url, `single ${round}`)));
  const before = { agent: cpuMs(timing.child.pid), mock: cpuMs(mock.pid) };
  all.push(await timed(() => many(url, `many ${round}`)));
  cpu.agent += cpuMs(timing.child.pid) - before.agent;
  cpu.mock += cpuMs(mock.pid) - before.mock;
}
const loadedRss = rssKb(timing.child.pid) / 1024;
const afterRss = await idleRssMiB(timing.child.pid);
const refused = await oversized(url, timing.child.pid);
timing.child.kill("SIGINT");
await timing.child.status;
const ratio = median(all.map((wall, round) => wall / single[round]));
const turns = ROUNDS * RUNS * TURNS;

// The service alone: in this process, a model that only waits.
const waiting: Model = {
  provider: "bench",
  id: "waiting",
  async *stream(request) {
    await new Promise((resolve) => setTimeout(resolve, DELAY_MS));
    const done = request.messages.filter((message) => message.role === "tool").length;
    const usage = { inputTokens: 100, outputTokens: 10 };
    if (done + 1 >= TURNS) {
      yield { type: "text_delta", text: "finished" };
      yield { type: "finish", reason: "stop", usage };
      return;
    }
    const input = { path: "notes.txt", limit: done + 1 };
    yield { type: "tool_call", call: { type: "tool_call", id: `c${done}`, name: "read", input } };
    yield { type: "finish", reason: "tool_calls", usage };
  },
};
const local = createAgentHandler({
  model: waiting,
  token: TOKEN,
  tools: [createReadTool()],
  cwd: workspace,
  sessions: fileSessionStore({ dir: await Deno.makeTempDir({ prefix: "bench_service_" }) }),
  memory: await openMemory({
    path: `${await Deno.makeTempDir({ prefix: "bench_service_" })}/m.db`,
  }),
  maxConcurrentRuns: RUNS,
});
const localRun = async (message: string) => {
  const response = await local(
    new Request("http://localhost/v1/runs", {
      method: "POST",
      headers: { "content-type": "application/json", authorization },
      body: JSON.stringify({ message, complete: true }),
    }),
  );
  if ((await response.json()).run?.result?.turns !== TURNS) throw new Error("a run went wrong");
};
const localMany = (label: string) =>
  Promise.all(Array.from({ length: RUNS }, (_, k) => localRun(`${label} ${k}`)));
for (let i = 0; i < 3; i++) await localMany(`warm-up ${i}`);
const localSingle: number[] = [];
const localAll: number[] = [];
let localCpu = 0;
for (let round = 0; round < ROUNDS; round++) {
  localSingle.push(await timed(() => localRun(`single ${round}`)));
  const before = process.cpuUsage();
  localAll.push(await timed(() => localMany(`many ${round}`)));
  const used = process.cpuUsage(before);
  localCpu += (used.user + used.system) / 1000;
}
await local.close();
const localRatio = median(localAll.map((wall, round) => wall / localSingle[round]));

// The floor of the provider's HTTP client: a bare fetch of one mock answer.
const answer = JSON.stringify({
  model: "bench",
  stream: true,
  messages: [{ role: "user", content: "single" }],
});
const fetchOnce = async () => {
  const response = await fetch(`${mockUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-bench" },
    body: answer,
  });
  await response.text();
};
await Promise.all(Array.from({ length: RUNS }, fetchOnce));
const fetchBefore = process.cpuUsage();
for (let i = 0; i < TURNS; i++) await Promise.all(Array.from({ length: RUNS }, fetchOnce));
const fetchUsed = process.cpuUsage(fetchBefore);
const fetchCpu = (fetchUsed.user + fetchUsed.system) / 1000 / (RUNS * TURNS);

// Memory, in a service whose garbage can be collected on demand.
const probe = await serve(true);
const inspector = new WebSocket(probe.inspector);
await new Promise((resolve) => inspector.onopen = resolve);
let calls = 0;
const answers = new Map<number, (result: { result?: { value?: unknown } }) => void>();
inspector.onmessage = (message) => {
  const { id, result } = JSON.parse(message.data);
  answers.get(id)?.(result);
};
const call = (method: string, params = {}) =>
  new Promise<{ result?: { value?: unknown } }>((resolve) => {
    answers.set(++calls, resolve);
    inspector.send(JSON.stringify({ id: calls, method, params }));
  });
const memory = async () => {
  await call("HeapProfiler.collectGarbage");
  const { result } = await call("Runtime.evaluate", {
    expression: "Deno.memoryUsage().heapUsed",
    returnByValue: true,
  });
  return { heapKb: Number(result?.value) / 1024, rssKb: rssKb(probe.child.pid) };
};
await many(probe.url, "warm-up");
const idle = await memory();
const held = Array.from({ length: RUNS }, (_, k) => run(probe.url, `hold ${k}`));
// Every run reaches its last model call, which the mock holds for 4 s.
await new Promise((resolve) => setTimeout(resolve, TURNS * (DELAY_MS + 30) + 1_000));
const active = await memory();
const health = await (await fetch(`${probe.url}/v1/health`, { headers: { authorization } }))
  .json();
await Promise.all(held);
inspector.close();
probe.child.kill("SIGINT");
await probe.child.status;
mock.kill("SIGKILL");
await mock.status;

const ms = (value: number) => `${value.toFixed(0)} ms`;
console.log(
  `bench/service: ${RUNS} runs of ${TURNS} turns, mock model answering in ${DELAY_MS} ms, ` +
    `${navigator.hardwareConcurrency} cores\n` +
    `  one run alone                ${ms(median(single))} (median of ${ROUNDS})\n` +
    `  ${RUNS} runs at once             ${ms(median(all))} (median of ${ROUNDS})\n` +
    `  ratio                        ${ratio.toFixed(2)}× (median of the rounds; target ≤ 1.3×)\n` +
    `  CPU per model turn           service ${(cpu.agent / turns).toFixed(2)} ms ` +
    `(target ≤ 0.3 ms), mock model ${(cpu.mock / turns).toFixed(2)} ms\n` +
    `  idle resident memory         ${startRss.toFixed(0)} MiB after start, ` +
    `${afterRss.toFixed(0)} MiB once idle after the load (target ≤ 120 MiB; ` +
    `${loadedRss.toFixed(0)} MiB as the load ended)\n` +
    `  the service alone            ${ms(median(localSingle))} / ${ms(median(localAll))}: ` +
    `${localRatio.toFixed(2)}×, ${(localCpu / turns).toFixed(2)} ms CPU per turn ` +
    `(in process, a model that only waits)\n` +
    `  a bare fetch of one answer   ${fetchCpu.toFixed(2)} ms CPU (the HTTP client's floor)\n` +
    `  memory per active run        ` +
    `${((active.heapKb - idle.heapKb) / RUNS).toFixed(0)} KiB of JS heap, ` +
    `${((active.rssKb - idle.rssKb) / RUNS).toFixed(0)} KiB resident ` +
    `(${health.runs.running} runs active; idle service: ` +
    `${(idle.heapKb / 1024).toFixed(1)} MiB heap, ${
      (idle.rssKb / 1024).toFixed(1)
    } MiB resident)\n` +
    `  a chunked 400 MiB body       ${refused.status} after ${refused.sentMiB} MiB sent; ` +
    `peak resident memory +${refused.grownMiB.toFixed(1)} MiB (limit 2 MiB)`,
);
