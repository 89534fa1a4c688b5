/**
 * No secret the run knows reaches disk or a response: keys in the prompt, in a tool's output and
 * in the environment (a preset's key, a key of the user's own provider, `*_PAT`, `SECRET_*`,
 * `*_PWD`, `*_DSN`) are found in no file under the data directory (raw bytes, the SQLite files
 * included), in no `--recall` output and in no answer of `agent serve`; every file there is
 * private to the user. A memory written before keys were redacted is scrubbed when opened.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { memoryPath } from "../lib/cli/memory.ts";
import { openMemory } from "../lib/memory/mod.ts";
import { type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { serveDirs, startServe } from "./serve_support.ts";
import { runCli, tempDir } from "./terminal_support.ts";

/** The secrets of the runs below, by the env var that holds them. */
const KEYS = {
  OPENAI_API_KEY: "sk-proj-Qw7Er9Ty2Ui4Op6As8Df0Gh",
  CORP_LLM_KEY: "corp-7Hq2Zx91Lm40Pw77Vb35",
  GITHUB_PAT: "pat-4h8Jq2Lm9Xw3Rt6Zy1Kd5",
  SECRET_KEY_BASE: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  MYSQL_PWD: "Tr0ub4dor-horse-battery",
  SENTRY_DSN: "https://f3c9a1b7e2d4@o404.ingest.example.io/1877",
};

/** A Slack token in the prompt: in no env var, found by its shape. */
const SLACK = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrSt";

/** Every secret of the runs, with the forms that must not appear either. */
function forbidden(): string[] {
  const values = [...Object.values(KEYS), SLACK];
  // The full-text index keeps words lowercased.
  return [...values, ...values.map((value) => value.toLowerCase())];
}

/** The user settings: a provider of the user's own, its key in CORP_LLM_KEY. */
async function userSettings(server: MockServer): Promise<string> {
  const config = await tempDir("agent_config_");
  await Deno.writeTextFile(
    join(config, "settings.json"),
    JSON.stringify({ providers: { corp: { baseURL: server.url, apiKeyEnv: "CORP_LLM_KEY" } } }),
  );
  return config;
}

interface _Entry {
  path: string;
  mode: number;
  bytes?: Uint8Array;
}

/** Every file and folder under `dir` (itself included), with its bytes and mode. */
async function tree(dir: string): Promise<_Entry[]> {
  const found: _Entry[] = [{ path: dir, mode: (await Deno.stat(dir)).mode! & 0o777 }];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) found.push(...await tree(path));
    else {
      const mode = (await Deno.stat(path)).mode! & 0o777;
      found.push({ path, mode, bytes: await Deno.readFile(path) });
    }
  }
  return found;
}

/** The secrets found in `bytes` (as UTF-8). */
function leaks(bytes: Uint8Array): string[] {
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  return forbidden().filter((secret) => text.includes(secret));
}

/** Asserts that no file under `dataDir` holds a secret and that all are private. */
async function assertDataDirClean(dataDir: string, expected: RegExp[]): Promise<void> {
  const entries = await tree(dataDir);
  for (const pattern of expected) {
    assert.ok(entries.some((entry) => pattern.test(entry.path)), `no file like ${pattern}`);
  }
  for (const entry of entries) {
    if (entry.bytes) {
      assert.deepEqual(leaks(entry.bytes), [], `a secret in ${entry.path}`);
      assert.equal(entry.mode.toString(8), "600", `the mode of ${entry.path}`);
    } else {
      assert.equal(entry.mode.toString(8), "700", `the mode of ${entry.path}`);
    }
  }
}

