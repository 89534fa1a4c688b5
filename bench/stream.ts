/**
 * The CLI streaming a long answer: `agent "task"` in text mode, a child process, against the
 * loopback Chat Completions mock streaming 20,000 text deltas (the real SSE format, read through
 * `npm:openai`). The figure is deltas per second from the moment the server receives the request
 * to the moment the whole answer has reached the CLI's stdout (the start of the process is
 * another figure, `bench:cli`), with stdout a pipe (the answer printed once, at the end) and a
 * terminal (`script`'s pseudo-terminal: the answer written as it streams). Beside it, the floor:
 * a bare `fetch` in a child process reading the same stream to its end with the body's default
 * reader. Median and range of {@link RUNS} runs, the readers taking turns.
 *
 * On a busy machine the wall figures move a lot; the CPU the reader spends per delta moves less:
 * with `/usr/bin/time` (Debian package `time`), each reader also runs on a one-delta answer, and
 * the CPU time (user + system) of the 20,000-delta run less that of the one-delta run, per delta,
 * is printed beside. Run with `deno task bench:stream`.
 */

import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { median } from "./stats.ts";

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));
const DELTAS = 20_000;
const RUNS = 9;
const hasScript = await Deno.stat("/usr/bin/script").then(() => true, () => false);
const hasTime = await Deno.stat("/usr/bin/time").then(() => true, () => false);

const deltas = Array.from({ length: DELTAS }, (_, i) => `w${i % 10} `);
const answer = deltas.join("");
/** A task that ends with "once" is answered with one delta. */
const ONCE = "once";
let received = 0;
const server = startMockOpenAIServer({
  replies: (body) => {
    received = performance.now();
    const messages = body.messages as Array<{ role: string; content: unknown }>;
    const task = String(messages.at(-1)?.content ?? "");
    return { text: task.endsWith(ONCE) ? ["w"] : deltas };
  },
});

/** The bare floor: fetch the stream and read it to the end, nothing more. */
const FETCH = `
const response = await fetch(Deno.args[0] + "/chat/completions", {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ model: "bench", messages: [{ role: "user", content: Deno.args[1] }], stream: true }),
});
const reader = response.body.getReader();
const decoder = new TextDecoder();
let events = 0;
while (true) {
  const { done, value } = await reader.read();
  if (done) break;
  events += decoder.decode(value, { stream: true }).split("data: ").length - 1;
}
console.log(String(events));
`;

/** A way of reading the stream, run as a child process. */
interface Reader {
  name: string;
  /** The command for a task, its CPU time written to `timing` when given. */
  command(task: string, timing?: string): string[];
  /** Whether what the child has written so far holds the end of the stream. */
  finished(output: string): boolean;
  /** The least the child writes once it has read the whole stream. */
  writes: number;
}

const dir = await Deno.makeTempDir({ prefix: "agent_bench_stream_" });
const timing = join(dir, "time.txt");
const cli = (task: string) => [
  Deno.execPath(),
  "run",
  "-A",
  MOD,
  "-m",
  "openai/bench",
  "--output",
  "text",
  task,
];
const timed = (command: string[], file?: string) =>
  file ? ["/usr/bin/time", "-f", "%U %S", "-o", file, ...command] : command;
const READERS: Reader[] = [
  {
    name: "agent, stdout a pipe",
    command: (task, file) => timed(cli(task), file),
    finished: (out) => out.includes(answer),
    writes: answer.length,
  },
  ...hasScript
    ? [{
      name: "agent, stdout a terminal",
      command: (task: string, file?: string) => [
        "/usr/bin/script",
        "-qfec",
        timed(cli(task), file).map(_shellWord).join(" "),
        "/dev/null",
      ],
      finished: (out: string) => out.includes(answer.trimEnd()),
      writes: answer.trimEnd().length,
    }]
    : [],
  {
    name: "bare fetch (the floor)",
    command: (task, file) => timed([Deno.execPath(), "eval", FETCH, server.url, task], file),
    finished: (out) => /^\d+\s/.test(out),
    writes: 2,
  },
];

/** Runs a reader once on `task`; its deltas per second, and the CPU seconds it used. */
async function runOnce(reader: Reader, task: string): Promise<{ rate: number; cpu?: number }> {
  received = 0;
  const child = new Deno.Command(reader.command(task, hasTime ? timing : undefined)[0], {
    args: reader.command(task, hasTime ? timing : undefined).slice(1),
    env: {
      OPENAI_API_KEY: "sk-bench",
      OPENAI_BASE_URL: server.url,
      AGENT_DATA_DIR: dir,
      NO_COLOR: "1",
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const decoder = new TextDecoder();
  let output = "";
  let ended: number | undefined;
  const once = task.endsWith(ONCE);
  for await (const bytes of child.stdout) {
    output += decoder.decode(bytes, { stream: true });
    // Looked for only once the answer can be there: the server shares this process.
    if (
      ended === undefined && (once || (output.length >= reader.writes && reader.finished(output)))
    ) {
      ended = performance.now();
    }
  }
  const status = await child.status;
  if (!status.success || ended === undefined || received === 0) {
    throw new Error(`${reader.name} failed (${status.code}):\n${await stderr}`);
  }
  await stderr;
  let cpu: number | undefined;
  if (hasTime) {
    const [user, system] = (await Deno.readTextFile(timing)).trim().split(/\s+/).map(Number);
    cpu = user + system;
  }
  return { rate: DELTAS / ((ended - received) / 1000), cpu };
}

try {
  const rates: number[][] = READERS.map(() => []);
  const cpu: number[][] = READERS.map(() => []);
  for (let i = 0; i <= RUNS; i++) {
    for (const [r, reader] of READERS.entries()) {
      const long = await runOnce(reader, "go");
      const short = hasTime ? await runOnce(reader, `go ${ONCE}`) : undefined;
      if (i === 0) continue; // the first run warms the module cache
      rates[r].push(long.rate);
      if (long.cpu !== undefined && short?.cpu !== undefined) {
        cpu[r].push((long.cpu - short.cpu) / DELTAS * 1e6);
      }
    }
  }
  console.log(
    `${DELTAS.toLocaleString("en-US")} text deltas, from the request to the end on stdout; ` +
      `median (range) of ${RUNS} runs, taking turns\n`,
  );
  const k = (value: number) => `${Math.round(value / 1000)}k`;
  const range = (values: number[], show: (value: number) => string) => {
    const sorted = values.toSorted((a, b) => a - b);
    return `${show(median(sorted))} (${show(sorted[0])}–${show(sorted.at(-1)!)})`;
  };
  for (const [r, reader] of READERS.entries()) {
    const spent = cpu[r].length ? `; CPU ${range(cpu[r], (us) => us.toFixed(1))} µs/delta` : "";
    console.log(`${reader.name.padEnd(26)} ${range(rates[r], k)} deltas/s${spent}`);
  }
  if (!hasScript) console.log("(stdout a terminal needs /usr/bin/script)");
  if (!hasTime) console.log("(the CPU per delta needs /usr/bin/time)");
} finally {
  await server.close();
  await Deno.remove(dir, { recursive: true });
}

function _shellWord(word: string): string {
  return /^[\w./:=@-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
