/**
 * What the CLI prints, as a program reading it and a person at a terminal see it: the answer
 * once whatever the retries, a closed pipe that ends the run quietly, one JSON result for every
 * failure, and the habits users bring from other agents (`-p`, stdin beside a prompt).
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { type MockReply, type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import {
  childEnv,
  type CliRun,
  MOD,
  runCli as runCliAs,
  tempDir,
  Terminal,
} from "./terminal_support.ts";

/** Runs the CLI with `openai/test` against `server` (when given). */
function runCli(
  args: string[],
  options: {
    server?: MockServer;
    stdin?: string | "held open";
    env?: Record<string, string>;
    cwd?: string;
  } = {},
): Promise<CliRun> {
  return runCliAs(["-m", "openai/test", ...args], {
    ...options,
    env: {
      OPENAI_API_KEY: "sk-test",
      ...(options.server ? { OPENAI_BASE_URL: options.server.url } : {}),
      ...options.env,
    },
  });
}

/** The last user message of a request the server got. */
function lastUser(server: MockServer, index: number): string {
  const messages = server.requests[index].body.messages as Array<{ role: string; content: string }>;
  return messages.filter((message) => message.role === "user").at(-1)!.content;
}

/** A first attempt cut off mid-answer, then the whole answer. */
const CUT_THEN_WHOLE: MockReply[] = [
  { text: ["Hello ", "wor", "ld."], resetAfter: 2 },
  { text: ["Hello ", "world."] },
];

Deno.test("cli output: to a pipe, a stream cut mid-way and retried prints the answer once", async () => {
  await using server = startMockOpenAIServer({ replies: CUT_THEN_WHOLE });
  const run = await runCli(["say hello"], { server });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, "Hello world.\n");
  assert.match(run.stderr, /↻ retry 1 in/);
  assert.equal(server.requests.length, 2);
});

Deno.test("cli output: on a terminal, the answer streams and a discarded attempt is marked", async () => {
  await using server = startMockOpenAIServer({ replies: CUT_THEN_WHOLE });
  const cwd = await tempDir();
  await using terminal = await Terminal.start(
    [Deno.execPath(), "run", "-A", MOD, "-m", "openai/test", "say hello"],
    await childEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }),
    cwd,
  );
  const screen = await terminal.waitFor(/\[exit \d+\]/);
  assert.match(screen, /\[exit 0\]/);
  assert.match(
    screen,
    /Hello[^\n]*\n↻ retry 1 in [\d.]+ s: .*\(the answer above was cut off: discarded\)\nHello world\.\n/,
  );
});

/** Runs the CLI with its stdout read by `head -1`: what head printed, the exit code, stderr. */
async function throughHead(
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ first: string; code: number; stderr: string }> {
  const errors = join(await tempDir(), "stderr.txt");
  const shell = await new Deno.Command("bash", {
    args: [
      "-c",
      `"$0" run -A "$1" -m openai/test "\${@:3}" 2>"$2" | head -1; echo "exit=\${PIPESTATUS[0]}"`,
      Deno.execPath(),
      MOD,
      errors,
      ...args,
    ],
    env,
    clearEnv: true,
    cwd,
    stdout: "piped",
  }).output();
  const lines = new TextDecoder().decode(shell.stdout).trim().split("\n");
  return {
    first: lines[0],
    code: Number(lines.at(-1)!.replace("exit=", "")),
    stderr: await Deno.readTextFile(errors),
  };
}

Deno.test("cli output: a reader that closes the pipe ends the run quietly, and the session is kept", async () => {
  await using server = startMockOpenAIServer({
    replies: [{ text: Array.from({ length: 400 }, (_, i) => `w${i} `), eventDelayMs: 10 }],
  });
  const cwd = await tempDir();
  const env = await childEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url });
  // `head -1` reads the first event and goes; the agent's next write finds the pipe closed.
  const streamed = await throughHead(["--output", "stream-json", "long answer"], env, cwd);
  assert.equal(JSON.parse(streamed.first).type, "start");
  assert.doesNotMatch(streamed.stderr, /BrokenPipe|Uncaught|error/i);
  // Ended as an interrupted run ends, before the model's answer was done.
  assert.equal(streamed.code, 130, streamed.stderr);

  // The session was saved: it is listed with what was asked.
  const sessions = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "--sessions"],
    env,
    clearEnv: true,
    cwd,
    stdout: "piped",
  }).output();
  assert.match(new TextDecoder().decode(sessions.stdout), /long answer\n/);

  // A long text answer, and --help, to a reader that takes one line: quiet, and done.
  await using long = startMockOpenAIServer({ replies: [{ text: "line\n".repeat(50_000) }] });
  const text = await throughHead(["a question"], { ...env, OPENAI_BASE_URL: long.url }, cwd);
  assert.equal(text.first, "line");
  assert.doesNotMatch(text.stderr, /BrokenPipe|Uncaught|error/i);
  assert.equal(text.code, 0, text.stderr);
  const help = await throughHead(["--help"], env, cwd);
  assert.match(help.first, /^agent \d/);
  assert.equal(help.code, 0, help.stderr);
  assert.equal(help.stderr, "");
});

