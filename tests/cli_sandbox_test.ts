/**
 * The CLI's sandbox on real bubblewrap: `--sandbox auto|required|off`, the settings, what the
 * `start` event reports, and what a command run by the model can and cannot do.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type MockReply, type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { resolveCliSandbox } from "../lib/cli/sandbox.ts";
import { detectSandbox } from "../lib/sandbox/detect.ts";
import { EVERYTHING_RUN } from "./mcp_support.ts";

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));
Deno.env.set("AGENT_DATA_DIR", await Deno.makeTempDir({ prefix: "agent_test_data_" }));

const found = await detectSandbox();
const ignore = !found.available;
if (ignore) console.warn(`sandbox tests skipped: ${found.reason}`);

// deno-lint-ignore no-explicit-any
type Event = { type: string } & Record<string, any>;

interface CliRun {
  code: number;
  stderr: string;
  events: Event[];
}

async function runCli(
  server: MockServer,
  args: string[],
  options: { permissions?: string[]; env?: Record<string, string> } = {},
): Promise<CliRun> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...(options.permissions ?? ["-A"]),
      MOD,
      "-m",
      "openai/test",
      "--output",
      "stream-json",
      ...args,
    ],
    env: {
      OPENAI_API_KEY: "sk-sandbox-test",
      OPENAI_BASE_URL: server.url,
      AGENT_CONFIG_DIR: await Deno.makeTempDir(),
      NO_COLOR: "1",
      ...options.env,
    },
    stdin: "null",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  return {
    code: output.code,
    stderr: new TextDecoder().decode(output.stderr),
    events: stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line)),
  };
}

/** A model that runs each command with `bash`, one per turn, then says it is done. */
function commands(...lines: string[]): MockReply[] {
  return [
    ...lines.map((command) => ({ toolCalls: [{ name: "bash", arguments: { command } }] })),
    { text: "done" },
  ];
}

function outputs(run: CliRun): string[] {
  return run.events.filter((e) => e.type === "tool_result").map((e) => e.output as string);
}

async function tempDir(): Promise<string> {
  return await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_sandbox_cli_" }));
}

Deno.test({
  name: "cli sandbox: required confines commands to the workspace, without the keys",
  ignore,
  async fn() {
    const dir = await tempDir();
    // Outside the workspace, and not under /tmp (which is private inside the sandbox).
    const outside = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "agent_outside_" });
    await using server = startMockOpenAIServer({
      replies: commands(
        `echo inside > made.txt && cat made.txt`,
        `echo escaped > ${outside}/escaped.txt`,
        `echo "key=\${OPENAI_API_KEY:-unset}"; grep -c sk-sandbox-test /proc/1/environ || true`,
        `git -c user.email=a@b -c user.name=a commit -q --allow-empty -m first ` +
          `&& git log --oneline | wc -l`,
      ),
    });
    // The repository is the user's to make; commits inside the sandbox are the command's.
    assert.ok((await new Deno.Command("git", { args: ["init", "-q"], cwd: dir }).output()).success);
    const run = await runCli(server, ["--cwd", dir, "--sandbox", "required", "go"]);
    assert.equal(run.code, 0, run.stderr);
    const start = run.events[0];
    assert.equal(start.type, "start");
    assert.deepEqual(start.sandbox, {
      kind: "bubblewrap",
      mode: "required",
      net: true,
      writable: [dir],
    });
    const [made, escaped, key, git] = outputs(run);
    assert.match(made, /^inside\n\[exit code 0\]/);
    assert.equal(await Deno.readTextFile(join(dir, "made.txt")), "inside\n");
    assert.match(escaped, /Read-only file system/);
    assert.equal(await Deno.stat(join(outside, "escaped.txt")).catch(() => undefined), undefined);
    assert.match(key, /^key=unset\n0\n/);
    assert.match(git, /^1\n\[exit code 0\]/);
    await Deno.remove(outside, { recursive: true });
    // The model is told where it may write.
    const tools = server.requests[0].body.tools as {
      function: { name: string; description: string };
    }[];
    const bash = tools.find((tool) => tool.function.name === "bash")!;
    assert.match(bash.function.description, /sandbox/);
  },
});

