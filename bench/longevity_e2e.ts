/**
 * The runs of `bench/longevity.ts` end to end, as users see them: through `agent serve` (each
 * run a `POST /v1/runs`) and as one-shot CLI processes, each against a data directory of its
 * own, alternated. The model is the loopback mock server speaking OpenAI's streaming format: it
 * calls `read` once, then answers at once, so that what is timed is the agent's own work.
 */

import { fileURLToPath } from "node:url";
import { newServiceToken } from "../lib/service/mod.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { answer, prompt } from "./longevity_workload.ts";

const _MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));

/** Where the runs run: the data directories (`AGENT_DATA_DIR`) in turn, in the project `cwd`. */
export interface EndToEndPlaces {
  /** The data directories; each run's times come back in this order. */
  dataDirs: readonly string[];
  /** The project: a real directory (its real path), with `src/main.ts` for the model to read. */
  cwd: string;
  /** A private directory for the agent's settings (`AGENT_CONFIG_DIR`), the same for all. */
  configDir: string;
}

/** How long a service may take to start, a run through it, and a CLI process. */
const _START_MS = 60_000;
const _RUN_MS = 60_000;
const _CLI_MS = 120_000;

/**
 * Runs through `agent serve`, one service per data directory, started as users start it: `n`
 * rounds (at least 30, then until `budgetMs`), each a run on every service, the order turned
 * each round; after 5 rounds not counted. Each run's wall time, service by service. A service
 * that says anything before it serves (memory off, say), a run that does not succeed or whose
 * run loop memory did not archive, ends the benchmark with what it said; the services are
 * stopped whatever happens.
 */
export async function serviceRuns(
  n: number,
  places: EndToEndPlaces,
  options: { budgetMs?: number; log: (text: string) => void },
): Promise<number[][]> {
  const token = newServiceToken();
  return await _withModel(async (env) => {
    const children: Deno.ChildProcess[] = [];
    try {
      const urls: string[] = [];
      for (const dataDir of places.dataDirs) {
        const child = new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", _MOD, "serve", "--port", "0", ..._FLAGS],
          cwd: places.cwd,
          env: { ...env, ..._env(places, dataDir), AGENT_SERVE_TOKEN: token },
          stdin: "null",
          stdout: "null",
          stderr: "piped",
        }).spawn();
        children.push(child);
        const { groups, before } = await _watchFor(child.stderr, /serving \S+ on (http:\/\/\S+) /);
        if (/^agent: (?!serving)/m.test(before)) {
          throw new Error(`the service of ${dataDir} said, as it started:\n${before}`);
        }
        urls.push(groups[0]);
      }
      const runOn = (url: string) => async () => {
        const response = await fetch(`${url}/v1/runs`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body: JSON.stringify({ message: prompt(), complete: true }),
          signal: AbortSignal.timeout(_RUN_MS),
        });
        const body = await response.json();
        if (body.run?.status !== "success" || body.run.archiveError !== undefined) {
          throw new Error(`a run through the service went wrong: ${JSON.stringify(body)}`);
        }
      };
      return await _alternated(n, urls.map(runOn), {
        ...options,
        what: "rounds through the service",
      });
    } finally {
      await Promise.all(children.map(_stop));
    }
  });
}

/**
 * One-shot CLI runs (`agent -m openai/bench --sandbox off --output json "<prompt>"`), a
 * process each, one per data directory each round: `n` rounds (at least 5, then until
 * `budgetMs`), the order turned each round, after one round not counted. Each run's wall time,
 * from the process's start to its exit, data directory by data directory. A run that fails, or
 * says anything on stderr but its summary (memory off, a run not archived), ends the benchmark.
 */
