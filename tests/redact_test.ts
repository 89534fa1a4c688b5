/**
 * The one redactor and the one list of secret names: what is redacted (known values, the
 * shapes of keys), what the sandbox strips (the same names), what the CLI counts as the run's
 * secrets, and how memory, the service's stream and the input history use them.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { z } from "zod";
import { defineTool, type Tool } from "../mod.ts";
import { headerSecrets, runSecrets } from "../lib/cli/secrets.ts";
import { inputHistory } from "../lib/cli/terminal/history.ts";
import { openMemory, openMemoryInWorker, type RunLoop } from "../lib/memory/mod.ts";
import { scrubMemory } from "../lib/memory/scrub.ts";
import { PRESETS } from "../lib/providers/presets.ts";
import { SANDBOX_STRIPPED_ENV, sandboxEnv } from "../lib/sandbox/env.ts";
import { scriptedModel } from "../lib/testing/scripted_model.ts";
import { createAgentHandler } from "../lib/service/handler.ts";
import { eventRedactor } from "../lib/service/redacted_events.ts";
import {
  fileSessionStore,
  isSecretEnvName,
  projectSessionsDir,
  secretRedactor,
  secretsFromEnv,
} from "../lib/session/mod.ts";
import { redactValue } from "../lib/secrets/redact.ts";
import { SECRET_ENV_NAMES } from "../lib/secrets/secret_names.ts";
import { startMockEmbeddingsServer } from "../lib/testing/mod.ts";
import { tempDir } from "./terminal_support.ts";

const mode = (path: string) => (Deno.statSync(path).mode! & 0o777).toString(8);

Deno.test("sandboxEnv() strips SECRET_*, *_PAT, *_PWD, *_DSN, *_KEY_BASE, named and key-shaped values", () => {
  const env = sandboxEnv({
    PATH: "/usr/bin",
    HOME: "/home/ada",
    PWD: "/work",
    OLDPWD: "/",
    DATABASE_URL: "postgres://ada:pw@db/app",
    SECRET_KEY_BASE: "x",
    MYSQL_PWD: "x",
    SENTRY_DSN: "x",
    GITHUB_PAT: "x",
    CORP_LLM_KEY: "x",
    SMTP_PASS: "x",
    SESSION_COOKIE: "x",
    SLACK_WEBHOOK_URL: "x",
    AZURE_STORAGE_CONNECTION_STRING: "x",
    AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: "x",
    CORP_LLM: "x", // a provider's apiKeyEnv, named by the caller
    DEPLOY_HELPER: "sk-proj-Abc123SECRETxyz4567", // a key whatever its name
    SIGNING: "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----",
  }, ["CORP_LLM"]);
  assert.deepEqual(Object.keys(env), ["PATH", "HOME", "PWD", "OLDPWD", "DATABASE_URL"]);
});

Deno.test("redaction and the sandbox share one list of secret names", () => {
  assert.equal(SANDBOX_STRIPPED_ENV, SECRET_ENV_NAMES);
  for (const preset of Object.values(PRESETS)) {
    if (preset.keyEnv) assert.ok(SECRET_ENV_NAMES.includes(preset.keyEnv), preset.keyEnv);
  }
  const names = [
    ...SECRET_ENV_NAMES,
    "GITHUB_PAT",
    "SECRET_KEY_BASE",
    "MYSQL_PWD",
    "SENTRY_DSN",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "npm_config__auth",
    "HOME",
    "PWD",
    "PATH",
    "KEYBOARD",
    "TOKENIZERS_PARALLELISM",
    "MONKEY",
    "GIT_AUTHOR_NAME",
  ];
  const env = Object.fromEntries(names.map((name) => [name, "a-value-long-enough"]));
  const kept = Object.keys(sandboxEnv(env));
  for (const name of names) {
    assert.equal(!kept.includes(name), isSecretEnvName(name), name);
    // What the sandbox strips, redaction collects.
    const collected = secretsFromEnv((asked) => asked === name ? "a-value-long-enough" : undefined);
    if (isSecretEnvName(name) && SECRET_ENV_NAMES.includes(name)) {
      assert.deepEqual(collected, ["a-value-long-enough"], name);
    }
  }
  assert.deepEqual(kept, [
    "HOME",
    "PWD",
    "PATH",
    "KEYBOARD",
    "TOKENIZERS_PARALLELISM",
    "MONKEY",
    "GIT_AUTHOR_NAME",
  ]);
});

Deno.test("secretRedactor() redacts the shapes of keys the run does not know, not look-alikes", () => {
  const redact = secretRedactor([]);
  const secrets = [
    "sk-proj-Abc123SECRETxyz4567890",
    "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv",
    "ghp_0123456789abcdefghijABCDEFGHIJklmn",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "xoxb-1234567890-0987654321-AbCdEfGhIj",
    "xoxp-1234567890-0987654321-AbCdEfGhIj",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
  ];
  for (const secret of secrets) {
    assert.equal(redact(`a ${secret} b`), "a [redacted] b", secret);
    // In a JSON line, after an escaped line break too.
    const line = JSON.stringify({ output: `x\n${secret}\ny` });
    assert.equal(JSON.parse(redact(line)).output, "x\n[redacted]\ny", secret);
  }
  const pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n" +
    "-----END OPENSSH PRIVATE KEY-----";
  assert.equal(redact(`key:\n${pem}\ndone`), "key:\n[redacted]\ndone");
  assert.equal(redact("cut: -----BEGIN RSA PRIVATE KEY-----\nMIIEow"), "cut: [redacted]");
  assert.equal(
    redact("DATABASE_URL=postgres://ada:s3cret-pw@db.internal:5432/app"),
    "DATABASE_URL=postgres://ada:[redacted]@db.internal:5432/app",
  );
  for (
    const plain of [
      "task-force-abcdefghijklmnopqrstuvwxyz",
      "disk-abcdefghijklmnopqrstuvwxyz0123",
      "sk-short",
      "AKIA",
      "https://example.com/a?b=c",
      "git@github.com:denoland/deno.git",
    ]
  ) {
    assert.equal(redact(plain), plain);
  }
});

Deno.test("secretRedactor() redacts known values, JSON-escaped ones too, and lists them", () => {
  const redact = secretRedactor(["corp-secret-1", 'pa"ss\\word-42', "short", "corp-secret-1"]);
  assert.deepEqual(redact.secrets, ["corp-secret-1", 'pa"ss\\word-42']);
  assert.equal(redact('use corp-secret-1 and pa"ss\\word-42'), "use [redacted] and [redacted]");
  assert.equal(redact(JSON.stringify({ p: 'pa"ss\\word-42' })), '{"p":"[redacted]"}');
  const value = { input: { command: "echo corp-secret-1" }, n: 3, kept: ["plain"] };
  const clean = redactValue(value, redact);
  assert.deepEqual(clean, { input: { command: "echo [redacted]" }, n: 3, kept: ["plain"] });
  assert.equal(clean.kept, value.kept, "what holds no secret is not copied");
  assert.equal(redactValue(value.kept, redact), value.kept);
});

/** `leaf` nested `depth` levels deep, in objects and arrays by turns. */
function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let level = 0; level < depth; level++) value = level % 2 ? [value] : { deeper: value };
  return value;
}