Deno.test({
  name: "cli sandbox: without the net capability a command cannot reach the loopback server",
  ignore,
  async fn() {
    const dir = await tempDir();
    await using server = startMockOpenAIServer({ replies: () => ({ text: "unused" }) });
    const port = new URL(server.url).port;
    const probe =
      `(exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo reached || echo refused`;
    await using scripted = startMockOpenAIServer({ replies: commands(probe) });
    // Deno lets the agent reach 127.0.0.1 only: not the whole network, so commands get none.
    const narrow = await runCli(scripted, ["--cwd", dir, "go"], {
      permissions: [
        "--allow-read",
        "--allow-write",
        "--allow-run",
        "--allow-env",
        "--allow-net=127.0.0.1",
      ],
    });
    assert.equal(narrow.code, 0, narrow.stderr);
    assert.equal(narrow.events[0].sandbox.kind, "bubblewrap");
    assert.equal(narrow.events[0].sandbox.net, false);
    assert.match(outputs(narrow)[0], /^refused\n/);

    // With the whole network granted, the same command gets through.
    await using again = startMockOpenAIServer({ replies: commands(probe) });
    const wide = await runCli(again, ["--cwd", dir, "go"]);
    assert.equal(wide.events[0].sandbox.net, true);
    assert.match(outputs(wide)[0], /^reached\n/);
  },
});

Deno.test({
  name: "cli sandbox: off runs commands unconfined, and the start event says so",
  ignore,
  async fn() {
    const dir = await tempDir();
    const outside = await tempDir();
    await using server = startMockOpenAIServer({
      replies: commands(`echo "key=$OPENAI_API_KEY"; echo out > ${outside}/out.txt`),
    });
    const run = await runCli(server, ["--cwd", dir, "--sandbox", "off", "go"]);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(run.events[0].sandbox, { kind: "none", mode: "off", reason: "turned off" });
    // Unconfined, the command had the key (the model saw it); what is printed is redacted.
    assert.match(JSON.stringify(server.requests[1].body), /key=sk-sandbox-test\\n/);
    assert.match(outputs(run)[0], /^key=\[redacted\]\n/);
    assert.equal(await Deno.readTextFile(join(outside, "out.txt")), "out\n");
  },
});

/** A PATH with bash, git and coreutils but no bwrap. */
async function pathWithoutBwrap(): Promise<string> {
  const bin = await Deno.makeTempDir({ prefix: "agent_nobwrap_" });
  for (const name of ["bash", "sh", "echo", "cat", "git", "touch", "ls"]) {
    for (const dir of ["/usr/bin", "/bin"]) {
      try {
        await Deno.symlink(await Deno.realPath(join(dir, name)), join(bin, name));
        break;
      } catch {
        // Not in this directory.
      }
    }
  }
  return bin;
}

Deno.test("cli sandbox: without bubblewrap, required refuses commands and auto says so once", async () => {
  const dir = await tempDir();
  const env = { PATH: await pathWithoutBwrap() };
  await using strict = startMockOpenAIServer({ replies: commands("touch ran.txt") });
  const refused = await runCli(strict, ["--cwd", dir, "--sandbox", "required", "go"], { env });
  assert.equal(refused.code, 0, refused.stderr);
  assert.equal(refused.events[0].sandbox.kind, "none");
  assert.equal(refused.events[0].sandbox.mode, "required");
  const result = refused.events.find((e) => e.type === "tool_result")!;
  assert.equal(result.isError, true);
  assert.match(result.output, /The sandbox is required, but .*bwrap/);
  assert.equal(await Deno.stat(join(dir, "ran.txt")).catch(() => undefined), undefined);
  assert.match(refused.stderr, /shell commands are refused/);

  await using lenient = startMockOpenAIServer({
    replies: commands("touch one.txt", "touch two.txt"),
  });
  const warned = await runCli(lenient, ["--cwd", dir, "go"], { env });
  assert.equal(warned.code, 0, warned.stderr);
  assert.deepEqual(outputs(warned), ["[exit code 0]", "[exit code 0]"]);
  assert.equal(warned.events[0].sandbox.mode, "auto");
  assert.equal(warned.stderr.match(/commands run without a sandbox/g)?.length, 1, warned.stderr);
});