export async function cliRuns(
  n: number,
  places: EndToEndPlaces,
  options: { budgetMs?: number; log: (text: string) => void },
): Promise<number[][]> {
  return await _withModel(async (env) => {
    const runIn = (dataDir: string) => async () => {
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", _MOD, ..._FLAGS, "--output", "json", prompt()],
        cwd: places.cwd,
        env: { ...env, ..._env(places, dataDir) },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(_CLI_MS),
      }).output();
      const stderr = new TextDecoder().decode(output.stderr);
      const status = output.code === 0 &&
        JSON.parse(new TextDecoder().decode(output.stdout)).status;
      if (status !== "success" || /^agent: /m.test(stderr)) {
        throw new Error(`a CLI run in ${dataDir} went wrong (exit ${output.code}):\n${stderr}`);
      }
    };
    return await _alternated(n, places.dataDirs.map(runIn), {
      ...options,
      warmup: 1,
      least: 5,
      what: "rounds of CLI runs",
    });
  });
}

/** The model and the tools' sandbox: the same for every run. */
const _FLAGS = ["-m", "openai/bench", "--sandbox", "off"];

function _env(places: EndToEndPlaces, dataDir: string): Record<string, string> {
  return { AGENT_DATA_DIR: dataDir, AGENT_CONFIG_DIR: places.configDir, NO_COLOR: "1" };
}

/** Runs `work` with the mock model up; gives it the variables that point the agent there. */
async function _withModel<T>(work: (env: Record<string, string>) => Promise<T>): Promise<T> {
  const model = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string }>;
      return messages.some((message) => message.role === "tool")
        ? { text: answer() }
        : { toolCalls: [{ name: "read", arguments: { path: "src/main.ts" } }] };
    },
  });
  try {
    return await work({ OPENAI_API_KEY: "sk-bench", OPENAI_BASE_URL: model.url });
  } finally {
    await model.close();
  }
}

/**
 * `n` rounds of each of `works` in turn (the order turned each round), after `warmup` rounds
 * not counted; at least `least` rounds, then until `budgetMs`. The times, work by work.
 */
async function _alternated(
  n: number,
  works: ReadonlyArray<() => Promise<void>>,
  options: {
    budgetMs?: number;
    warmup?: number;
    least?: number;
    what: string;
    log: (text: string) => void;
  },
): Promise<number[][]> {
  const { budgetMs = Infinity, warmup = 5, least = 30, what, log } = options;
  const times = works.map((): number[] => []);
  let begun = performance.now();
  for (let round = -warmup; round < n; round++) {
    if (round === 0) begun = performance.now();
    for (let k = 0; k < works.length; k++) {
      const i = (Math.abs(round) + k) % works.length;
      const start = performance.now();
      await works[i]();
      if (round >= 0) times[i].push(performance.now() - start);
    }
    if (round >= 0 && (round + 1) % 50 === 0) {
      log(`  ${round + 1} ${what}, ${((performance.now() - begun) / 1000).toFixed(1)} s`);
    }
    if (round >= least - 1 && performance.now() - begun > budgetMs) break;
  }
  return times;
}

/**
 * Reads `stream` until `pattern` matches (within {@link _START_MS}), then drains the rest: the
 * match's groups, and the lines before the one it matched in.
 */
async function _watchFor(
  stream: ReadableStream<Uint8Array>,
  pattern: RegExp,
): Promise<{ groups: string[]; before: string }> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  const timer = setTimeout(() => reader.cancel().catch(() => {}), _START_MS);
  let text = "";
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the service did not start:\n${text}`);
      text += value;
      const found = pattern.exec(text);
      if (found) {
        // Keep reading, so that the child never blocks on a full pipe.
        (async () => {
          while (!(await reader.read()).done);
        })().catch(() => {});
        // The lines before the one that matched.
        const before = text.slice(0, text.lastIndexOf("\n", found.index) + 1);
        return { groups: found.slice(1), before };
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Stops a service as Ctrl+C does; kills it if it is not gone 10 s later. Never throws. */
async function _stop(child: Deno.ChildProcess): Promise<void> {
  const signal = (name: Deno.Signal) => {
    try {
      child.kill(name);
    } catch {
      // Gone already.
    }
  };
  signal("SIGINT");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise((resolve) => timer = setTimeout(() => resolve("late"), 10_000));
  if (await Promise.race([child.status, late]) === "late") signal("SIGKILL");
  clearTimeout(timer);
  await child.status;
}
