/**
 * `agent serve` as users start it: a real child process on a free loopback port, the real
 * OpenAI SDK against the loopback mock model, Ctrl+C (SIGINT) to stop it. Each service has a
 * directory of its own (HOME, data, settings, working directory), removed when it is disposed.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { memoryPath } from "../lib/cli/memory.ts";
import { detectSandbox } from "../lib/sandbox/detect.ts";
import { fileSessionStore } from "../lib/session/mod.ts";
import { type MockReply, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { type Served, serveDirs, serveEnv, startServe } from "./serve_support.ts";
import { MOD } from "./terminal_support.ts";

/** Waits until `check` holds, up to 10 s; fails the test otherwise. */
async function waitUntil(check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`never came to pass: ${check}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Writes all of `bytes` (a single `write` may take only part of them). */
async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}

function post(served: Served, path: string, body: unknown, headers: Record<string, string> = {}) {
  return served.fetch(path, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json", ...headers },
  });
}

/** The text of every session file under a data directory. */
async function sessionFiles(dataDir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const project of Deno.readDir(`${dataDir}/sessions`)) {
    if (!project.isDirectory) continue; // the sessions' index
    for await (const file of Deno.readDir(`${dataDir}/sessions/${project.name}`)) {
      files.push(await Deno.readTextFile(`${dataDir}/sessions/${project.name}/${file.name}`));
    }
  }
  return files;
}

function mock(replies: MockReply[] | (() => MockReply)) {
  return startMockOpenAIServer({ replies });
}

/** Whether this process may run a client as `nobody`: root, with setpriv and curl at hand. */
function canBeNobody(): boolean {
  const has = (path: string) => {
    try {
      return Deno.statSync(path).isFile;
    } catch {
      return false;
    }
  };
  return Deno.build.os === "linux" && Deno.uid() === 0 && has("/usr/bin/setpriv") &&
    has("/usr/bin/curl");
}

/** What a process running as `nobody` (uid and gid 65534, no groups) gets from `command`. */
async function asNobody(...command: string[]) {
  const output = await new Deno.Command("setpriv", {
    args: ["--reuid=65534", "--regid=65534", "--clear-groups", ...command],
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin" },
    stdin: "null",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/** The kB a process holds at most so far (VmHWM), from /proc. */
function peakKb(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`))![1]);
}