Deno.test("redactValue() redacts a secret however deep it is nested, in a value or a key", () => {
  const redact = secretRedactor(["corp-secret-1"]);
  for (const depth of [60, 70, 1_000]) {
    const value = {
      inValue: nested(depth, "use corp-secret-1"),
      inKey: nested(depth, { "corp-secret-1": "sk-proj-Abc123SECRETxyz4567890" }),
    };
    const text = JSON.stringify(redactValue(value, redact));
    assert.doesNotMatch(text, /corp-secret-1|sk-proj/, `at depth ${depth}`);
    assert.match(text, /use \[redacted\]/, `at depth ${depth}`);
    const plain = nested(depth, "nothing secret");
    assert.equal(redactValue(plain, redact), plain, "what holds no secret is not copied");
  }
  // A value that cannot be written as JSON, deep down, is given up whole rather than kept as is.
  const cycle: Record<string, unknown> = { name: "corp-secret-1" };
  cycle.self = cycle;
  const text = JSON.stringify(redactValue(nested(70, cycle), redact));
  assert.doesNotMatch(text, /corp-secret/);
  assert.match(text, /"\[redacted\]"/);
});

Deno.test("runSecrets(): the keys of the user's providers, their headers, MCP servers' credentials", () => {
  const env: Record<string, string> = {
    CORP_LLM: "corp-llm-value-1",
    EMBED_ACCESS: "embed-value-2",
    OPENAI_API_KEY: "openai-value-3",
  };
  const redact = runSecrets((name) => env[name], {
    providers: {
      corp: { baseURL: "https://llm.corp.example/v1", apiKeyEnv: "CORP_LLM" },
      other: { baseURL: "https://other.example/v1", headers: { "X-Api-Key": "header-value-4" } },
    },
    memory: {
      embeddings: { baseURL: "http://127.0.0.1:1/v1", model: "m", apiKeyEnv: "EMBED_ACCESS" },
    },
  }, {
    mcpServers: {
      docs: {
        type: "http",
        url: "https://mcp.example/mcp",
        headers: { Authorization: "Bearer mcp-bearer-5", Accept: "text/event-stream" },
      },
      files: {
        command: "mcp-files",
        env: { FILES_TOKEN: "mcp-env-value-6", NODE_ENV: "production" },
      },
    },
  });
  for (
    const value of [...Object.values(env), "header-value-4", "mcp-bearer-5", "mcp-env-value-6"]
  ) {
    assert.equal(redact(`<${value}>`), "<[redacted]>", value);
  }
  assert.equal(redact("text/event-stream production"), "text/event-stream production");
  assert.deepEqual(headerSecrets({ Cookie: "session=abcdefgh123" }), ["session=abcdefgh123"]);
});

