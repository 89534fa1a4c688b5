/**
 * `agent serve` as users start it: a real child process on a free loopback port, the real
 * OpenAI SDK against the loopback mock model, Ctrl+C (SIGINT) to stop it.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { type MockReply, type MockServer, startMockOpenAIServer } from "../testing.ts";

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));

/** An `agent serve` process; `url` is set once it listens. */
interface Served extends AsyncDisposable {
  url: string;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** Sends SIGINT and gives the exit code. */
  interrupt(): Promise<number>;
  status: Promise<Deno.CommandStatus>;
}

async function startServe(
  model: MockServer,
  args: string[] = [],
  options: { permissions?: string[]; env?: Record<string, string>; dataDir?: string } = {},
): Promise<Served> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...(options.permissions ?? ["-A"]),
      MOD,
      "serve",
      "--port",
      "0",
      "-m",
      "openai/test",
      "--sandbox",
      "off",
      ...args,
    ],
    env: {
      OPENAI_API_KEY: "sk-serve-test",
      OPENAI_BASE_URL: model.url,
      AGENT_DATA_DIR: options.dataDir ?? await Deno.makeTempDir({ prefix: "agent_serve_data_" }),
      AGENT_CONFIG_DIR: await Deno.makeTempDir(),
      NO_COLOR: "1",
      ...options.env,
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const listening = Promise.withResolvers<string>();
  (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderr += chunk;
      const url = /serving \S+ on (http:\/\/\S+) /.exec(stderr)?.[1];
      if (url) listening.resolve(url);
    }
    listening.reject(new Error(`agent serve did not listen:\n${stderr}`));
  })();
  const served: Served = {
    url: "",
    stderr: () => stderr,
    status: child.status,
    async interrupt() {
      child.kill("SIGINT");
      return (await child.status).code;
    },
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGKILL");
      } catch { /* it has ended */ }
      await child.status;
    },
  };
  served.url = await listening.promise;
  return served;
}

function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json", ...headers },
  });
}

/** The text of every session file under a data directory. */
async function sessionFiles(dataDir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const project of Deno.readDir(`${dataDir}/sessions`)) {
    for await (const file of Deno.readDir(`${dataDir}/sessions/${project.name}`)) {
      files.push(await Deno.readTextFile(`${dataDir}/sessions/${project.name}/${file.name}`));
    }
  }
  return files;
}

function mock(replies: MockReply[] | (() => MockReply)) {
  return startMockOpenAIServer({ replies });
}

Deno.test("agent serve: runs a task, saves its session, and stops cleanly on Ctrl+C", async () => {
  await using model = mock(() => ({ text: "Served." }));
  const dataDir = await Deno.makeTempDir({ prefix: "agent_serve_data_" });
  await using served = await startServe(model, [], { dataDir });
  assert.match(served.stderr(), /loopback only/);
  assert.match(served.stderr(), /tools: .*\bbash\b/);

  const answer = await (await post(`${served.url}/v1/runs`, { message: "Say something" })).json();
  assert.equal(answer.run.status, "success");
  assert.equal(answer.run.result.text, "Served.");
  const sessions = await (await fetch(`${served.url}/v1/sessions`)).json();
  assert.equal(sessions.sessions.length, 1);
  assert.equal(sessions.sessions[0].id, answer.run.runLoopId);
  // A completed run loop is archived in the project's memory, and found there.
  const done = await (await post(`${served.url}/v1/runs`, {
    message: "Remember the zeppelin",
    complete: true,
  })).json();
  assert.equal(done.run.status, "success");
  const found = await (await fetch(`${served.url}/v1/memory/search?q=zeppelin`)).json();
  assert.equal(found.results[0].anchor.runLoopId, done.run.runLoopId);

  assert.equal(await served.interrupt(), 0);
  assert.match(served.stderr(), /stopping/);
  // The session is on disk, whole.
  const files = await sessionFiles(dataDir);
  assert.equal(files.length, 2);
  const first = files.find((file) => file.includes("Say something"))!;
  assert.match(first, /Served\./);
  for (const file of files) assert.doesNotMatch(file, /sk-serve-test/);
});

