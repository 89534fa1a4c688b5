/**
 * `agent acp` as an editor drives it, against the same run headless: `deno run -A bench/acp.ts
 * [--runs n] [--turns n] [--profile dir] [--checkout dir]`. The agent is a real child process on stdio, driven by
 * the ACP SDK's client side (`acp.client()` over `acp.ndJsonStream`) in this process; the model is
 * the loopback mock OpenAI server, in a process of its own (this file, run with `--mock`), so
 * that the editor's work never delays an answer. Each figure is printed with its target.
 *
 * - Overhead per turn: the same scripted task of `turns` turns (default 50: a few streamed text
 *   deltas and a `read` of two lines of a small file each, so that no permission is asked, then
 *   the answer) run headless (`agent -p … --output json --sandbox off`, its `durationMs`) and as
 *   one `session/prompt` of `agent acp --sandbox off` (the prompt's round trip as the client sees
 *   it), with the client's file system capability off and on (on: each `read` is also a
 *   `fs/read_text_file` request to the client). Each run is a new process, so that both sides
 *   run as cold as a user's first task does; the three alternate run by run. Overhead per turn =
 *   (median acp − median headless) / turns (target ≤ 1 ms), and the same round by round. Beside
 *   it: the CPU time of the agent's JavaScript thread per turn during the prompt, and the bytes
 *   and messages of protocol per turn, both ways. A second prompt, in a new session of the same
 *   process, shows the agent warm.
 * - Cancel latency: a prompt streaming a long answer slowly (`eventDelayMs`), `session/cancel`
 *   sent after its first chunk; the time until the prompt answers `cancelled` (target ≤ 100 ms).
 * - Session start: `session/new` (the run prepared in the editor's directory), the first of a
 *   process and those after; `session/load` of a saved `turns`-turn session (its replay), in a
 *   new process and again in the same one.
 *
 * `--profile dir` starts every agent child with `--cpu-prof --cpu-prof-dir=dir` (one profile a
 * process, written when it exits); `--checkout dir` runs the agent of another checkout.
 */

import { type Editor, startEditor as startEditorAt } from "./acp_editor.ts";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { median } from "./stats.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    runs: { type: "string", default: "7" },
    turns: { type: "string", default: "50" },
    profile: { type: "string" },
    checkout: { type: "string" },
    mock: { type: "boolean" },
  },
});
const RUNS = Math.max(1, Number(flags.runs));
const TURNS = Math.max(2, Number(flags.turns));
const CANCELS = 10;
const SESSIONS = 10;
const LOADS = 5;
const DELTAS = 5;
const MOD = flags.checkout
  ? join(flags.checkout, "mod.ts")
  : fileURLToPath(new URL("../mod.ts", import.meta.url));
const TASK = "Read notes.txt, two lines at a time";
const SLOW = "Count slowly to 2000";

/** The mock model's answer: the task's turns, or a long answer streamed slowly. */
function _reply(body: Record<string, unknown>) {
  const messages = body.messages as Array<{ role: string; content?: unknown }>;
  const last = messages.findLastIndex((message) => message.role === "user");
  if (JSON.stringify(messages[last]?.content ?? "").includes(SLOW)) {
    return { text: Array.from({ length: 2000 }, (_, i) => `${i} `), eventDelayMs: 20 };
  }
  const turn = messages.slice(last).filter((message) => message.role === "assistant").length;
  const text = Array.from({ length: DELTAS }, (_, i) => `Turn ${turn}, part ${i}. `);
  return turn < TURNS - 1
    ? {
      text,
      toolCalls: [{
        name: "read",
        arguments: { path: "notes.txt", offset: 2 * turn + 1, limit: 2 },
      }],
    }
    : { text: [...text, "Read it all."] };
}

if (flags.mock) {
  // The mock model, in a process of its own (so that the editor's work in this process never
  // delays an answer): prints its URL, then serves until killed.
  console.log(startMockOpenAIServer({ replies: _reply }).url);
  await new Promise(() => {});
}
const mock = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", fileURLToPath(import.meta.url), "--mock", "--turns", String(TURNS)],
  stdin: "null",
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const mockUrl = await _firstLine(mock.stdout);
const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_bench_acp_" }));
const home = join(root, "home");
const cwd = join(root, "work");
for (const dir of [home, cwd]) await Deno.mkdir(dir, { recursive: true });
await Deno.writeTextFile(
  join(cwd, "notes.txt"),
  Array.from({ length: TURNS * 2 }, (_, i) => `line ${i}: ${"x".repeat(40)}`).join("\n"),
);
const env: Record<string, string> = {
  PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
  HOME: home,
  DENO_DIR: await _denoDir(),
  OPENAI_API_KEY: "sk-bench",
  OPENAI_BASE_URL: mockUrl,
  AGENT_DATA_DIR: join(home, "data"),
  AGENT_CONFIG_DIR: join(home, "config"),
  NO_COLOR: "1",
};
const profile = flags.profile ? ["--cpu-prof", `--cpu-prof-dir=${flags.profile}`] : [];
const agentArgs = ["-m", "openai/bench", "--sandbox", "off", "--max-turns", String(TURNS + 10)];