const _at = "2025-01-01T00:00:00.000Z";

function loopWith(text: string): RunLoop {
  return {
    id: "r1",
    goal: `Deploy with ${text}`,
    status: "completed",
    createdAt: _at,
    iterations: [{
      index: 0,
      reasoning: [`The key is ${text}.`],
      toolCalls: [{ id: "c1", name: "bash", input: { command: `deploy --key ${text}` } }],
      toolResults: [{ id: "c1", name: "bash", output: `deployed with ${text}`, isError: false }],
      response: `Deployed: ${text}`,
      startedAt: _at,
    }],
  };
}

Deno.test("memory: a run loop's secrets are redacted before it is stored, indexed or embedded", async () => {
  await using embeddings = startMockEmbeddingsServer({ dimensions: 16 });
  const dir = await tempDir();
  const path = join(dir, "memory.db");
  const secret = "corp-secret-value-1";
  const memory = await openMemory({
    path,
    secrets: [secret],
    embeddings: { baseURL: embeddings.url, model: "m" },
  });
  await memory.archive(loopWith(`${secret} and ghp_0123456789abcdefghijABCDEFGHIJklmn`));
  const found = await memory.retrieve(`deployed ${secret}`);
  assert.ok(found.length > 0);
  for (const hit of found) assert.doesNotMatch(hit.text, /corp-secret|ghp_/);
  assert.match(JSON.stringify(await memory.runLoop("r1")), /\[redacted\] and \[redacted\]/);
  await memory.close();
  // Not in the full-text index either.
  const plain = await openMemory({ path });
  assert.deepEqual(await plain.retrieve(secret.replaceAll("-", " ")), []);
  assert.ok((await plain.retrieve("deployed")).length > 0);
  await plain.close();
  const sent = JSON.stringify(embeddings.requests.map((request) => request.inputs));
  assert.match(sent, /\[redacted\]/);
  assert.doesNotMatch(sent, /corp-secret|ghp_/);
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      assert.doesNotMatch(await Deno.readTextFile(file), /corp-secret|ghp_/, file);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  assert.equal(mode(path), "600");
});