Deno.test("agent serve: Ctrl+C cancels the runs going, and their sessions stay", async () => {
  await using model = mock([
    { toolCalls: [{ name: "bash", arguments: { command: "sleep 30" } }] },
    { text: "never" },
  ]);
  const dataDir = await Deno.makeTempDir({ prefix: "agent_serve_data_" });
  await using served = await startServe(model, ["--max-runs", "1"], { dataDir });
  assert.match(served.stderr(), /at most 1 run at once;/);
  const started = await post(`${served.url}/v1/runs`, { message: "Wait a while", stream: true });
  const reader = started.body!.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!seen.includes('"tool_call"')) seen += (await reader.read()).value ?? "";
  const began = performance.now();
  assert.equal(await served.interrupt(), 0);
  assert.ok(performance.now() - began < 10_000, "the sleeping command was stopped");
  for (let step = await reader.read(); !step.done; step = await reader.read()) seen += step.value;
  assert.match(seen, /"type":"result"/);
  assert.match(seen, /"status":"aborted"/);
  assert.match(served.stderr(), /cancelling 1 run\n/);
  const [session] = await sessionFiles(dataDir);
  assert.match(session, /Wait a while/);
  assert.match(session, /sleep 30/);
});

Deno.test("agent serve: a token guards it; other hosts need one", async () => {
  await using model = mock(() => ({ text: "ok" }));
  const open = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "serve", "--host", "0.0.0.0", "--port", "0", "-m", "openai/test"],
    env: { OPENAI_API_KEY: "sk-x", OPENAI_BASE_URL: model.url, AGENT_SERVE_TOKEN: "" },
    stdin: "null",
  }).output();
  assert.equal(open.code, 2);
  assert.match(new TextDecoder().decode(open.stderr), /needs a token: set AGENT_SERVE_TOKEN/);

  await using served = await startServe(model, [], {
    env: { AGENT_SERVE_TOKEN: "t0ken-for-tests" },
  });
  assert.match(served.stderr(), /bearer token required/);
  const refused = await post(`${served.url}/v1/runs`, { message: "hi" });
  assert.equal(refused.status, 401);
  assert.equal((await refused.json()).error.code, "unauthorized");
  const allowed = await post(`${served.url}/v1/runs`, { message: "hi" }, {
    authorization: "Bearer t0ken-for-tests",
  });
  assert.equal((await allowed.json()).run.result.text, "ok");
});

Deno.test("agent serve: its tools are those its Deno permissions grant", async () => {
  await using model = mock([
    { toolCalls: [{ name: "write", arguments: { path: "x.txt", content: "no" } }] },
    { text: "could not" },
  ]);
  await using served = await startServe(model, [], {
    permissions: ["--allow-read", "--allow-env", "--allow-net=127.0.0.1"],
  });
  const tools = /tools: (.*?)(;|\n)/.exec(served.stderr())![1].split(", ");
  assert.ok(tools.includes("read"));
  assert.ok(!tools.includes("write") && !tools.includes("bash"), tools.join(", "));
  const answer = await (await post(`${served.url}/v1/runs`, { message: "Write x.txt" })).json();
  assert.equal(answer.run.result.text, "could not");
});

Deno.test("agent serve: bad flags and a busy port are clear errors", async () => {
  const run = async (...args: string[]) => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MOD, ...args],
      env: { OPENAI_API_KEY: "sk-x" },
      stdin: "null",
    }).output();
    return { code: output.code, stderr: new TextDecoder().decode(output.stderr) };
  };
  const extra = await run("serve", "now");
  assert.equal(extra.code, 2);
  assert.match(extra.stderr, /agent serve takes no prompt/);
  const stray = await run("--port", "80", "hello");
  assert.equal(stray.code, 2);
  assert.match(stray.stderr, /--port is an option of agent serve/);
  const bad = await run("serve", "--port", "99999");
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--port/);

  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const busy = await run("serve", "-m", "openai/test", "--port", String(taken.addr.port));
  assert.equal(busy.code, 2);
  assert.match(busy.stderr, /is in use: pick another with --port/);
});