/** Writes `text` on a new connection to `url`, half-closes it after `closeAfterMs`, reads all. */
async function raw(url: string, text: string, closeAfterMs?: number): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(url).port) });
  await writeAll(conn, new TextEncoder().encode(text));
  const timer = closeAfterMs === undefined
    ? undefined
    : setTimeout(() => conn.closeWrite().catch(() => {}), closeAfterMs);
  try {
    return await new Response(conn.readable).text();
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("agent serve: runs a task, saves its session, and stops cleanly on Ctrl+C", async () => {
  await using model = mock(() => ({ text: "Served." }));
  await using served = await startServe(model);
  assert.match(served.stderr(), /bearer token in \S+\/serve-\d+\.token, readable by you alone;/);
  assert.match(served.stderr(), /curl -H "Authorization: Bearer \$\(cat \S+\)" http:\S+\/v1\/runs/);
  assert.match(served.stderr(), /tools: .*\bbash\b/);

  const answer = await (await post(served, "/v1/runs", { message: "Say something" })).json();
  assert.equal(answer.run.status, "success");
  assert.equal(answer.run.result.text, "Served.");
  const sessions = await (await served.fetch("/v1/sessions")).json();
  assert.equal(sessions.sessions.length, 1);
  assert.equal(sessions.sessions[0].id, answer.run.runLoopId);
  // A completed run loop is archived in the project's memory, and found there.
  const done = await (await post(served, "/v1/runs", {
    message: "Remember the zeppelin",
    complete: true,
  })).json();
  assert.equal(done.run.status, "success");
  const found = await (await served.fetch("/v1/memory/search?q=zeppelin")).json();
  assert.equal(found.results[0].anchor.runLoopId, done.run.runLoopId);

  assert.equal(await served.interrupt(), 0);
  assert.match(served.stderr(), /stopping/);
  // The session is on disk, whole; the token is gone with the service, and kept nowhere.
  const files = await sessionFiles(served.dataDir);
  assert.equal(files.length, 2);
  const first = files.find((file) => file.includes("Say something"))!;
  assert.match(first, /Served\./);
  for (const file of files) {
    assert.doesNotMatch(file, /sk-serve-test/);
    assert.ok(!file.includes(served.token!));
  }
  await assert.rejects(Deno.stat(served.tokenFile!), Deno.errors.NotFound);
});

Deno.test("agent serve: a run loop memory cannot archive is said to its operator and its client, and archived once memory works", async () => {
  await using model = mock(() => ({ text: "Served." }));
  await using served = await startServe(model);
  const run = async (message: string) =>
    (await (await post(served, "/v1/runs", { message, complete: true })).json()).run;
  assert.equal((await run("Remember the zeppelin")).archiveError, undefined);
  // Another process writes to the memory: the next archive waits its while, then fails.
  const memory = new DatabaseSync(memoryPath(served.dataDir, served.cwd));
  memory.exec("BEGIN IMMEDIATE");
  let locked;
  try {
    locked = await run("Remember the airship");
  } finally {
    memory.exec("ROLLBACK");
    memory.close();
  }
  assert.equal(locked.status, "success");
  assert.equal(locked.result.text, "Served.");
  assert.equal(locked.archiveError, "database is locked");
  const said =
    `agent: run loop ${locked.runLoopId} was not archived in memory: database is locked\n`;
  await waitUntil(() => served.stderr().includes(said));
  // The next archive that works takes it too, once the run that ended is answered.
  assert.equal((await run("Remember the balloon")).archiveError, undefined);
  await waitUntil(async () => {
    const found = await (await served.fetch("/v1/memory/search?q=airship")).json();
    return found.results[0]?.anchor.runLoopId === locked.runLoopId;
  });
  assert.equal(await served.interrupt(), 0);
});

Deno.test("agent serve: Ctrl+C cancels the runs going, and their sessions stay", async () => {
  await using model = mock([
    { toolCalls: [{ name: "bash", arguments: { command: "sleep 30" } }] },
    { text: "never" },
  ]);
  await using served = await startServe(model, { args: ["--max-runs", "1"] });
  assert.match(served.stderr(), /at most 1 run at once;/);
  const started = await post(served, "/v1/runs", { message: "Wait a while", stream: true });
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
  const [session] = await sessionFiles(served.dataDir);
  assert.match(session, /Wait a while/);
  assert.match(session, /sleep 30/);
});

Deno.test("agent serve: AGENT_SERVE_TOKEN is the token when given; other hosts need it", async () => {
  await using model = mock(() => ({ text: "ok" }));
  const open = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "serve", "--host", "0.0.0.0", "--port", "0", "-m", "openai/test"],
    env: { OPENAI_API_KEY: "sk-x", OPENAI_BASE_URL: model.url, AGENT_SERVE_TOKEN: "" },
    stdin: "null",
  }).output();
  assert.equal(open.code, 2);
  assert.match(new TextDecoder().decode(open.stderr), /needs a token: set AGENT_SERVE_TOKEN/);

  await using served = await startServe(model, {
    env: { AGENT_SERVE_TOKEN: "t0ken-for-tests" },
  });
  assert.match(served.stderr(), /bearer token AGENT_SERVE_TOKEN;/);
  assert.equal(served.tokenFile, undefined);
  assert.deepEqual(
    [...Deno.readDirSync(served.dataDir)].filter((e) => e.name.endsWith(".token")),
    [],
  );
  const refused = await post(served, "/v1/runs", { message: "hi" }, { authorization: "Bearer no" });
  assert.equal(refused.status, 401);
  assert.equal((await refused.json()).error.code, "unauthorized");
  const allowed = await post(served, "/v1/runs", { message: "hi" });
  assert.equal((await allowed.json()).run.result.text, "ok");
});

Deno.test({
  name:
    "agent serve: another user's process gets nothing done without the token, and cannot read it",
  // Another uid is needed: as root, the client runs as nobody (65534) through setpriv and curl.
  ignore: !canBeNobody(),
  async fn() {
    await using model = mock([
      { toolCalls: [{ name: "bash", arguments: { command: "id -u > ran-as" } }] },
      { text: "done" },
    ]);
    await using served = await startServe(model);
    // The data directory is private, so nobody cannot even look in it; let it through to the
    // file itself, so that the file's own mode is what is tested.
    await Deno.chmod(served.dataDir, 0o711);
    await Deno.chmod(join(served.dataDir, ".."), 0o711);

    const run = await asNobody(
      "curl",
      "-s",
      "-w",
      "\n%{http_code}",
      "-H",
      "content-type: application/json",
      "-d",
      '{"message":"Run id -u"}',
      `${served.url}/v1/runs`,
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.split("\n").at(-1), "401", run.stdout);
    assert.equal(model.requests.length, 0, "the model was never asked");
    await assert.rejects(Deno.stat(join(served.cwd, "ran-as")), Deno.errors.NotFound);
    // Health answers it, and tells nothing more than that the service is up.
    const health = await asNobody("curl", "-s", `${served.url}/v1/health`);
    assert.equal(health.stdout, '{"status":"ok"}');

    // The token is the owner's alone: 0600, and nobody cannot read it, though nobody reads a
    // file beside it that all may read (the folders on the way let nobody through).
    const tokenFile = served.tokenFile!;
    assert.equal((await Deno.stat(tokenFile)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(tokenFile)).uid, Deno.uid());
    const beside = join(dirname(tokenFile), "readable-by-all");
    await Deno.writeTextFile(beside, "open", { mode: 0o644 });
    await Deno.chmod(beside, 0o644);
    const open = await asNobody("cat", beside);
    assert.equal(open.stdout, "open", `nobody cannot reach the token's folder: ${open.stderr}`);
    await Deno.remove(beside);
    const read = await asNobody("cat", tokenFile);
    assert.notEqual(read.code, 0);
    assert.match(read.stderr, /Permission denied/);
    assert.equal(read.stdout, "");
    assert.match(served.token!, /^[A-Za-z0-9_-]{43}$/);

    // The owner's client, with the token, gets the same request done.
    const owned = await post(served, "/v1/runs", { message: "Run id -u" });
    assert.equal((await owned.json()).run.result.text, "done");
    assert.equal((await Deno.readTextFile(join(served.cwd, "ran-as"))).trim(), "0");
  },
});