Deno.test("cli output: with json and stream-json, every failure is one result object and an exit code", async () => {
  const cases: Array<[string[], number, RegExp, Record<string, string>?]> = [
    [["--no-such-flag", "x"], 2, /Unknown option --no-such-flag/],
    [["--max-turns", "many", "x"], 2, /--max-turns must be a whole number/],
    [["hi"], 1, /No API key for openai: set OPENAI_API_KEY/, { OPENAI_API_KEY: "" }],
    [
      ["--base-url", "http://127.0.0.1:1/v1", "hi"],
      1,
      /Could not reach openai at http:\/\/127\.0\.0\.1:1\/v1/,
    ],
  ];
  for (const output of ["json", "stream-json"]) {
    for (const [args, code, message, env] of cases) {
      const run = await runCli(["--output", output, ...args], { env });
      assert.equal(run.code, code, `${args.join(" ")}: ${run.stderr}`);
      const lines = run.stdout.trim().split("\n");
      const result = JSON.parse(lines.at(-1)!);
      assert.equal(result.type, "result");
      assert.equal(result.status, "error");
      assert.match(result.error.message, message);
      if (output === "json") assert.equal(lines.length, 1, run.stdout);
      for (const line of lines) JSON.parse(line);
    }
  }
});

Deno.test("cli output: the json result carries the cost beside the usage, and whole milliseconds", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ text: "42" }) });
  const priced = await runCli(["-m", "openai/gpt-4.1-mini", "--output", "json", "answer"], {
    server,
  });
  assert.equal(priced.code, 0, priced.stderr);
  const result = JSON.parse(priced.stdout);
  assert.ok(result.costUsd > 0, priced.stdout);
  const keys = Object.keys(result);
  assert.equal(keys.indexOf("costUsd"), keys.indexOf("usage") + 1, "beside the usage");
  assert.ok(Number.isInteger(result.durationMs), `${result.durationMs} ms`);

  const unpriced = JSON.parse((await runCli(["--output", "json", "answer"], { server })).stdout);
  assert.equal(unpriced.costUsd, undefined, "no price known, no cost made up");
  assert.ok(Number.isInteger(unpriced.durationMs));
});

Deno.test("cli output: -p runs one task headless, with the prompt from the arguments or stdin", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ text: "done" }) });
  const given = await runCli(["-p", "from the argument"], { server });
  assert.equal(given.code, 0, given.stderr);
  assert.equal(given.stdout, "done\n");
  assert.equal(lastUser(server, 0), "from the argument");

  const piped = await runCli(["--print"], { server, stdin: "from stdin\n" });
  assert.equal(piped.code, 0, piped.stderr);
  assert.equal(lastUser(server, 1), "from stdin");

  // On a terminal, -p without a prompt is a usage error, not an interactive session.
  await using terminal = await Terminal.start(
    [Deno.execPath(), "run", "-A", MOD, "-m", "openai/test", "-p"],
    await childEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }),
    await tempDir(),
  );
  const screen = await terminal.waitFor(/\[exit \d+\]/);
  assert.match(screen, /agent: no prompt: give one as an argument or on stdin.*\n\[exit 2\]/);
});