/** The headless run of the task: its `durationMs`. */
async function headless(): Promise<number> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...profile, MOD, ...agentArgs, "--output", "json", "-p", TASK],
    cwd,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  const result = output.code === 0 ? JSON.parse(text) : undefined;
  if (result?.status !== "success" || result.turns !== TURNS) {
    throw new Error(`headless failed (${output.code}):\n${text}${_text(output.stderr)}`);
  }
  return result.durationMs;
}

/** Starts `agent acp` with an editor attached. */
function startEditor(fs: boolean): Promise<Editor> {
  const args = ["run", "-A", ...profile, MOD, "acp", ...agentArgs];
  return startEditorAt({ args, cwd: root, env, fs });
}

const newSession = async (editor: Editor) =>
  (await editor.agent.request("session/new", { cwd, mcpServers: [] })).sessionId;

/** One prompt of the task in a new session: its round trip, and the protocol's bytes. */
async function acpTask(editor: Editor) {
  const sessionId = await newSession(editor);
  const before = { ...editor.bytes };
  const thread = _threadMs(editor.pid);
  const started = performance.now();
  const { stopReason } = await editor.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: TASK }],
  });
  const ms = performance.now() - started;
  const after = _threadMs(editor.pid);
  const [cpuMs, waitMs] = [after.cpu - thread.cpu, after.wait - thread.wait];
  if (stopReason !== "end_turn") throw new Error(`the prompt stopped with ${stopReason}`);
  const reads = editor.updates.get(sessionId)!.filter((u) => u.sessionUpdate === "tool_call");
  if (reads.length !== TURNS - 1) throw new Error(`${reads.length} tool calls, not ${TURNS - 1}`);
  const bytes = editor.bytes.sent - before.sent + editor.bytes.received - before.received;
  const messages = editor.bytes.messages - before.messages;
  return { ms, cpuMs, waitMs, bytes, messages, sessionId };
}

// 1. The task, headless and over ACP, alternating run by run (the first round warms the cache).
const samples = { headless: [] as number[], off: [] as number[], on: [] as number[] };
const warm = { off: [] as number[], on: [] as number[] };
const cpu = { off: [] as number[], on: [] as number[] };
const warmCpu = { off: [] as number[], on: [] as number[] };
const waits = { off: [] as number[], on: [] as number[] };
/** (acp − headless) / turns, round by round. */
const paired = { off: [] as number[], on: [] as number[] };
const bytes = { off: 0, on: 0 };
const messages = { off: 0, on: 0 };
let saved = "";
for (let round = 0; round <= RUNS; round++) {
  const ms = await headless();
  if (round > 0) samples.headless.push(ms);
  for (const fs of ["off", "on"] as const) {
    const editor = await startEditor(fs === "on");
    const first = await acpTask(editor);
    const second = await acpTask(editor);
    await editor.close();
    if (round === 0) continue;
    samples[fs].push(first.ms);
    warm[fs].push(second.ms);
    cpu[fs].push(first.cpuMs / TURNS);
    warmCpu[fs].push(second.cpuMs / TURNS);
    waits[fs].push(first.waitMs / TURNS);
    paired[fs].push((first.ms - ms) / TURNS);
    bytes[fs] = first.bytes;
    messages[fs] = first.messages;
    saved = first.sessionId;
  }
}

// 2. Cancel latency.
const cancels: number[] = [];
{
  const editor = await startEditor(true);
  const sessionId = await newSession(editor);
  for (let i = 0; i < CANCELS; i++) {
    const chunk = editor.nextUpdate(sessionId, "agent_message_chunk");
    const prompt = editor.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: SLOW }],
    });
    await chunk;
    const started = performance.now();
    await editor.agent.notify("session/cancel", { sessionId });
    const { stopReason } = await prompt;
    cancels.push(performance.now() - started);
    if (stopReason !== "cancelled") throw new Error(`the prompt stopped with ${stopReason}`);
  }
  await editor.close();
}

