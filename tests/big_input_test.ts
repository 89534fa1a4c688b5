/**
 * Input that could freeze the agent, through the real CLI and `agent serve`: a model sending
 * a tool argument of 400 KB and of 10 MB without a space, Ctrl+C while such an input is being
 * dealt with, and the service answering others while one run's huge message is. Every process
 * gets a HOME, data directory and working directory of its own, removed afterwards.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { SUMMARY_SYSTEM_PROMPT } from "../lib/compaction/summary.ts";
import { type MockReply, type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { serveDirs, startServe } from "./serve_support.ts";
import { denoDir, MOD, Terminal } from "./terminal_support.ts";

/** `length` lowercase letters without a space, the same ones on every run. */
function letters(length: number): string {
  const codes = new Uint8Array(length);
  let seed = 15;
  for (let i = 0; i < length; i++) {
    seed = (seed * 1_103_515_245 + 12_345) >>> 0;
    codes[i] = 97 + (seed >>> 16) % 26;
  }
  return new TextDecoder().decode(codes);
}

/** A model playing `script`, and answering every summary request with a short summary. */
function model(script: (body: Record<string, unknown>) => MockReply): MockServer {
  return startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as { role: string; content: unknown }[];
      const summary = messages[0]?.role === "system" &&
        messages[0].content === SUMMARY_SYSTEM_PROMPT;
      return summary ? { text: "## Goal\nWrite big.txt" } : script(body);
    },
  });
}

/** Replies in order, then "done". */
function inOrder(...replies: MockReply[]): (body: Record<string, unknown>) => MockReply {
  return () => replies.shift() ?? { text: "done" };
}

/** A model asking to write `content` to big.txt, then saying `then`. */
function writesBig(content: string, then: MockReply): MockServer {
  return model(inOrder({
    toolCalls: [{ name: "write", arguments: { path: "big.txt", content } }],
  }, then));
}

/** A directory for one process (home, data, work), removed on dispose. */
async function processDirs() {
  const dirs = await serveDirs();
  return {
    ...dirs,
    data: dirs.dataDir,
    work: dirs.cwd,
    async [Symbol.asyncDispose]() {
      await Deno.remove(dirs.root, { recursive: true });
    },
  };
}

async function processEnv(
  dirs: { home: string; data: string },
  server: { url: string },
): Promise<Record<string, string>> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: dirs.home,
    DENO_DIR: await denoDir(),
    AGENT_DATA_DIR: dirs.data,
    AGENT_CONFIG_DIR: join(dirs.home, "config"),
    OPENAI_API_KEY: "sk-big-input-test",
    OPENAI_BASE_URL: server.url,
    NO_COLOR: "1",
  };
}

/** A headless CLI run printing its events, read line by line as they come. */
interface CliRun extends AsyncDisposable {
  readonly child: Deno.ChildProcess;
  /** The events printed so far. */
  readonly events: { type: string; [key: string]: unknown }[];
  /** Resolves with the first event `found` accepts (or rejects when the output ends). */
  waitFor(found: (event: { type: string; [key: string]: unknown }) => boolean): Promise<void>;
  /** The exit code, or undefined when the process has not ended after `ms`. */
  exitWithin(ms: number): Promise<number | undefined>;
  stderr(): string;
}

async function startCli(
  server: { url: string },
  dirs: { home: string; data: string; work: string },
) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "-m", "openai/test", "--output", "stream-json", "--sandbox", "off"]
      .concat(["--cwd", dirs.work, "write big.txt"]),
    env: await processEnv(dirs, server),
    clearEnv: true,
    cwd: dirs.work,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const events: CliRun["events"] = [];
  const waiters: { found: (event: CliRun["events"][number]) => boolean; done: () => void }[] = [];
  let stderr = "";
  const reading = (async () => {
    let pending = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      pending += chunk;
      let end: number;
      while ((end = pending.indexOf("\n")) >= 0) {
        const event = JSON.parse(pending.slice(0, end));
        pending = pending.slice(end + 1);
        events.push(event);
        for (const waiter of waiters.filter((waiter) => waiter.found(event))) waiter.done();
      }
    }
  })();
  const readingErr = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) stderr += chunk;
  })();
  const run: CliRun = {
    child,
    events,
    waitFor(found) {
      if (events.some(found)) return Promise.resolve();
      const { promise, resolve, reject } = Promise.withResolvers<void>();
      waiters.push({ found, done: resolve });
      reading.then(() => reject(new Error(`the output ended first:\n${stderr}`)));
      return promise;
    },
    async exitWithin(ms) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<undefined>((resolve) =>
        timer = setTimeout(() => resolve(undefined), ms)
      );
      const status = await Promise.race([child.status, late]);
      clearTimeout(timer);
      return status?.code;
    },
    stderr: () => stderr,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGKILL");
      } catch { /* it has ended */ }
      await child.status;
      await reading.catch(() => {});
      await readingErr;
    },
  };
  return run;
}

