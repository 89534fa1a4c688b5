/**
 * How promptly the agent acts while a huge input is dealt with: Ctrl+C (SIGINT) to the exit of
 * a headless run whose model sent a tool argument of 400 KB, 1 MB or 10 MB without a space,
 * sent as the call arrives and as the next request (the whole call in it) is prepared; and
 * the time `agent serve` takes to answer `/v1/health` while a run's 1 MB message is.
 */

import { join } from "node:path";
import { type MockReply, type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { SUMMARY_SYSTEM_PROMPT } from "../lib/compaction/summary.ts";

const MOD = new URL("../mod.ts", import.meta.url).pathname;

/** `length` lowercase letters without a space. */
function letters(length: number): string {
  const codes = new Uint8Array(length);
  let seed = 15;
  for (let i = 0; i < length; i++) {
    seed = (seed * 1_103_515_245 + 12_345) >>> 0;
    codes[i] = 97 + (seed >>> 16) % 26;
  }
  return new TextDecoder().decode(codes);
}

/** A model playing `script` (summary requests get a short summary). */
function model(script: (body: Record<string, unknown>) => MockReply): MockServer {
  return startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as { role: string; content: unknown }[];
      const summary = messages[0]?.content === SUMMARY_SYSTEM_PROMPT;
      return summary ? { text: "## Goal\nWrite big.txt" } : script(body);
    },
  });
}

async function env(root: string, server: MockServer): Promise<Record<string, string>> {
  for (const dir of ["home", "data", "work"]) await Deno.mkdir(join(root, dir));
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: join(root, "home"),
    AGENT_DATA_DIR: join(root, "data"),
    AGENT_CONFIG_DIR: join(root, "home", "config"),
    OPENAI_API_KEY: "sk-bench",
    OPENAI_BASE_URL: server.url,
    NO_COLOR: "1",
    DENO_DIR: await _denoDir,
  };
}

/** Where this Deno keeps its cache: the children find their modules there. */
const _denoDir: Promise<string> = Deno.env.get("DENO_DIR")
  ? Promise.resolve(Deno.env.get("DENO_DIR")!)
  : new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stderr: "null" }).output()
    .then((output) => JSON.parse(new TextDecoder().decode(output.stdout)).denoDir);

/** Lines of `stream` as they come, to `onLine`; resolves at its end. */
async function lines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void) {
  let pending = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    pending += chunk;
    let end: number;
    while ((end = pending.indexOf("\n")) >= 0) {
      onLine(pending.slice(0, end));
      pending = pending.slice(end + 1);
    }
  }
}

const SIZES = { "400 KB": 400_000, "1 MB": 1_000_000, "10 MB": 10_000_000 };
const WHEN = {
  "as the call arrives": (line: string) => line.startsWith('{"type":"tool_call"'),
  "as the next request is prepared": (line: string) =>
    line.startsWith('{"type":"turn_start","turn":2'),
};

for (const [size, length] of Object.entries(SIZES)) {
  const content = letters(length);
  for (const [when, found] of Object.entries(WHEN)) {
    Deno.bench(`Ctrl+C to exit, ${size} argument, ${when}`, {
      group: `Ctrl+C ${when}`,
      n: 5,
      warmup: 1,
    }, async (b) => {
      const root = await Deno.makeTempDir({ prefix: "agent_bench_interrupt_" });
      const replies: MockReply[] = [
        { toolCalls: [{ name: "write", arguments: { path: "big.txt", content } }] },
        { text: "late", delayMs: 60_000 },
      ];
      await using server = model(() => replies.shift() ?? { text: "done" });
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", MOD, "-m", "openai/test", "--output", "stream-json"]
          .concat(["--sandbox", "off", "--cwd", join(root, "work"), "write big.txt"]),
        env: await env(root, server),
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "null",
      }).spawn();
      const seen = Promise.withResolvers<void>();
      const reading = lines(child.stdout, (line) => found(line) && seen.resolve())
        .then(() => seen.reject(new Error("the run ended before the moment to interrupt it")));
      await seen.promise;
      b.start();
      child.kill("SIGINT");
      const status = await child.status;
      b.end();
      await reading;
      await Deno.remove(root, { recursive: true });
      if (status.code !== 130) throw new Error(`exit code ${status.code}, not 130`);
    });
  }
}

Deno.bench("agent serve: /v1/health while a run's 1 MB message is dealt with", {
  n: 5,
  warmup: 1,
}, async (b) => {
  const root = await Deno.makeTempDir({ prefix: "agent_bench_serve_" });
  await using server = model(() => ({ text: "late", delayMs: 60_000 }));
  const token = crypto.randomUUID();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "serve", "--port", "0", "-m", "openai/test", "--sandbox", "off"],
    env: { ...await env(root, server), AGENT_SERVE_TOKEN: token },
    clearEnv: true,
    cwd: join(root, "work"),
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const listening = Promise.withResolvers<string>();
  const reading = lines(child.stderr, (line) => {
    const url = /serving \S+ on (http:\/\/\S+) /.exec(line)?.[1];
    if (url) listening.resolve(url);
  });
  const url = await listening.promise;
  const authorization = `Bearer ${token}`;
  const huge = await fetch(`${url}/v1/runs`, {
    method: "POST",
    headers: { authorization, "content-type": "application/json" },
    body: JSON.stringify({ message: letters(1_000_000), stream: true }),
  });
  const started = Promise.withResolvers<void>();
  const events = lines(
    huge.body!,
    (line) => line.includes('"type":"turn_start"') && started.resolve(),
  )
    .catch(() => {});
  await started.promise;
  b.start();
  const health = await fetch(`${url}/v1/health`, { headers: { authorization } });
  await health.body?.cancel();
  b.end();
  child.kill("SIGKILL");
  await child.status;
  await Promise.all([reading, events]);
  await Deno.remove(root, { recursive: true });
});