Deno.test("memory: in a worker thread, the secrets are redacted all the same", async () => {
  const memory = await openMemoryInWorker({ path: ":memory:", secrets: ["corp-secret-value-1"] });
  await memory.archive(loopWith("corp-secret-value-1"));
  const [hit] = await memory.retrieve("deployed");
  assert.match(hit.text, /\[redacted\]/);
  assert.doesNotMatch(JSON.stringify(await memory.recent()), /corp-secret/);
  await memory.close();
});

Deno.test("memory: an old database is scrubbed once — text, index rebuilt, vectors embedded again", async () => {
  await using embeddings = startMockEmbeddingsServer({ dimensions: 16 });
  const dir = await tempDir();
  const path = join(dir, "memory.db");
  const secret = "corp-secret-value-1";
  const options = { path, embeddings: { baseURL: embeddings.url, model: "m" } };
  // Written as an earlier version did: the secret not known, the database not marked.
  const old = await openMemory(options);
  await old.archive(loopWith(secret));
  await old.archive({ ...loopWith("nothing secret"), id: "r2" });
  const vectors = old.stats().vectors;
  await old.close();
  const db = new DatabaseSync(path);
  db.exec("PRAGMA user_version = 0");
  db.close();
  Deno.chmodSync(path, 0o644);
  assert.match(new TextDecoder().decode(Deno.readFileSync(path)), /corp-secret-value-1/);

  const before = embeddings.requests.length;
  const memory = await openMemory({ ...options, secrets: [secret] });
  assert.equal(mode(path), "600");
  // The changed segments lost their vectors; the next archive embeds them again, redacted.
  assert.equal(memory.stats().vectors, vectors - 5);
  await memory.archive({ ...loopWith("a third one"), id: "r3" });
  assert.equal(memory.stats().vectors, vectors + 5);
  const again = embeddings.requests.slice(before).flatMap((request) => request.inputs);
  assert.ok(again.some((text) => text.includes("[redacted]")), JSON.stringify(again));
  assert.ok(again.every((text) => !text.includes(secret)));
  // The index was built again from the redacted text: the secret's words find nothing.
  assert.deepEqual(
    (await memory.retrieve("corp secret value")).filter((hit) => hit.anchor.runLoopId === "r1"),
    [],
  );
  const [hit] = await memory.retrieve("deployed", { types: ["response"] });
  assert.ok(hit);
  await memory.close();
  const raw = [path, `${path}-wal`].map((file) => {
    try {
      return new TextDecoder().decode(Deno.readFileSync(file));
    } catch {
      return "";
    }
  }).join("");
  assert.doesNotMatch(raw, /corp-secret-value-1/);

  // Done once: a database that is marked is not read through again.
  const marked = new DatabaseSync(path);
  let calls = 0;
  const counting = (text: string) => (calls++, text);
  assert.deepEqual(scrubMemory(marked, counting), { segments: 0, runLoops: 0 });
  assert.equal(calls, 0);
  marked.close();
});