Deno.test("secrets: a CLI run writes no key to its data directory, and --recall shows none", async () => {
  await using server = startMockOpenAIServer({
    replies: [
      {
        toolCalls: [{
          name: "bash",
          arguments: {
            command: 'echo "$OPENAI_API_KEY $CORP_LLM_KEY $GITHUB_PAT $SECRET_KEY_BASE ' +
              '$MYSQL_PWD $SENTRY_DSN"',
          },
        }],
      },
      { toolCalls: [{ name: "read", arguments: { path: "deploy.env" } }] },
      // The key streamed in pieces, and its start at the end of a piece.
      { text: ["Deploy key: sk-proj-Qw7Er9", "Ty2Ui4Op6As8Df0Gh; the PAT ", KEYS.GITHUB_PAT, "."] },
    ],
  });
  const dataDir = await tempDir("agent_data_");
  const cwd = await tempDir();
  await Deno.writeTextFile(
    join(cwd, "deploy.env"),
    `DB_PASSWORD=${KEYS.MYSQL_PWD}\nSECRET_KEY_BASE=${KEYS.SECRET_KEY_BASE}\n`,
  );
  const env = {
    ...KEYS,
    AGENT_DATA_DIR: dataDir,
    AGENT_CONFIG_DIR: await userSettings(server),
  };
  const prompt = `Deploy with ${KEYS.OPENAI_API_KEY}, post to Slack with ${SLACK}, ` +
    `and use ${KEYS.CORP_LLM_KEY}`;
  const run = await runCli(["-m", "corp/test-model", "--sandbox", "off", prompt], { env, cwd });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(server.requests.length, 3);
  // The tools did see the keys: what is kept of them is what must be clean.
  assert.match(JSON.stringify(server.requests[2].body.messages), /Tr0ub4dor-horse-battery/);

  const recall = await runCli(["--recall", "deploy key"], { env, cwd });
  assert.equal(recall.code, 0, recall.stderr);
  assert.match(recall.stdout, /\[redacted\]/);
  assert.deepEqual(leaks(new TextEncoder().encode(recall.stdout)), []);

  await assertDataDirClean(dataDir, [/\/sessions\/[^/]+\/[^/]+\.jsonl$/, /\/memory\/[^/]+\.db$/]);
});

Deno.test("secrets: agent serve answers no key, streamed or not, and keeps none on disk", async () => {
  await using server = startMockOpenAIServer({
    replies: (() => {
      let call = 0;
      return () =>
        call++ % 2 === 0
          ? {
            toolCalls: [{
              name: "bash",
              arguments: { command: 'echo "$CORP_LLM_KEY $GITHUB_PAT"' },
            }],
          }
          : { text: ["Your key: sk-proj-Qw7E", "r9Ty2Ui4Op6As8Df0Gh and ", KEYS.SECRET_KEY_BASE] };
    })(),
  });
  const dirs = await serveDirs();
  const served = await startServe(server, {
    dirs,
    model: "corp/test-model",
    env: { ...KEYS, AGENT_CONFIG_DIR: await userSettings(server) },
  });
  try {
    const { url } = served;
    const authorization = `Bearer ${served.token}`;
    const answers: string[] = [];
    const get = async (path: string) => {
      const response = await fetch(`${url}${path}`, { headers: { authorization } });
      const text = await response.text();
      answers.push(text);
      return text;
    };
    const post = async (path: string, body: unknown, accept = "application/json") => {
      const response = await fetch(`${url}${path}`, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json", accept, authorization },
      });
      const text = await response.text();
      answers.push(text);
      return text;
    };
    const message = `Deploy with ${KEYS.OPENAI_API_KEY} and ${SLACK}`;
    const streamed = await post("/v1/runs", { message, complete: true }, "text/event-stream");
    assert.match(streamed, /"type":"result"/);
    assert.match(streamed, /\[redacted\]/);
    const answered = JSON.parse(await post("/v1/runs", { message }));
    assert.equal(answered.run.status, "success");
    const { run } = answered;
    await get(`/v1/runs/${run.id}`);
    await get(`/v1/runs/${run.id}/events`);
    await get("/v1/runs");
    await get("/v1/run-loops");
    await get(`/v1/run-loops/${run.runLoopId}`);
    const sessions = JSON.parse(await get("/v1/sessions"));
    assert.ok(sessions.sessions.length >= 1);
    for (const session of sessions.sessions) await get(`/v1/sessions/${session.id}`);
    const found = JSON.parse(await get("/v1/memory/search?q=deploy"));
    assert.ok(found.results.length >= 1, "the completed run loop was archived");
    await get("/v1/memory/search?q=key");
    for (const answer of answers) {
      assert.deepEqual(leaks(new TextEncoder().encode(answer)), [], answer);
    }
    // What the client put back together from the stream holds none either.
    const text = streamed.split("\n").filter((line) => line.startsWith("data: "))
      .map((line) => JSON.parse(line.slice(6)))
      .filter((event) => event.type === "text_delta").map((event) => event.text).join("");
    assert.deepEqual(leaks(new TextEncoder().encode(text)), [], text);
  } finally {
    await served.interrupt();
    await served[Symbol.asyncDispose]();
  }
  await assertDataDirClean(dirs.dataDir, [
    /\/sessions\/[^/]+\/[^/]+\.jsonl$/,
    /\/memory\/[^/]+\.db$/,
  ]);
});

