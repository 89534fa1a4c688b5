/**
 * Permission rules that cannot be walked around, through the real CLI: a scripted model issues
 * the calls that used to get past `--deny` (a program fed to a shell as data, a runner in front
 * of the command, a symlink into a denied directory, a search over its parent, a redirect to a
 * denied host), and each is refused with nothing run, read, written or fetched.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { type MockReply, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { denoDir, MOD, tempDir } from "./terminal_support.ts";

// deno-lint-ignore no-explicit-any
type Event = { type: string } & Record<string, any>;

/**
 * One headless run in `cwd` (`--output stream-json`, every permission granted) of a model that
 * makes `calls` in one turn, then answers; with a HOME and data directory of its own, removed
 * after.
 */
async function runWith(
  cwd: string,
  calls: { name: string; arguments: Record<string, unknown> }[],
  args: string[],
): Promise<{ code: number; stderr: string; results: Event[] }> {
  const replies: MockReply[] = [{ toolCalls: calls }, { text: "done" }];
  await using server = startMockOpenAIServer({ replies });
  const home = await tempDir("agent_home_");
  const data = await tempDir("agent_data_");
  try {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MOD, "-m", "openai/test", "--output", "stream-json", ...args, "go"],
      cwd,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: home,
        AGENT_DATA_DIR: data,
        DENO_DIR: await denoDir(),
        NO_COLOR: "1",
        OPENAI_API_KEY: "sk-rules-test",
        OPENAI_BASE_URL: server.url,
      },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const events: Event[] = new TextDecoder().decode(output.stdout).trim().split("\n")
      .filter(Boolean).map((line) => JSON.parse(line));
    // The results in the order of the calls.
    const results = events.filter((event) => event.type === "tool_call").map((call) =>
      events.find((event) => event.type === "tool_result" && event.id === call.id)!
    );
    return { code: output.code, stderr: new TextDecoder().decode(output.stderr), results };
  } finally {
    await Deno.remove(home, { recursive: true });
    await Deno.remove(data, { recursive: true });
  }
}

Deno.test('cli rules: --deny "bash(rm *)" refuses rm fed to a shell as data or behind a runner', async () => {
  const cwd = await tempDir("agent_rules_cli_");
  try {
    const lines = [
      "bash /dev/stdin <<< 'rm -f victim1'",
      "bash <<'EOF'\nrm -f victim2\nEOF\n",
      "bash <(echo rm -f victim3)",
      "source <(echo rm -f victim4)",
      ". <(echo rm -f victim5)",
      "taskset 1 rm -f victim6",
      "flock lock rm -f victim7",
      "script -qc 'rm -f victim8' /dev/null",
      "setpriv --nnp rm -f victim9",
      "chrt -o 0 rm -f victim10",
      "nice -n 5 timeout -k 1 10 rm -f victim11",
    ];
    const victims = lines.map((_, index) => join(cwd, `victim${index + 1}`));
    for (const victim of victims) await Deno.writeTextFile(victim, "keep me");
    const calls = lines.map((command) => ({ name: "bash", arguments: { command } }));
    const run = await runWith(cwd, calls, ["--deny", "bash(rm *)"]);
    assert.equal(run.code, 0, run.stderr);
    for (const [index, result] of run.results.entries()) {
      assert.equal(result.isError, true, `${lines[index]}: ${result.output}`);
      assert.match(result.output, /^Error: permission denied: /, lines[index]);
    }
    // Seen inside: denied by the rule; not seen: refused, as nobody can be asked.
    assert.match(run.results[0].output, /denied by --deny "bash\(rm \*\)": "rm -f victim1"/);
    assert.match(run.results[2].output, /cannot be checked.*nobody can answer in a headless run/);
    for (const victim of victims) assert.equal(await Deno.readTextFile(victim), "keep me", victim);
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
});

Deno.test("cli rules: read and write rules on secrets/ hold through a symlink and over the parent", async () => {
  const cwd = await tempDir("agent_rules_cli_");
  try {
    await Deno.mkdir(join(cwd, "secrets"));
    await Deno.writeTextFile(join(cwd, "secrets", "key.txt"), "TOPSECRET-CONTENT");
    await Deno.writeTextFile(join(cwd, "notes.txt"), "nothing to see\n");
    await Deno.symlink(join(cwd, "secrets", "key.txt"), join(cwd, "link.txt"));
    const calls = [
      { name: "read", arguments: { path: "link.txt" } },
      { name: "grep", arguments: { pattern: "TOPSECRET" } },
      { name: "glob", arguments: { pattern: "**/*" } },
      { name: "ls", arguments: {} },
      { name: "write", arguments: { path: "link.txt", content: "overwritten" } },
      { name: "edit", arguments: { path: "link.txt", old_string: "TOP", new_string: "NO" } },
    ];
    const run = await runWith(cwd, calls, [
      "--deny",
      "read(secrets/**)",
      "--deny",
      "write(secrets/**)",
    ]);
    assert.equal(run.code, 0, run.stderr);
    const [read, grep, glob, ls, write, edit] = run.results;
    for (const result of run.results) {
      assert.doesNotMatch(result.output, /TOPSECRET-CONTENT/, result.output);
    }
    for (const walked of [grep, glob, ls]) assert.doesNotMatch(walked.output, /key\.txt|link/);
    for (const refused of [read, write, edit]) {
      assert.equal(refused.isError, true, refused.output);
      assert.match(refused.output, /^Error: permission denied: denied by --deny "(read|write)/);
    }
    assert.match(grep.output, /^No matches .*\n\(2 paths not searched: the permission rules/);
    assert.equal(
      glob.output,
      "notes.txt\n(2 paths left out: the permission rules refuse reading them)",
    );
    assert.equal(
      ls.output,
      "notes.txt  15 B\n(2 entries hidden: the permission rules refuse reading them)",
    );
    assert.equal(await Deno.readTextFile(join(cwd, "secrets", "key.txt")), "TOPSECRET-CONTENT");
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
});

Deno.test('cli rules: --deny "fetch(domain:localhost)" holds when an allowed host redirects there', async () => {
  const cwd = await tempDir("agent_rules_cli_");
  let hits = 0;
  await using denied = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
    hits++;
    return new Response("SECRET-PAGE", { headers: { "content-type": "text/plain" } });
  });
  const hop = `http://localhost:${denied.addr.port}/admin`;
  await using allowed = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response(null, { status: 302, headers: { location: hop } }),
  );
  try {
    const start = `http://127.0.0.1:${allowed.addr.port}/start`;
    const run = await runWith(cwd, [{ name: "fetch", arguments: { url: start } }], [
      "--deny",
      "fetch(domain:localhost)",
    ]);
    assert.equal(run.code, 0, run.stderr);
    const [result] = run.results;
    assert.equal(result.isError, true, result.output);
    assert.equal(
      result.output,
      `Error: ${start} redirected to ${hop}, which was not followed: permission denied: ` +
        `reaching ${hop} is denied by --deny "fetch(domain:localhost)"`,
    );
    assert.equal(hits, 0, "the denied host was reached");
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
});