// 3. Session start: new sessions, then loads of a saved one of the task's turns.
const news: number[] = [];
const loads: number[] = [];
let replayed = 0;
{
  const editor = await startEditor(true);
  for (let i = 0; i < SESSIONS; i++) {
    const started = performance.now();
    await newSession(editor);
    news.push(performance.now() - started);
  }
  await editor.close();
}
{
  // In a process of its own, so that the first load is as cold as an editor's first.
  const editor = await startEditor(true);
  for (let i = 0; i < LOADS; i++) {
    editor.updates.delete(saved);
    const started = performance.now();
    await editor.agent.request("session/load", { sessionId: saved, cwd, mcpServers: [] });
    loads.push(performance.now() - started);
    replayed = editor.updates.get(saved)?.length ?? 0;
  }
  await editor.close();
}
mock.kill("SIGKILL");
await mock.status;
await Deno.remove(root, { recursive: true });

const range = (values: number[], digits = 0) =>
  `${median(values).toFixed(digits)} ms [${Math.min(...values).toFixed(digits)}–${
    Math.max(...values).toFixed(digits)
  }]`;
const perTurn = (fs: "off" | "on") => (median(samples[fs]) - median(samples.headless)) / TURNS;
const verdict = (value: number, target: number) => value <= target ? "met" : "MISSED";
const overhead = (fs: "off" | "on") =>
  `${perTurn(fs).toFixed(2)} ms (${verdict(perTurn(fs), 1)}; round by round ` +
  `${range(paired[fs], 2)})`;
const kb = (fs: "off" | "on") =>
  `${(bytes[fs] / TURNS / 1024).toFixed(1)} KiB in ${(messages[fs] / TURNS).toFixed(1)} messages`;
console.log(
  `bench/acp: a ${TURNS}-turn task (${DELTAS} text deltas and a read each turn), ` +
    `median [range] of ${RUNS} runs each, alternating; ${navigator.hardwareConcurrency} cores\n` +
    `  headless durationMs          ${range(samples.headless)}\n` +
    `  acp prompt, client fs off    ${range(samples.off)} (warm: ${range(warm.off)})\n` +
    `  acp prompt, client fs on     ${range(samples.on)} (warm: ${range(warm.on)})\n` +
    `  ACP overhead per turn        target ≤ 1 ms\n` +
    `    client fs off              ${overhead("off")}\n` +
    `    client fs on               ${overhead("on")}\n` +
    `  agent JS thread per turn     on a core: fs off ${range(cpu.off, 2)} ` +
    `(warm: ${range(warmCpu.off, 2)}), fs on ${range(cpu.on, 2)} (warm: ${
      range(warmCpu.on, 2)
    })\n` +
    `   (during the prompt)         waiting for a core: fs off ${range(waits.off, 2)}, ` +
    `fs on ${range(waits.on, 2)}\n` +
    `  protocol per turn            fs off ${kb("off")}, fs on ${kb("on")} (both ways)\n` +
    `  cancel latency               median ${median(cancels).toFixed(1)} ms, max ` +
    `${Math.max(...cancels).toFixed(1)} ms of ${CANCELS} (target ≤ 100 ms: ` +
    `${verdict(Math.max(...cancels), 100)})\n` +
    `  session/new                  first ${news[0].toFixed(0)} ms, then ` +
    `${range(news.slice(1))}\n` +
    `  session/load (${TURNS} turns)     first ${loads[0].toFixed(0)} ms (a new process), then ` +
    `${range(loads.slice(1))}; ${replayed} updates replayed`,
);

/** The first line of a stream; the rest is read and dropped. */
async function _firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const lines = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await lines.read();
    if (done) throw new Error("the mock model did not start");
    text += value;
  }
  (async () => {
    while (!(await lines.read()).done);
  })();
  return text.split("\n")[0];
}

/**
 * The main (JavaScript) thread of a process so far, in ms: its time on a core, and its time
 * ready to run but waiting for one (Linux's schedstat).
 */
function _threadMs(pid: number): { cpu: number; wait: number } {
  const [cpu, wait] = Deno.readTextFileSync(`/proc/${pid}/task/${pid}/schedstat`).split(" ");
  return { cpu: Number(cpu) / 1e6, wait: Number(wait) / 1e6 };
}

function _text(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

/** The Deno cache this benchmark runs from, so that the children load their modules from it. */
async function _denoDir(): Promise<string> {
  const info = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  return (JSON.parse(_text(info.stdout)) as { denoDir: string }).denoDir;
}