Deno.test("service: a key streamed in pieces is never sent in pieces; answers and errors redacted", async () => {
  const secret = "corp-secret-value-1";
  const redact = secretRedactor([secret, "two words secret"]);
  const handler = createAgentHandler({
    model: scriptedModel([{
      reasoning: ["I will use corp-sec", "ret-value-1."],
      text: ["The key: corp-se", "cret-v", "alue-1 and two wor", "ds secret, done."],
    }]),
    redact,
    token: false,
  });
  const response = await handler(
    new Request("http://127.0.0.1/v1/runs", {
      method: "POST",
      body: JSON.stringify({ message: `Tell me ${secret}`, stream: true }),
    }),
  );
  const body = await response.text();
  assert.doesNotMatch(body, /corp-sec|two wor/);
  const events = body.split("\n").filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6)));
  const text = events.filter((event) => event.type === "text_delta").map((event) => event.text);
  assert.equal(text.join(""), "The key: [redacted] and [redacted], done.");
  const reasoning = events.filter((event) => event.type === "reasoning_delta")
    .map((event) => event.text).join("");
  assert.equal(reasoning, "I will use [redacted].");
  assert.equal(events.at(-1).text, "The key: [redacted] and [redacted], done.");
  // An error that quotes a key is answered without it.
  const missing = await handler(new Request(`http://127.0.0.1/v1/runs/${secret}`));
  assert.equal(missing.status, 404);
  assert.doesNotMatch(await missing.text(), /corp-secret/);
  await handler.close();

  // The deltas' order is kept: what is held back goes before the next event.
  const events2 = eventRedactor(redact);
  const sent = [
    ...events2.push({ type: "text_delta", text: "a corp-secret" }),
    ...events2.push({ type: "turn_end", turn: 1, usage: { inputTokens: 1, outputTokens: 1 } }),
  ];
  assert.deepEqual(sent.map((event) => event.type), ["text_delta", "text_delta", "turn_end"]);
});

Deno.test("service: past the most text it holds back, the start of a key is still held", async () => {
  const secret = "corpvalue-9f8e7d6c5b4a";
  const redact = secretRedactor([secret]);
  const long = "x".repeat(65_530);
  const handler = createAgentHandler({
    model: scriptedModel([{ text: [long, "corpvalue-9f8e", "7d6c5b4a is the key"] }]),
    redact,
    token: false,
  });
  const response = await handler(
    new Request("http://127.0.0.1/v1/runs", {
      method: "POST",
      body: JSON.stringify({ message: "Tell me", stream: true }),
    }),
  );
  const deltas = (await response.text()).split("\n").filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6))).filter((event) => event.type === "text_delta");
  const sent = deltas.map((event) => event.text).join("");
  assert.ok(sent === `${long}[redacted] is the key`, `it ends with: ${sent.slice(-40)}`);
  await handler.close();

  // The same for a key-shaped token, the password of a URL, and a key the cut would go through.
  const cases = [
    [long, "=sk-proj-Qw7E", "r9Ty2Ui4Op6As8Df0Gh done"],
    [long, "=postgres://ada:s3cr", "et-pw@db done"],
    [`${long}${secret}${"y".repeat(4_090)}`, " done"],
    ["a", `${"-".repeat(70_000)}corpvalue-9f8e`, "7d6c5b4a"],
  ];
  for (const deltas of cases) {
    const events = eventRedactor(redact);
    const sent = [
      ...deltas.flatMap((text) => events.push({ type: "text_delta", text })),
      ...events.flush(),
    ];
    const text = sent.map((event) => event.type === "text_delta" ? event.text : "").join("");
    const expected = redact(deltas.join(""));
    assert.ok(text === expected, `it ends with: ${text.slice(-40)}, not ${expected.slice(-40)}`);
    assert.ok(text.includes("[redacted]"), deltas.at(-1));
  }
});