Deno.test({
  name: "agent serve: a command in the sandbox can neither read the token nor find it",
  ignore: !(await detectSandbox()).available,
  async fn() {
    let tokenFile = "";
    await using model = startMockOpenAIServer({
      replies: (body) =>
        (body.messages as { role: string }[]).some((message) => message.role === "tool")
          ? { text: "done" }
          : {
            toolCalls: [{
              name: "bash",
              arguments: {
                command: `cat ${tokenFile}; ls ${dirname(tokenFile)}; env | grep -c TOKEN`,
              },
            }],
          },
    });
    // Outside /tmp, which is private inside the sandbox anyway: the data directory is hidden.
    const dirs = await serveDirs("/var/tmp");
    try {
      await using served = await startServe(model, { dirs, sandbox: "required" });
      tokenFile = served.tokenFile!;
      const answer = await (await post(served, "/v1/runs", { message: "Read the token" })).json();
      assert.equal(answer.run.result.text, "done");
      const output = JSON.stringify((model.requests[1].body.messages as unknown[]).at(-1));
      assert.ok(!output.includes(served.token!), output);
      assert.match(output, /No such file or directory/);
      assert.doesNotMatch(output, /serve-\d+\.token\\n/, "the data directory shows nothing");
    } finally {
      await Deno.remove(dirs.root, { recursive: true });
    }
  },
});

Deno.test("agent serve: a session of another project is not served; a prefix needs 8 characters", async () => {
  await using model = mock(() => ({ text: "noted" }));
  const dirs = await serveDirs();
  try {
    // Another project on the machine, with a session of its own (run by the CLI).
    const other = join(dirs.root, "other");
    await Deno.mkdir(other);
    const headless = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MOD, "-p", "the other project's plans", "-m", "openai/test"],
      cwd: other,
      clearEnv: true,
      env: await serveEnv(model, dirs),
      stdin: "null",
    }).output();
    assert.equal(headless.code, 0, new TextDecoder().decode(headless.stderr));
    const store = fileSessionStore({ dir: join(dirs.dataDir, "sessions") });
    const [theirs] = await store.list(other);
    assert.ok(theirs, "the other project's session was saved");
    // Two sessions of the served project share their first 8 characters.
    for (const id of ["d00d0000-aaaa", "d00d0000-bbbb"]) {
      await (await store.create({ id, cwd: dirs.cwd, model: "openai/test" })).close();
    }

    await using served = await startServe(model, { dirs });
    const get = async (id: string) => {
      const response = await served.fetch(`/v1/sessions/${id}`);
      return { status: response.status, text: await response.text() };
    };
    const listed = (await (await served.fetch("/v1/sessions")).json()).sessions;
    assert.deepEqual(listed.map((s: { id: string }) => s.id).sort(), [
      "d00d0000-aaaa",
      "d00d0000-bbbb",
    ]);
    // The other project's session: not by its whole id, not by a prefix.
    for (const id of [theirs.id, theirs.id.slice(0, 8)]) {
      const found = await get(id);
      assert.equal(found.status, 404, found.text);
      assert.doesNotMatch(found.text, /plans/);
    }
    // One character is no lookup: no enumerating the sessions by their first characters.
    for (const id of [theirs.id[0], "d"]) {
      const short = await get(id);
      assert.equal(short.status, 400, short.text);
      assert.match(short.text, /its first 8 characters or more/);
      assert.ok(!short.text.includes(theirs.id) && !short.text.includes("-aaaa"), short.text);
    }
    // An ambiguous prefix says how many, not which.
    const both = await get("d00d0000");
    assert.equal(both.status, 409);
    assert.ok(!both.text.includes("-aaaa") && !both.text.includes("-bbbb"), both.text);
    assert.equal((await get("d00d0000-bbbb")).status, 200);
  } finally {
    await Deno.remove(dirs.root, { recursive: true });
  }
});