Deno.test("secrets: a memory written before keys were redacted is scrubbed when opened", async () => {
  const dataDir = await tempDir("agent_data_");
  const cwd = await tempDir();
  const path = memoryPath(dataDir, cwd);
  await Deno.mkdir(join(dataDir, "memory"), { recursive: true, mode: 0o755 });
  await Deno.chmod(dataDir, 0o755);
  await Deno.chmod(join(dataDir, "memory"), 0o755);
  // Written as an earlier version did: nothing redacted, files readable by all.
  const old = await openMemory({ path });
  const at = "2025-01-01T00:00:00Z";
  await old.archive({
    id: "r1",
    goal: `Deploy with ${KEYS.CORP_LLM_KEY}`,
    status: "completed",
    createdAt: at,
    iterations: [{
      index: 0,
      reasoning: [],
      toolCalls: [{ id: "c1", name: "bash", input: { command: "echo $CORP_LLM_KEY" } }],
      toolResults: [{ id: "c1", name: "bash", output: KEYS.CORP_LLM_KEY, isError: false }],
      response: `Deployed with the key ${KEYS.CORP_LLM_KEY}.`,
      startedAt: at,
    }],
  });
  await old.close();
  const db = new DatabaseSync(path);
  db.exec("PRAGMA user_version = 0");
  db.close();
  await Deno.chmod(path, 0o644);
  const before = await Deno.readFile(path);
  assert.ok(leaks(before).includes(KEYS.CORP_LLM_KEY), "the old memory holds the key");

  await using server = startMockOpenAIServer({ replies: [] });
  const env = {
    CORP_LLM_KEY: KEYS.CORP_LLM_KEY,
    AGENT_DATA_DIR: dataDir,
    AGENT_CONFIG_DIR: await userSettings(server),
  };
  const recall = await runCli(["-m", "corp/test-model", "--recall", "deployed key"], { env, cwd });
  assert.equal(recall.code, 0, recall.stderr);
  assert.match(recall.stdout, /Deployed with the key \[redacted\]\./);
  assert.deepEqual(leaks(new TextEncoder().encode(recall.stdout)), []);
  await assertDataDirClean(dataDir, [/\/memory\/[^/]+\.db$/]);
  // Still searchable by what was not a secret.
  const again = await runCli(["-m", "corp/test-model", "--recall", "deployed"], { env, cwd });
  assert.match(again.stdout, /Deployed with the key \[redacted\]\./);
});

Deno.test("a key of the user's own provider, whatever its name, is not in a sandboxed command's environment", async () => {
  const { detectSandbox } = await import("../lib/sandbox/detect.ts");
  if (!(await detectSandbox()).available) return;
  const value = "plainvalue-not-shaped-like-a-key";
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      if (messages.at(-1)!.role === "tool") return { text: "done" };
      return { toolCalls: [{ name: "bash", arguments: { command: "env" } }] };
    },
  });
  const config = await tempDir("agent_config_");
  await Deno.writeTextFile(
    join(config, "settings.json"),
    JSON.stringify({ providers: { corp: { baseURL: server.url, apiKeyEnv: "CORPLLM" } } }),
  );
  const run = await runCli(["-m", "corp/x", "--sandbox", "required", "show the environment"], {
    env: { CORPLLM: value, AGENT_CONFIG_DIR: config, MARKER_VARIABLE: "still-here" },
  });
  assert.equal(run.code, 0, run.stderr);
  const sent = JSON.stringify(server.requests[1].body);
  assert.match(sent, /MARKER_VARIABLE=still-here/, "the command did print its environment");
  assert.ok(!sent.includes(value), "the provider's key was not in it");
});

Deno.test("secrets: a provider's error that quotes the key is printed without it, as text and as JSON", async () => {
  await using server = startMockOpenAIServer({
    replies: () => ({
      status: 401,
      errorBody: {
        error: {
          message: `Incorrect API key provided: ${KEYS.CORP_LLM_KEY}.`,
          type: "invalid_request_error",
          code: "invalid_api_key",
        },
      },
    }),
  });
  const env = { CORP_LLM_KEY: KEYS.CORP_LLM_KEY, AGENT_CONFIG_DIR: await userSettings(server) };
  for (const output of ["text", "json", "stream-json"]) {
    const run = await runCli(["-m", "corp/test-model", "--output", output, "hi"], { env });
    assert.equal(run.code, 1, run.stderr);
    const printed = run.stdout + run.stderr;
    assert.match(printed, /Incorrect API key provided: \[redacted\]/, output);
    assert.deepEqual(leaks(new TextEncoder().encode(printed)), [], `${output}: ${printed}`);
    if (output !== "text") {
      assert.equal(JSON.parse(run.stdout.trim().split("\n").at(-1)!).type, "result");
    }
  }
});

