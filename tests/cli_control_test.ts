/**
 * The user's say through the real CLI: permission rules from flags and settings, permission
 * modes, and hook commands from the settings.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type MockReply, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { EVERYTHING_RUN } from "./mcp_support.ts";

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));
// Sessions and memory of these runs go to a directory of their own, not the user's.
Deno.env.set("AGENT_DATA_DIR", await Deno.makeTempDir({ prefix: "agent_test_data_" }));

// deno-lint-ignore no-explicit-any
type Event = { type: string } & Record<string, any>;

async function runCli(
  replies: MockReply[],
  args: string[],
  setup: (dir: string) => Promise<void> = async () => {},
) {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_control_" }));
  const config = await Deno.makeTempDir({ prefix: "agent_config_" });
  await setup(dir);
  await using server = startMockOpenAIServer({ replies });
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      MOD,
      "-m",
      "openai/test",
      // These runs test what a project's settings and .mcp.json do once it is trusted.
      "--trust-project",
      "--cwd",
      dir,
      "--no-session",
      "--output",
      "stream-json",
      ...args,
      "go",
    ],
    env: {
      OPENAI_API_KEY: "k",
      OPENAI_BASE_URL: server.url,
      AGENT_CONFIG_DIR: config,
      NO_COLOR: "1",
    },
    stdin: "null",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  const events: Event[] = stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line));
  const results = new Map(
    events.filter((e) => e.type === "tool_result").map((e) => [e.id as string, e]),
  );
  return {
    code: output.code,
    stderr: new TextDecoder().decode(output.stderr),
    events,
    result: (id: string) => results.get(id)!,
    requests: server.requests,
    dir,
  };
}

const bash = (command: string, id?: string) => ({ name: "bash", arguments: { command }, id });

Deno.test("cli rules: a denied command stays denied inside a compound line or behind a wrapper", async () => {
  const lines = [
    "ls && rm -rf victim",
    "echo $(rm -rf victim)",
    "env X=1 timeout 5 rm -rf victim",
    "ls | xargs rm -rf",
  ];
  const run = await runCli(
    [{ toolCalls: lines.map((line, i) => bash(line, `c${i}`)) }, { text: "done" }],
    ["--deny", "bash(rm *)"],
    (dir) => Deno.mkdir(join(dir, "victim")),
  );
  assert.equal(run.code, 0, run.stderr);
  for (const [i, line] of lines.entries()) {
    const result = run.result(`c${i}`);
    assert.equal(result.isError, true, line);
    assert.match(
      result.output,
      /^Error: permission denied: denied by --deny "bash\(rm \*\)"/,
      line,
    );
  }
  assert.ok((await Deno.stat(join(run.dir, "victim"))).isDirectory, "nothing was removed");
});

Deno.test("cli rules: allow narrows nothing it does not match; ask refuses in a headless run", async () => {
  const run = await runCli(
    [{ toolCalls: [bash("echo fine", "a"), bash("git push", "b")] }, { text: "done" }],
    ["--ask", "bash(git push*)"],
  );
  assert.equal(run.result("a").output, "fine\n[exit code 0]");
  assert.equal(run.result("b").isError, true);
  assert.match(
    run.result("b").output,
    /permission denied: .*--ask "bash\(git push\*\)".*nobody can answer in a headless run/,
  );
});

Deno.test("cli rules: the settings' lists apply, write rules match paths", async () => {
  const run = await runCli(
    [
      {
        toolCalls: [
          { name: "write", arguments: { path: "secrets/key.txt", content: "x" }, id: "s" },
          { name: "write", arguments: { path: "src/ok.txt", content: "x" }, id: "o" },
        ],
      },
      { text: "done" },
    ],
    [],
    async (dir) => {
      await Deno.mkdir(join(dir, ".agent"));
      await Deno.writeTextFile(
        join(dir, ".agent", "settings.json"),
        JSON.stringify({ permissions: { deny: ["write(secrets/**)"] } }),
      );
    },
  );
  assert.match(
    run.result("s").output,
    /permission denied: denied by "write\(secrets\/\*\*\)" in the settings' permissions\.deny: "secrets\/key\.txt"/,
  );
  assert.equal(run.result("o").isError, false);
  assert.equal(await Deno.readTextFile(join(run.dir, "src", "ok.txt")), "x");
});

Deno.test("cli modes: plan mode only looks, and tells the model so", async () => {
  const run = await runCli(
    [
      {
        toolCalls: [
          { name: "write", arguments: { path: "a.txt", content: "x" }, id: "w" },
          { name: "ls", arguments: {}, id: "l" },
        ],
      },
      { text: "Here is my plan." },
    ],
    ["--permission-mode", "plan"],
  );
  assert.match(
    run.result("w").output,
    /permission denied: plan mode only looks: "write" would change something/,
  );
  assert.equal(run.result("l").isError, false);
  const sent = run.requests[0].body.messages as Array<{ role: string; content: string }>;
  assert.match(sent.at(-1)!.content, /^\[Plan mode\]/);
  await assert.rejects(() => Deno.stat(join(run.dir, "a.txt")));
});

Deno.test("cli hooks: exit 2 blocks with stderr shown to the model; JSON on stdout changes the call", async () => {
  const run = await runCli(
    [{ toolCalls: [bash("echo one", "x"), bash("echo two", "y")] }, { text: "done" }],
    [],
    async (dir) => {
      await Deno.mkdir(join(dir, ".agent"));
      await Deno.writeTextFile(
        join(dir, "guard.sh"),
        `input=$(cat)\ncase "$input" in\n  *'echo one'*) echo "no echoing one here" >&2; exit 2;;\n` +
          `  *) echo '{"input":{"command":"echo rewritten"}}';;\nesac\n`,
      );
      await Deno.writeTextFile(
        join(dir, ".agent", "settings.json"),
        JSON.stringify({
          hooks: {
            beforeToolCall: [{ matcher: "bash", command: "sh guard.sh" }],
            afterToolCall: [{
              matcher: "bash",
              command: `cat > /dev/null; echo '{"output":"checked by hook"}'`,
            }],
          },
        }),
      );
    },
  );
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.result("x").output, "Error: refused by a hook: no echoing one here");
  assert.equal(run.result("y").output, "checked by hook");
  const sent = run.requests[1].body.messages as Array<{ role: string; content: string }>;
  assert.equal(
    sent.filter((m) => m.role === "tool")[0].content,
    "Error: refused by a hook: no echoing one here",
  );
});

Deno.test("cli rules: a rule that does not parse is a usage error", async () => {
  const run = await runCli([], ["--deny", "bash(rm *"]);
  assert.equal(run.code, 2);
  assert.match(run.stderr, /^agent: Invalid permission rule "bash\(rm \*" \(--deny\): /m);
  assert.equal(run.stderr.split("--deny").length, 2, "the flag is named once");
});

Deno.test("cli mcp: a project's .mcp.json server gives the agent its tools", async () => {
  const run = await runCli(
    [
      {
        toolCalls: [{
          name: "mcp__everything__echo",
          arguments: { message: "hello over MCP" },
          id: "m",
        }],
      },
      { text: "done" },
    ],
    ["--tools", "read,mcp__everything__echo"],
    async (dir) => {
      await Deno.writeTextFile(
        join(dir, ".mcp.json"),
        JSON.stringify({
          mcpServers: {
            everything: {
              command: Deno.execPath(),
              args: [...EVERYTHING_RUN, "stdio"],
            },
          },
        }),
      );
    },
  );
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.events[0].tools, ["read", "mcp__everything__echo"]);
  assert.equal(run.result("m").isError, false);
  assert.match(run.result("m").output, /hello over MCP/);
  const tools = run.requests[0].body.tools as Array<
    { function: { name: string; parameters: { properties: object } } }
  >;
  assert.ok("message" in tools[1].function.parameters.properties);
});