Deno.test("service and memory: a key nested deep in a tool call's input is kept and answered redacted", async () => {
  const secret = "corp-secret-value-1";
  const dir = await tempDir();
  const path = join(dir, "memory.db");
  const memory = await openMemory({ path, secrets: [secret] });
  const lookup = defineTool({
    name: "lookup",
    description: "Looks a word up",
    parameters: z.object({ word: z.string() }),
    capabilities: [],
    execute: ({ word }) => `found ${word}`,
  });
  const handler = createAgentHandler({
    model: scriptedModel([
      { toolCalls: [{ name: "lookup", input: { word: "w", extra: nested(70, `key ${secret}`) } }] },
      { text: "Done." },
    ]),
    tools: [lookup as Tool],
    memory,
    redact: secretRedactor([secret]),
    token: false,
  });
  const call = async (path: string, init?: RequestInit) => {
    const response = await handler(new Request(`http://127.0.0.1${path}`, init));
    const text = await response.text();
    assert.equal(response.status, 200, text);
    assert.doesNotMatch(text, /corp-secret/, path);
    return text;
  };
  const { run } = JSON.parse(
    await call("/v1/runs", {
      method: "POST",
      body: JSON.stringify({ message: "Look it up", complete: true }),
    }),
  );
  assert.equal(run.status, "success");
  assert.match(await call(`/v1/runs/${run.id}/events`), /key \[redacted\]/);
  assert.match(await call(`/v1/run-loops/${run.runLoopId}`), /key \[redacted\]/);
  await handler.close();
  assert.match(JSON.stringify(await memory.runLoop(run.runLoopId)), /key \[redacted\]/);
  await memory.close();
  for (const file of [path, `${path}-wal`]) {
    try {
      assert.doesNotMatch(await Deno.readTextFile(file), /corp-secret/, file);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
});

Deno.test("service: why memory could not archive reaches its clients redacted", async () => {
  const secret = "corp-secret-value-7";
  const memory = await openMemory({ path: ":memory:" });
  // A store whose failure quotes a key, as a custom store's error may.
  memory.archive = () => Promise.reject(new Error(`disk full writing ${secret}`));
  const heard: string[] = [];
  const handler = createAgentHandler({
    model: scriptedModel(() => ({ text: "Done." })),
    memory,
    redact: secretRedactor([secret]),
    onArchiveError: (_id, error) => heard.push(error),
    token: false,
  });
  const call = async (path: string, body: unknown) => {
    const response = await handler(
      new Request(`http://127.0.0.1${path}`, { method: "POST", body: JSON.stringify(body) }),
    );
    const text = await response.text();
    assert.equal(response.status, 200, text);
    assert.doesNotMatch(text, /corp-secret/, path);
    return text;
  };
  const json = JSON.parse(await call("/v1/runs", { message: "One", complete: true }));
  assert.equal(json.run.archiveError, "disk full writing [redacted]");
  const streamed = await call("/v1/runs", { message: "Two", complete: true, stream: true });
  assert.match(streamed, /"archiveError":"disk full writing \[redacted\]"/);
  const idle = JSON.parse(await call("/v1/runs", { message: "Three" }));
  const completed = JSON.parse(await call(`/v1/run-loops/${idle.run.runLoopId}/complete`, {}));
  assert.equal(completed.archiveError, "disk full writing [redacted]");
  // The operator's listener hears the error as it is: agent serve redacts what it prints.
  assert.equal(heard.length, 3);
  await handler.close();
  await memory.close();
});

Deno.test("sessions: a file an earlier version left readable by all is made private when opened", async () => {
  const dir = await tempDir();
  const store = fileSessionStore({ dir });
  const writer = await store.create({ cwd: "/w", model: "a/b" });
  await writer.close();
  const folder = projectSessionsDir(dir, "/w");
  const file = join(folder, `${writer.id}.jsonl`);
  assert.deepEqual([mode(dir), mode(folder), mode(file)], ["700", "700", "600"]);
  Deno.chmodSync(dir, 0o755);
  Deno.chmodSync(folder, 0o755);
  Deno.chmodSync(file, 0o644);
  await (await store.open(writer.id)).close();
  assert.deepEqual([mode(dir), mode(folder), mode(file)], ["700", "700", "600"]);
});

Deno.test("inputHistory(): private to the user, and no key is saved in it", async () => {
  const dir = join(await tempDir(), "data");
  const path = join(dir, "history");
  const key = "ghp_0123456789abcdefghijABCDEFGHIJklmn";
  const history = inputHistory(path, { redact: secretRedactor(["corp-secret-value-1"]) });
  history.remember(`push with ${key} and corp-secret-value-1`);
  assert.equal(history.lines[0], `push with ${key} and corp-secret-value-1`);
  assert.deepEqual(inputHistory(path).lines, ["push with [redacted] and [redacted]"]);
  assert.deepEqual([mode(dir), mode(path)], ["700", "600"]);
  Deno.chmodSync(dir, 0o755);
  Deno.chmodSync(path, 0o644);
  inputHistory(path).remember("next");
  assert.deepEqual([mode(dir), mode(path)], ["700", "600"]);
});
