import "./isolated_env.ts";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { type CliIo, main } from "../cli.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";

interface FakeIo extends CliIo {
  stdout: string;
  stderr: string;
}

function fakeIo(env: Record<string, string> = {}, stdin?: string): FakeIo {
  const io: FakeIo = {
    stdout: "",
    stderr: "",
    out: (text) => io.stdout += text,
    err: (text) => io.stderr += text,
    readStdin: () => Promise.resolve(stdin),
    env: (name) => env[name],
    color: false,
    onInterrupt: () => () => {},
  };
  return io;
}

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));
// Sessions and memory of these runs go to a directory of their own, not the user's.
Deno.env.set("AGENT_DATA_DIR", await Deno.makeTempDir({ prefix: "agent_test_data_" }));

Deno.test("cli: text output streams the answer to stdout and the summary to stderr", async () => {
  await using server = startMockOpenAIServer({ replies: [{ text: ["Hello", " there"] }] });
  const io = fakeIo({ OPENAI_API_KEY: "sk-test" });
  const code = await main(["-m", "openai/test", "--base-url", server.url, "say", "hi"], io);
  assert.equal(code, 0);
  assert.equal(io.stdout, "Hello there\n");
  assert.match(io.stderr, /1 turn · 0 tool calls · \d+ in \/ \d+ out tokens/);
  const body = server.requests[0].body as { model: string; messages: { content: string }[] };
  assert.equal(body.model, "test");
  assert.equal(body.messages.at(-1)?.content, "say hi");
});

Deno.test("cli: json output prints one result object", async () => {
  await using server = startMockOpenAIServer({ replies: [{ text: "42" }] });
  const io = fakeIo({ OPENAI_API_KEY: "k", OPENAI_BASE_URL: server.url, AGENT_MODEL: "openai/m" });
  const code = await main(["--output", "json", "answer"], io);
  assert.equal(code, 0);
  const lines = io.stdout.trim().split("\n");
  assert.equal(lines.length, 1);
  const result = JSON.parse(lines[0]);
  assert.equal(result.type, "result");
  assert.equal(result.status, "success");
  assert.equal(result.text, "42");
  assert.equal(typeof result.durationMs, "number");
  assert.equal(typeof result.sessionId, "string");
  assert.equal(server.requests[0].body.model, "m");
});

Deno.test("cli: stream-json prints every event as one JSON line", async () => {
  await using server = startMockOpenAIServer({ replies: [{ text: ["a", "b"] }] });
  const io = fakeIo({ OPENAI_API_KEY: "k" });
  const code = await main([
    "--output",
    "stream-json",
    "-m",
    "openai/m",
    "--base-url",
    server.url,
    "x",
  ], io);
  assert.equal(code, 0);
  const events = io.stdout.trim().split("\n").map((line) => JSON.parse(line));
  // Deltas may come joined: a key streamed in pieces is held back until it can be redacted.
  const types = events.map((e) => e.type).filter((type, i, all) =>
    type !== "text_delta" || all[i - 1] !== "text_delta"
  );
  assert.equal(
    events.filter((e) => e.type === "text_delta").map((e) => e.text).join(""),
    "ab",
  );
  assert.deepEqual(types, [
    "start",
    "run_loop_start",
    "message",
    "turn_start",
    "text_delta",
    "message",
    "turn_end",
    "run_loop_end",
    "result",
  ]);
  assert.equal(events[0].model, "openai/m");
  assert.equal(events[1].decision, "new");
  assert.equal(events.at(-2).status, "completed");
});

Deno.test("cli: reads the prompt from stdin when none is given", async () => {
  await using server = startMockOpenAIServer({ replies: [{ text: "ok" }] });
  const io = fakeIo({ OPENAI_API_KEY: "k" }, "  from stdin \n");
  assert.equal(await main(["-m", "openai/m", "--base-url", server.url], io), 0);
  const body = server.requests[0].body as { messages: { content: string }[] };
  assert.equal(body.messages.at(-1)?.content, "from stdin");
});