Deno.test({
  name: "cli sandbox: the user settings set the mode; a project may tighten it, not loosen it",
  ignore,
  async fn() {
    const dir = await tempDir();
    const config = await Deno.makeTempDir();
    await Deno.writeTextFile(
      join(config, "settings.json"),
      JSON.stringify({ sandbox: { mode: "off" } }),
    );
    await using server = startMockOpenAIServer({ replies: () => ({ text: "ok" }) });
    const off = await runCli(server, ["--cwd", dir, "hi"], { env: { AGENT_CONFIG_DIR: config } });
    assert.equal(off.events[0].sandbox.kind, "none");
    assert.equal(off.events[0].sandbox.mode, "off");

    await Deno.mkdir(join(dir, ".agent"));
    await Deno.writeTextFile(
      join(dir, ".agent", "settings.json"),
      JSON.stringify({ sandbox: "required" }),
    );
    const tightened = await runCli(server, ["--cwd", dir, "hi"], {
      env: { AGENT_CONFIG_DIR: config },
    });
    assert.equal(tightened.events[0].sandbox.kind, "bubblewrap");
    assert.equal(tightened.events[0].sandbox.mode, "required");

    await Deno.writeTextFile(
      join(dir, ".agent", "settings.json"),
      JSON.stringify({ sandbox: { mode: "off", writable: ["/"] } }),
    );
    const loosened = await runCli(server, ["--cwd", dir, "hi"]);
    assert.equal(loosened.events[0].sandbox.kind, "bubblewrap");
    assert.deepEqual(loosened.events[0].sandbox.writable, [dir]);
    assert.match(loosened.stderr, /"sandbox" ignored/);
  },
});

Deno.test("cli sandbox: a bad --sandbox is a usage error", async () => {
  await using server = startMockOpenAIServer({ replies: [] });
  const run = await runCli(server, ["--sandbox", "maybe", "hi"]);
  assert.equal(run.code, 2);
  assert.match(run.stderr, /--sandbox must be auto, required or off, got "maybe"/);
});

Deno.test("cli sandbox: writable and hidden paths of the settings, ~ expanded", async () => {
  const sandbox = await resolveCliSandbox({
    settings: { mode: "auto", writable: ["~/.cache/deno", "build"], hide: ["~/.config/gh"] },
    cwd: "/w",
    roots: ["/w"],
    net: false,
    hide: ["/home/ada/.local/share/agent"],
    env: (name) => name === "HOME" ? "/home/ada" : undefined,
    runs: true,
    bwrap: found.available ? found.path : "/nonexistent/bwrap",
  });
  if (found.available) {
    assert.deepEqual(sandbox.bash, {
      bwrap: found.path,
      writable: ["/w", "/home/ada/.cache/deno", "/w/build"],
      net: false,
      hide: ["/home/ada/.local/share/agent", "/home/ada/.config/agent", "/home/ada/.config/gh"],
      readable: ["/home/ada/.cache/deno"],
    });
    assert.equal(sandbox.notice, undefined);
  } else {
    assert.equal(sandbox.bash, undefined);
    assert.match(sandbox.notice!, /commands run without a sandbox/);
  }
  const none = await resolveCliSandbox({
    flag: "required",
    cwd: "/w",
    roots: ["/w"],
    net: true,
    hide: [],
    env: () => undefined,
    runs: false,
  });
  assert.deepEqual(none.report, {
    kind: "none",
    mode: "required",
    reason: "no command runs: Deno does not grant run",
  });
  assert.equal(none.mcpAll, true);
});

Deno.test({
  name: "cli sandbox: an MCP server from npm runs inside the sandbox when its config asks",
  ignore,
  async fn() {
    const dir = await tempDir();
    const server = {
      command: Deno.execPath(),
      args: [...EVERYTHING_RUN, "stdio"],
      sandbox: true,
    };
    await Deno.writeTextFile(
      join(dir, ".mcp.json"),
      JSON.stringify({ mcpServers: { everything: server } }),
    );
    const echo: MockReply[] = [
      { toolCalls: [{ name: "mcp__everything__echo", arguments: { message: "from inside" } }] },
      { text: "done" },
    ];
    await using confined = startMockOpenAIServer({ replies: echo });
    // The project's own server: it runs once the project is trusted.
    const run = await runCli(confined, ["--cwd", dir, "--trust-project", "go"]);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(run.events[0].tools.includes("mcp__everything__echo"), run.stderr);
    assert.match(outputs(run)[0], /from inside/);

    // With the sandbox off, a server that asks for it is not started unconfined.
    await using off = startMockOpenAIServer({ replies: () => ({ text: "ok" }) });
    const refused = await runCli(off, ["--cwd", dir, "--trust-project", "--sandbox", "off", "go"]);
    assert.equal(refused.code, 0, refused.stderr);
    assert.ok(!refused.events[0].tools.includes("mcp__everything__echo"));
    assert.match(
      refused.stderr,
      /MCP server "everything" failed to start: it asks for the sandbox/,
    );
  },
});