/** What the run's result event says. */
function resultOf(run: CliRun): Record<string, unknown> {
  const result = run.events.find((event) => event.type === "result");
  assert.ok(result, `no result event:\n${run.stderr()}`);
  return result;
}

// The deadlines below are many times what these runs take (well under two seconds each); a run
// that counts tokens in time quadratic in a word's length takes minutes, or hours, to pass them.

Deno.test("big input: a 400 KB tool argument without a space is written and the run goes on", async () => {
  await using dirs = await processDirs();
  const content = letters(400_000);
  await using server = writesBig(content, { text: "Written." });
  await using run = await startCli(server, dirs);
  const code = await run.exitWithin(30_000);
  assert.equal(code, 0, `the run did not end in 30 s:\n${run.stderr()}`);
  assert.equal(resultOf(run).status, "success");
  assert.equal(resultOf(run).text, "Written.");
  assert.equal(await Deno.readTextFile(join(dirs.work, "big.txt")), content);
  // The model got the whole call back, with the tool's answer.
  assert.equal(server.requests.length, 2);
  assert.ok(JSON.stringify(server.requests[1].body).includes(content));
});

Deno.test("big input: a 10 MB tool argument without a space is written and the run goes on", async () => {
  await using dirs = await processDirs();
  const content = letters(10_000_000);
  await using server = writesBig(content, { text: "Written." });
  await using run = await startCli(server, dirs);
  const code = await run.exitWithin(120_000);
  assert.equal(code, 0, `the run did not end in 120 s:\n${run.stderr()}`);
  assert.equal(resultOf(run).status, "success");
  assert.equal(resultOf(run).text, "Written.");
  assert.equal((await Deno.stat(join(dirs.work, "big.txt"))).size, 10_000_000);
  // Far past the context window: compaction summarized what it could, and said so.
  const compaction = run.events.find((event) => event.type === "compaction");
  assert.ok(compaction && (compaction.tokensBefore as number) > 1_000_000);
});

/**
 * A loopback model that streams a call writing `content` to big.txt in pieces of `size`
 * characters, each piece naming the tool again (as some servers do), then answers "Written.".
 */