Deno.test("cli output: stdin piped beside a prompt reaches the model first, then the prompt", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ text: "reviewed" }) });
  const run = await runCli(["review this diff"], {
    server,
    stdin: "--- a/x.ts\n+++ b/x.ts\n-old\n+new\n",
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(
    lastUser(server, 0),
    "<stdin>\n--- a/x.ts\n+++ b/x.ts\n-old\n+new\n</stdin>\n\nreview this diff",
  );

  // A caller that leaves stdin open and silent does not make the agent wait forever.
  const held = await runCli(["just the prompt"], { server, stdin: "held open" });
  assert.equal(held.code, 0, held.stderr);
  assert.equal(lastUser(server, 1), "just the prompt");
  assert.match(held.stderr, /stdin gave nothing in 2 s: .*< \/dev\/null/);

  // A socket, as Node's child_process gives its children, is read too.
  const script = join(await tempDir(), "spawn.mjs");
  await Deno.writeTextFile(
    script,
    `import { spawn } from "node:child_process";
const child = spawn(process.execPath, ["run", "-A", ${JSON.stringify(MOD)}, "-m", "openai/test",
  "summarize"], { stdio: ["pipe", "inherit", "inherit"] });
child.stdin.end("context from a socket");
child.on("exit", (code) => process.exit(code ?? 1));
`,
  );
  const spawned = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script],
    env: await childEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(spawned.code, 0, new TextDecoder().decode(spawned.stderr));
  assert.equal(lastUser(server, 2), "<stdin>\ncontext from a socket\n</stdin>\n\nsummarize");

  // More than a model can read is refused, not read into memory without end.
  const flood = await new Deno.Command("bash", {
    args: ["-c", `yes | "$0" run -A "$1" -m openai/test hi`, Deno.execPath(), MOD],
    env: await childEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }),
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(flood.code, 2);
  assert.match(new TextDecoder().decode(flood.stderr), /stdin gave more than 4 MiB/);
  assert.equal(server.requests.length, 3, "nothing was sent");
});

Deno.test("cli output: a host name that does not resolve, or a blocked port, fails at once with a hint", async () => {
  const cases: Array<[string, RegExp]> = [
    [
      "http://no-such-host.invalid/v1",
      /Could not reach openai at http:\/\/no-such-host\.invalid\/v1: .*The host name does not resolve: is the base URL right, and is the network up\?/,
    ],
    [
      "http://127.0.0.1:6000/v1",
      /Could not reach openai at http:\/\/127\.0\.0\.1:6000\/v1: .*Fetch never connects to that port/,
    ],
  ];
  for (const [url, message] of cases) {
    const run = await runCli(["--base-url", url, "hi"]);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, message);
    assert.doesNotMatch(run.stderr, /retry/, "not tried again");
  }
});

Deno.test("cli output: --help shows the user's settings file, data directory and providers", async () => {
  const home = await tempDir("agent_help_home_");
  const config = join(home, "conf");
  await Deno.mkdir(config, { recursive: true });
  await Deno.writeTextFile(
    join(config, "settings.json"),
    JSON.stringify({ providers: { corp: { baseURL: "https://llm.corp.example/v1" } } }),
  );
  const own = await runCli(["--help"], {
    env: { HOME: home, AGENT_CONFIG_DIR: config, AGENT_DATA_DIR: join(home, "data") },
  });
  assert.equal(own.code, 0, own.stderr);
  assert.ok(own.stdout.includes(`Settings: ${join(config, "settings.json")}\n`), own.stdout);
  assert.ok(own.stdout.includes(`Sessions, memory and input history: ${join(home, "data")}\n`));
  assert.match(own.stdout, /Providers: openai, anthropic, .*; yours: corp\./);
  assert.doesNotMatch(own.stdout, /~\/\.config/, "the real path, not the default one");

  const xdg = await runCli(["--help"], {
    env: { HOME: home, XDG_CONFIG_HOME: join(home, "xdg") },
  });
  assert.ok(xdg.stdout.includes(`Settings: ${join(home, "xdg", "agent", "settings.json")}\n`));
});

Deno.test("cli output: the README's synopsis lists every flag --help lists", async () => {
  const help = (await runCli(["--help"])).stdout;
  const flags = [...help.matchAll(/^ +(?:-\w, )?(--[\w-]+)/gm)].map((match) => match[1]);
  assert.ok(flags.length > 25, flags.join(" "));
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  const synopsis = readme.slice(readme.indexOf("### The command line"));
  const block = synopsis.slice(0, synopsis.indexOf("```", synopsis.indexOf("```") + 3));
  const missing = flags.filter((flag) => !new RegExp(`${flag}\\b`).test(block));
  assert.deepEqual(missing, []);
});

Deno.test("cli output: a hint never names wider permissions than the run was given", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ text: "ok" }) });
  const env = await childEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url });
  const cwd = await tempDir();
  // Deno lets only a run granted everything read its own command line: this one is not.
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-net=127.0.0.1",
      MOD,
      "-m",
      "openai/test",
      "hi",
    ],
    env,
    clearEnv: true,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, stderr);
  assert.match(stderr, /session [0-9a-f]{8} \(go on with: the same command with -c\)\n/);
  assert.doesNotMatch(stderr, / -A\b/);
});