Deno.test("cli: usage errors exit 2 with a clear message", async () => {
  for (
    const [args, pattern] of [
      [
        ["--frobnicate", "x"],
        /^agent: Unknown option --frobnicate \(see --help\); a prompt that starts with "-" goes after --, as in: agent -- "--frobnicate …"\n$/,
      ],
      [["--output"], /^agent: --output needs a value \(see --help\)\n$/],
      [["-m"], /^agent: --model needs a value \(see --help\)\n$/],
      [
        ["--thinking", "-1", "x"],
        /^agent: --thinking needs a value \(see --help\); for one that starts with "-", write --thinking=<value>\n$/,
      ],
      [["--sessions=yes"], /^agent: --sessions takes no value \(see --help\)\n$/],
      [["-r", "", "x"], /^agent: --resume needs a session id/],
      [["-r", " "], /^agent: --resume needs a session id/],
      [["--output", "yaml", "x"], /--output must be one of text, json, stream-json, got "yaml"/],
      [["--max-turns", "many", "x"], /--max-turns must be a whole number/],
      [["-m", "gpt-4", "x"], /Model "gpt-4" names no provider: write provider\/model/],
      [["-m", "nope/x", "x"], /Unknown provider "nope".*Known providers: openai/],
      [["--tools", "read,fly", "x"], /Unknown tool "fly" in --tools/],
      [["--cwd", "/no/such/dir", "x"], /Cannot use directory \/no\/such\/dir/],
      [[], /no prompt/],
    ] as const
  ) {
    const io = fakeIo({ OPENAI_API_KEY: "k" });
    assert.equal(await main(args, io), 2, args.join(" "));
    assert.match(io.stderr, pattern);
    assert.equal(io.stdout, "");
  }
});

Deno.test("cli: configuration errors exit 1 and say what to do", async () => {
  const missingKey = fakeIo();
  assert.equal(await main(["-m", "openai/gpt-4.1-mini", "hi"], missingKey), 1);
  assert.match(missingKey.stderr, /No API key for openai: set OPENAI_API_KEY\n/);
  // The CLI's user has no `apiKey` option to pass.
  assert.doesNotMatch(missingKey.stderr, /apiKey/);
});

Deno.test("cli: a rejected key exits 1 without retrying", async () => {
  await using server = startMockOpenAIServer({ replies: [{ status: 401 }, { text: "never" }] });
  const io = fakeIo({ OPENAI_API_KEY: "bad" });
  assert.equal(await main(["-m", "openai/m", "--base-url", server.url, "hi"], io), 1);
  assert.match(io.stderr, /error: openai refused the request \(401\).*OPENAI_API_KEY/);
  assert.equal(server.requests.length, 1);
});

Deno.test("cli: --help and --version", async () => {
  const help = fakeIo();
  assert.equal(await main(["--help"], help), 0);
  assert.ok(help.stdout.includes("Usage:\n  agent [options] [prompt...]"));
  assert.match(
    help.stdout,
    /Exit codes: 0 success · 1 error · 2 usage error · 3 max turns reached · 130 interrupted/,
  );
  const version = fakeIo();
  assert.equal(await main(["-V"], version), 0);
  assert.match(version.stdout, /^agent \d+\.\d+\.\d+\n$/);
});

Deno.test("cli: the system prompt flags replace and extend the prompt", async () => {
  await using server = startMockOpenAIServer({ replies: [{ text: "ok" }, { text: "ok" }] });
  const base = ["-m", "openai/m", "--base-url", server.url];
  await main([
    ...base,
    "--system-prompt",
    "Only French.",
    "--append-system-prompt",
    "Be brief.",
    "x",
  ], fakeIo({ OPENAI_API_KEY: "k" }));
  await main(
    [...base, "--append-system-prompt", "Be brief.", "x"],
    fakeIo({ OPENAI_API_KEY: "k" }),
  );
  const system = (i: number) =>
    (server.requests[i].body as { messages: { content: string }[] }).messages[0].content;
  assert.equal(system(0), "Only French.\n\nBe brief.");
  assert.match(system(1), /^You are .*\n\nBe brief\.$/s);
});

Deno.test("cli: `deno run mod.ts` runs a task as a program", async () => {
  await using server = startMockOpenAIServer({ replies: [{ text: "from the child" }] });
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "-m", "openai/m", "hello"],
    env: { OPENAI_API_KEY: "k", OPENAI_BASE_URL: server.url, NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  assert.equal(stdout, "from the child\n");
});

Deno.test("cli: Ctrl+C interrupts the run and exits 130", async () => {
  await using server = startMockOpenAIServer({
    replies: [{ text: Array.from({ length: 200 }, (_, i) => `w${i} `), eventDelayMs: 20 }],
  });
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "-m", "openai/m", "--output", "stream-json", "long answer"],
    env: { OPENAI_API_KEY: "k", OPENAI_BASE_URL: server.url },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!seen.includes("text_delta")) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += value;
  }
  child.kill("SIGINT");
  while (true) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += value;
  }
  const status = await child.status;
  await child.stderr.cancel();
  assert.equal(status.code, 130);
  const result = JSON.parse(seen.trim().split("\n").at(-1)!);
  assert.equal(result.type, "result");
  assert.equal(result.status, "aborted");
});