function piecemealModel(content: string, size: number) {
  const args = JSON.stringify({ path: "big.txt", content });
  const encoder = new TextEncoder();
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    encoder.encode(
      `data: ${
        JSON.stringify({
          id: "chatcmpl-1",
          object: "chat.completion.chunk",
          created: 0,
          model: "test",
          choices: [{ index: 0, delta, finish_reason: finish }],
        })
      }\n\n`,
    );
  let requests = 0;
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    await request.body?.cancel();
    const first = requests++ === 0;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        if (first) {
          const call = { index: 0, id: "call_1", type: "function" };
          controller.enqueue(chunk({
            role: "assistant",
            tool_calls: [{ ...call, function: { name: "write", arguments: "" } }],
          }));
          for (let at = 0; at < args.length; at += size) {
            const piece = { name: "write", arguments: args.slice(at, at + size) };
            controller.enqueue(chunk({ tool_calls: [{ index: 0, function: piece }] }));
          }
          controller.enqueue(chunk({}, "tool_calls"));
        } else {
          controller.enqueue(chunk({ role: "assistant", content: "Written." }));
          controller.enqueue(chunk({}, "stop"));
        }
        controller.enqueue(encoder.encode("data: [DONE]\n\n"));
        controller.close();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/v1`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

Deno.test("big input: a 400 KB argument streamed in 200,000 pieces, each naming the tool, is taken whole", async () => {
  await using dirs = await processDirs();
  const content = letters(400_000);
  await using server = piecemealModel(content, 2);
  await using run = await startCli(server, dirs);
  const code = await run.exitWithin(60_000);
  assert.equal(code, 0, `the run did not end in 60 s:\n${run.stderr()}`);
  assert.equal(resultOf(run).text, "Written.");
  // One call, not a call per piece: the pieces were joined.
  assert.equal(run.events.filter((event) => event.type === "tool_call").length, 1);
  assert.equal(await Deno.readTextFile(join(dirs.work, "big.txt")), content);
});

Deno.test("big input: Ctrl+C ends a headless run busy with a huge input, exit code 130", async () => {
  await using dirs = await processDirs();
  // The model would answer only after two minutes: the run ends well before, on Ctrl+C.
  await using server = writesBig(letters(1_000_000), { text: "late", delayMs: 120_000 });
  await using run = await startCli(server, dirs);
  // The tool has written the file; the next request, with the whole call in it, is on its way.
  await run.waitFor((event) => event.type === "turn_start" && event.turn === 2);
  run.child.kill("SIGINT");
  const code = await run.exitWithin(60_000);
  assert.equal(code, 130, `no exit within 60 s of Ctrl+C:\n${run.stderr()}`);
  assert.equal(resultOf(run).status, "aborted");
});

Deno.test("big input: the terminal draws a 400 KB answer of brackets and takes the next prompt", async () => {
  await using dirs = await processDirs();
  await using server = startMockOpenAIServer({
    replies: [{ text: ["[".repeat(400_000), "\n\n**All** drawn."] }, { text: "Next." }],
  });
  // In colour: the answer's lines are styled as markdown once complete.
  const { NO_COLOR: _, ...env } = await processEnv(dirs, server);
  await using terminal = await Terminal.start(
    [Deno.execPath(), "run", "-A", MOD, "-m", "openai/test", "--sandbox", "off"],
    env,
    dirs.work,
  );
  await terminal.waitFor(/\/help for commands/, 60_000);
  await terminal.type("draw brackets");
  await terminal.keys("Enter");
  await terminal.waitFor(/All drawn\.[\s\S]*out tokens/, 30_000);
  await terminal.type("and then?");
  await terminal.keys("Enter");
  await terminal.waitFor(/Next\./, 30_000);
});

/** Whether `reader` gives `text` within `ms`. */
async function readsWithin(
  reader: ReadableStreamDefaultReader<string>,
  text: string,
  ms: number,
): Promise<boolean> {
  const deadline = Date.now() + ms;
  let seen = "";
  while (!seen.includes(text)) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<undefined>((resolve) =>
      timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()))
    );
    const read = reader.read().catch(() => ({ done: true as const, value: undefined }));
    const step = await Promise.race([read, late]);
    clearTimeout(timer);
    if (!step || step.done) return false;
    seen += step.value;
  }
  return true;
}

/** The JSON of a run request. */
function runRequest(message: string, stream: boolean): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message, stream }),
  };
}

Deno.test("big input: agent serve answers others while one run's huge message is dealt with", async () => {
  await using dirs = await processDirs();
  await using server = model((body) => {
    const messages = body.messages as { role: string; content: unknown }[];
    // The huge run's model would answer only after two minutes; the small run's at once.
    return messages.at(-1)!.content === "small"
      ? { text: "small answer" }
      : { text: "late", delayMs: 120_000 };
  });
  await using served = await startServe(server, {
    dirs: { root: dirs.root, home: dirs.home, dataDir: dirs.data, cwd: dirs.work },
    env: { OPENAI_API_KEY: "sk-big-input-test", AGENT_SERVE_TOKEN: crypto.randomUUID() },
  });
  /** `fetch` of a path with the token; given up after `ms`. */
  const within = (ms: number, path: string, init: RequestInit = {}) =>
    served.fetch(path, { ...init, signal: AbortSignal.timeout(ms) });

  const huge = await within(600_000, "/v1/runs", runRequest(letters(1_000_000), true));
  assert.equal(huge.status, 200);
  // Its first turn has started: the huge message is being counted and sent.
  const reader = huge.body!.pipeThrough(new TextDecoderStream()).getReader();
  const started = await readsWithin(reader, '"type":"turn_start"', 60_000);
  assert.ok(started, `the huge run's events stopped coming for 60 s:\n${served.stderr()}`);

  const health = await within(30_000, "/v1/health").catch((error) => error);
  assert.ok(health instanceof Response, `no answer to /v1/health in 30 s: ${health}`);
  assert.equal(health.status, 200);
  await health.body?.cancel();
  const small = await within(30_000, "/v1/runs", runRequest("small", false))
    .catch((error) => error);
  assert.ok(small instanceof Response, `no answer to a small run in 30 s: ${small}`);
  const answer = await small.json();
  assert.equal(answer.run.status, "success", JSON.stringify(answer));
  assert.equal(answer.run.result.text, "small answer");
  await reader.cancel();
});