Deno.test("secrets: a headless run prints no key: the answer for a program, tool lines, JSON events", async () => {
  // A command as long as the tool line shows, the key where that line is cut.
  const command = `echo ${"a".repeat(90)} ${KEYS.CORP_LLM_KEY}`;
  await using server = startMockOpenAIServer({
    replies: (body) =>
      (body.messages as Array<{ role: string }>).at(-1)!.role === "tool"
        ? { text: ["Your key: corp-7Hq2Z", "x91Lm40Pw77Vb35, and ", KEYS.GITHUB_PAT, "."] }
        : { toolCalls: [{ name: "bash", arguments: { command } }] },
  });
  const env = { ...KEYS, AGENT_CONFIG_DIR: await userSettings(server) };
  for (const output of ["text", "json", "stream-json"]) {
    const run = await runCli(
      ["-m", "corp/test-model", "--sandbox", "off", "--output", output, "show the key"],
      { env },
    );
    assert.equal(run.code, 0, run.stderr);
    const printed = run.stdout + run.stderr;
    assert.match(printed, /Your key: \[redacted\], and \[redacted\]\./, output);
    assert.deepEqual(leaks(new TextEncoder().encode(printed)), [], `${output}: ${printed}`);
    // Not even in part: where the tool line is cut, or where the answer is printed whole.
    assert.doesNotMatch(output === "stream-json" ? run.stderr : printed, /corp-7Hq2/, output);
    if (output === "text") {
      assert.equal(run.stdout, "Your key: [redacted], and [redacted].\n");
      assert.match(run.stderr, /→ bash /);
    } else {
      // Each JSON line is redacted: the tool call, its result, the final result.
      const events = run.stdout.trim().split("\n").map((line) => JSON.parse(line));
      assert.match(JSON.stringify(events.at(-1)), /"text":"Your key: \[redacted\], and/);
      if (output === "stream-json") {
        const call = events.find((event) => event.type === "tool_call");
        assert.match(call.input.command, /a \[redacted\]$/);
      }
    }
  }
});

Deno.test("secrets: an MCP server that prints its token and fails is warned about without it", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ text: "done" }) });
  const token = "mcp-tok-4Zq8Lw2Rn6Vb1Xc9";
  const cwd = await tempDir();
  const config = join(cwd, "mcp.json");
  await Deno.writeTextFile(
    config,
    JSON.stringify({
      mcpServers: {
        mine: {
          command: "sh",
          args: ["-c", 'echo "refused token $MINE_API_TOKEN" >&2; exit 1'],
          env: { MINE_API_TOKEN: token },
        },
      },
    }),
  );
  const env = { AGENT_CONFIG_DIR: await userSettings(server), CORP_LLM_KEY: KEYS.CORP_LLM_KEY };
  for (const output of ["text", "json"]) {
    const run = await runCli(
      ["-m", "corp/test-model", "--mcp-config", config, "--output", output, "hi"],
      { env, cwd },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /MCP server "mine" failed to start/, output);
    assert.match(run.stderr, /refused token \[redacted\]/, output);
    assert.ok(!(run.stdout + run.stderr).includes(token), run.stderr);
  }
});

Deno.test("secrets: a failure before the run's secrets are known is printed without the environment's keys", async () => {
  for (const output of ["text", "json"]) {
    const run = await runCli(["--output", output, "--max-turns", KEYS.GITHUB_PAT, "hi"], {
      env: KEYS,
    });
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /--max-turns must be a whole number .*, got "\[redacted\]"/);
    const printed = run.stdout + run.stderr;
    assert.deepEqual(leaks(new TextEncoder().encode(printed)), [], printed);
    if (output === "json") assert.match(JSON.parse(run.stdout).error.message, /\[redacted\]/);
  }
});

Deno.test("stream-json holds back a key the model streams in pieces, and prints it redacted", async () => {
  const key = KEYS.OPENAI_API_KEY;
  await using server = startMockOpenAIServer({
    replies: () => ({ text: [`the key is ${key.slice(0, 12)}`, `${key.slice(12)} done`] }),
  });
  const run = await runCli(["-m", "openai/test", "--output", "stream-json", "--no-session", "hi"], {
    env: { OPENAI_API_KEY: key, OPENAI_BASE_URL: server.url },
  });
  assert.equal(run.code, 0, run.stderr);
  const deltas = run.stdout.trim().split("\n").map((line) => JSON.parse(line))
    .filter((event) => event.type === "text_delta").map((event) => event.text).join("");
  assert.equal(deltas, "the key is [redacted] done");
  assert.ok(!run.stdout.includes(key.slice(0, 12)) && !run.stdout.includes(key.slice(12)));
});
