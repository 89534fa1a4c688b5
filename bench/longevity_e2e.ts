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
  /** The project: a real directory, with `src/main.ts` for the model to read. */
  cwd: string;
  /** An empty, private directory for the agent's settings (`AGENT_CONFIG_DIR`). */
  configDir: string;
}

/**
 * Runs through `agent serve`, one service per data directory, started as users start it: `n`
 * rounds (at least 30, then until `budgetMs`), each a run on every service, the order turned
 * each round; after 5 rounds not counted. Each run's wall time, service by service.
 */
export async function serviceRuns(
  n: number,
  places: EndToEndPlaces,
  options: { budgetMs?: number; log: (text: string) => void },
): Promise<number[][]> {
  const token = newServiceToken();
  return await _withModel(async (env) => {
    const services = await Promise.all(places.dataDirs.map(async (dataDir) => {
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", _MOD, "serve", "--port", "0", ..._FLAGS],
        cwd: places.cwd,
        env: { ...env, ..._env(places, dataDir), AGENT_SERVE_TOKEN: token },
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).spawn();
      const [url] = await _watchFor(child.stderr, /serving \S+ on (http:\/\/\S+) /);
      return { child, url };
    }));
    try {
      const runOn = (url: string) => async () => {
        const response = await fetch(`${url}/v1/runs`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body: JSON.stringify({ message: prompt(), complete: true }),
        });
        const body = await response.json();
        if (body.run?.status !== "success") {
          throw new Error(`a run through the service went wrong: ${JSON.stringify(body)}`);
        }
      };
      return await _alternated(n, services.map(({ url }) => runOn(url)), {
        ...options,
        what: "rounds through the service",
      });
    } finally {
      for (const { child } of services) {
        child.kill("SIGINT");
        await child.status;
      }
    }
  });
}

/**
 * One-shot CLI runs (`agent -m openai/bench "<prompt>"`), a process each, one per data
 * directory each round: `n` rounds (at least 5, then until `budgetMs`), the order turned each
 * round, after one round not counted. Each run's wall time, from the process's start to its
 * exit, data directory by data directory.
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
      }).output();
      const status = output.code === 0 &&
        JSON.parse(new TextDecoder().decode(output.stdout)).status;
      if (status !== "success") {
        throw new Error(
          `a CLI run went wrong (exit ${output.code}):\n${new TextDecoder().decode(output.stderr)}`,
        );
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

/** Reads `stream` until `pattern` matches, then drains the rest; the match's groups. */
async function _watchFor(stream: ReadableStream<Uint8Array>, pattern: RegExp): Promise<string[]> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (true) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the service did not start:\n${text}`);
    text += value;
    const found = pattern.exec(text);
    if (found) {
      // Keep reading, so that the child never blocks on a full pipe.
      (async () => {
        while (!(await reader.read()).done);
      })();
      return found.slice(1);
    }
  }
}