Deno.test("agent serve: a chunked body far past the limit is refused as it comes, in bounded memory", async () => {
  await using model = mock(() => ({ text: "never" }));
  await using served = await startServe(model);
  const before = peakKb(served.pid);
  const conn = await Deno.connect({
    hostname: "127.0.0.1",
    port: Number(new URL(served.url).port),
  });
  const encoder = new TextEncoder();
  await writeAll(
    conn,
    encoder.encode(
      "POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n" +
        `authorization: Bearer ${served.token ?? ""}\r\ntransfer-encoding: chunked\r\n\r\n`,
    ),
  );
  // Up to 400 MiB, 1 MiB a chunk, until the service answers.
  const chunk = encoder.encode(`100000\r\n${" ".repeat(0x100000)}\r\n`);
  let answered = false;
  let sentMiB = 0;
  const sending = (async () => {
    while (!answered && sentMiB < 400) {
      await writeAll(conn, chunk);
      sentMiB++;
    }
    if (!answered) await writeAll(conn, encoder.encode("0\r\n\r\n")); // the end of the body
  })().catch(() => {}); // the service may close the connection under the writes
  const buffer = new Uint8Array(4096);
  const read = await conn.read(buffer);
  answered = true;
  await sending;
  conn.close();
  const grownMiB = (peakKb(served.pid) - before) / 1024;
  const head = new TextDecoder().decode(buffer.subarray(0, read ?? 0));
  assert.match(head, /^HTTP\/1\.1 413 /);
  assert.match(head, /"too_large"/);
  assert.ok(sentMiB < 64, `${sentMiB} MiB were sent before the refusal`);
  assert.ok(grownMiB < 64, `the service grew by ${grownMiB.toFixed(0)} MiB at its peak`);
  // It goes on serving.
  assert.equal((await served.fetch("/v1/health")).status, 200);
});

Deno.test("agent serve: a bad Host, a bad %-escape or a body cut short is a 400, never a 500", async () => {
  await using model = mock(() => ({ text: "never" }));
  await using served = await startServe(model);
  const auth = `Authorization: Bearer ${served.token ?? ""}\r\n`;
  const cases = {
    "a Host that is no host":
      `GET /v1/runs HTTP/1.1\r\nHost: [::1\r\n${auth}Connection: close\r\n\r\n`,
    "a malformed %-escape": `GET /v1/runs/%E0%A4%A HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}` +
      "Connection: close\r\n\r\n",
    "a body cut short": `POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}` +
      'Content-Length: 100\r\n\r\n{"mess',
    "a chunked body cut short": `POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}` +
      'Transfer-Encoding: chunked\r\n\r\n6\r\n{"mess\r\n',
  };
  for (const [what, request] of Object.entries(cases)) {
    const answer = await raw(served.url, request, what.includes("cut") ? 200 : undefined);
    assert.match(answer, /^HTTP\/1\.1 400 /, `${what}: ${answer}`);
    const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));
    assert.equal(body.error.code, "bad_request", what);
  }
  assert.equal(model.requests.length, 0);
});

Deno.test("agent serve: its tools are those its Deno permissions grant", async () => {
  await using model = mock([
    { toolCalls: [{ name: "write", arguments: { path: "x.txt", content: "no" } }] },
    { text: "could not" },
  ]);
  const readOnly = ["--allow-read", "--allow-env", "--allow-net=127.0.0.1"];
  // Allowed to write nowhere, it has nowhere to keep a token of its own: it says what to do.
  const started = await startServe(model, { permissions: readOnly }).catch((error) => error);
  if (!(started instanceof Error)) {
    await started[Symbol.asyncDispose]();
    assert.fail("it served with no token to give its clients");
  }
  assert.match(
    started.message,
    /agent serve needs a token and has nowhere to keep one for you alone: set AGENT_SERVE_TOKEN/,
  );
  await using served = await startServe(model, {
    permissions: readOnly,
    env: { AGENT_SERVE_TOKEN: "t0ken-for-tests" },
  });
  const tools = /tools: (.*?)(;|\n)/.exec(served.stderr())![1].split(", ");
  assert.ok(tools.includes("read"));
  assert.ok(!tools.includes("write") && !tools.includes("bash"), tools.join(", "));
  const answer = await (await post(served, "/v1/runs", { message: "Write x.txt" })).json();
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
