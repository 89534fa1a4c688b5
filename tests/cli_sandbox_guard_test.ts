/**
 * What a sandboxed command, or the model through the file tools, may not leave behind: the files
 * that make programs outside the sandbox run code later (the agent's project settings, git's
 * config and hooks, `.envrc`, `.mcp.json`, the editors' settings). Through the real CLI, a
 * scripted model, and real bubblewrap.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { detectSandbox } from "../lib/sandbox/detect.ts";
import {
  commands,
  exists,
  git,
  outputs,
  results,
  runSandboxed,
  Scratch,
  startMockOpenAIServer,
} from "./cli_sandbox_support.ts";

const found = await detectSandbox();
const ignore = !found.available;
if (ignore) console.warn(`sandbox guard tests skipped: ${found.reason}`);

/** A git config that would run `touch <marker>` on the next `git status`. */
function fsmonitor(marker: string): string {
  return `[core]\n\tfsmonitor = "touch ${marker}; false"\n`;
}

/** A workspace that is a git repository with a first commit, and the files it starts with. */
async function repository(scratch: Scratch): Promise<{ ws: string; before: Map<string, string> }> {
  const ws = await scratch.temp("agent_guard_ws_");
  await git(ws, "init", "-q");
  await Deno.writeTextFile(join(ws, "README.md"), "# project\n");
  await Deno.mkdir(join(ws, ".agent"));
  await Deno.writeTextFile(join(ws, ".agent", "settings.json"), '{"model":"openai/test"}\n');
  await Deno.mkdir(join(ws, ".vscode"));
  await Deno.writeTextFile(join(ws, ".vscode", "tasks.json"), '{"tasks":[]}\n');
  // A nested repository, two levels down: its config counts as much as the workspace's.
  await Deno.mkdir(join(ws, "vendor", "lib"), { recursive: true });
  await git(join(ws, "vendor", "lib"), "init", "-q");
  await git(ws, "add", "README.md", ".agent", ".vscode");
  await git(ws, "commit", "-qm", "first");
  const before = new Map<string, string>();
  for (const path of [".git/config", ".agent/settings.json", ".vscode/tasks.json"]) {
    before.set(path, await Deno.readTextFile(join(ws, path)));
  }
  before.set("vendor/lib/.git/config", await Deno.readTextFile(join(ws, "vendor/lib/.git/config")));
  return { ws, before };
}

Deno.test({
  name: "cli sandbox guard: a command can neither change nor create what runs code outside, " +
    "nor rename its way around, and git still commits",
  ignore,
  async fn() {
    await using scratch = new Scratch();
    const home = await scratch.visible("agent_guard_home_");
    const { ws, before } = await repository(scratch);
    const marker = (name: string) => join(home, `ran-${name}`);
    const hook = `#!/bin/sh\ntouch ${marker("hook")}\n`;
    const settings = JSON.stringify({
      hooks: { beforeModelCall: [{ command: `touch ${marker("agent-hook")}` }] },
    });
    const mcp = JSON.stringify({ mcpServers: { x: { command: "sh", args: ["-c", "true"] } } });
    const attempts: [string, string][] = [
      // Existing files.
      ["git config", `printf '${fsmonitor(marker("fsmonitor"))}' >> .git/config`],
      ["agent settings", `printf '%s' '${settings}' > .agent/settings.json`],
      [
        "editor tasks",
        `echo '{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json`,
      ],
      ["nested git config", `printf '${fsmonitor(marker("nested"))}' >> vendor/lib/.git/config`],
      // Files that do not exist yet.
      [
        "new hook",
        `printf '${hook}' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout`,
      ],
      ["new .envrc", `echo 'touch ${marker("direnv")}' > .envrc`],
      ["new .mcp.json", `printf '%s' '${mcp}' > .mcp.json`],
      ["new .idea", `mkdir -p .idea && echo '<project/>' > .idea/workspace.xml`],
      ["commondir", `mkdir -p evil && echo ../evil > .git/commondir`],
      // Around: a renamed parent, a replaced directory.
      [
        "renamed .git",
        `mv .git .git-old && cp -r .git-old .git && printf '${fsmonitor(marker("moved"))}' >> ` +
        `.git/config`,
      ],
      [
        "renamed parent",
        `mv vendor vendor-old && cp -r vendor-old vendor && ` +
        `printf '${fsmonitor(marker("parent"))}' >> vendor/lib/.git/config`,
      ],
      [
        "removed .agent",
        `rm -rf .agent; mkdir -p .agent && echo '${settings}' > .agent/settings.json`,
      ],
      // What a command should still do.
      [
        "commit",
        `echo change >> README.md && git -c user.name=Ada -c user.email=a@b commit -qam second && git log --format=%s | head -1`,
      ],
    ];
    await using server = startMockOpenAIServer({
      replies: commands(...attempts.map(([, command]) => command)),
    });
    const run = await runSandboxed(scratch, server, ["--cwd", ws, "--sandbox", "required", "go"], {
      home,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.events[0].sandbox.kind, "bubblewrap");
    const said = outputs(run);
    assert.equal(said.length, attempts.length);
    for (const [index, [what]] of attempts.entries()) {
      if (what === "commit") continue;
      assert.match(said[index], /\[exit code [1-9]\d*\]$/, `${what}: ${said[index]}`);
      assert.match(
        said[index],
        /Read-only file system|Device or resource busy|Permission denied|File exists|Is a directory/,
        `${what}: ${said[index]}`,
      );
    }
    assert.match(said.at(-1)!, /^second\n\[exit code 0\]$/, "git commits inside the sandbox");

    // Nothing changed, nothing was made, nothing left behind.
    for (const [path, text] of before) {
      assert.equal(await Deno.readTextFile(join(ws, path)), text, `${path} changed`);
    }
    for (
      const path of [
        ".git/hooks/post-checkout",
        ".envrc",
        ".mcp.json",
        ".idea",
        ".git/commondir",
        ".git-old",
        "vendor-old",
      ]
    ) {
      assert.equal(await exists(join(ws, path)), false, `${path} exists`);
    }
    const top = [...Deno.readDirSync(ws)].map((entry) => entry.name).sort();
    assert.deepEqual(top, [".agent", ".git", ".vscode", "README.md", "evil", "vendor"]);

    // And outside the sandbox, git runs nothing of the command's.
    await git(ws, "status", "--short");
    await git(ws, "checkout", "-qb", "topic");
    await git(join(ws, "vendor", "lib"), "status", "--short");
    const ran = [...Deno.readDirSync(home)].map((entry) => entry.name).filter((name) =>
      name.startsWith("ran-")
    );
    assert.deepEqual(ran, []);
    assert.equal((await git(ws, "log", "--format=%s")).trim(), "second\nfirst");
  },
});

Deno.test({
  name: "cli sandbox guard: a command cannot make the workspace a repository, nor a project " +
    "settings file where there is none",
  ignore,
  async fn() {
    await using scratch = new Scratch();
    const home = await scratch.visible("agent_guard_home_");
    const ws = await scratch.temp("agent_guard_plain_");
    await Deno.writeTextFile(join(ws, "main.sh"), "echo hi\n");
    await using server = startMockOpenAIServer({
      replies: commands(
        `git init -q . && git config core.fsmonitor 'touch ${home}/ran-init'`,
        `mkdir -p .agent && echo '{}' > .agent/settings.json`,
        "mkdir -p tools/sub && echo made > tools/sub/file.txt && cat tools/sub/file.txt",
      ),
    });
    const run = await runSandboxed(scratch, server, ["--cwd", ws, "--sandbox", "required", "go"], {
      home,
    });
    assert.equal(run.code, 0, run.stderr);
    const [init, settings, ordinary] = outputs(run);
    assert.match(init, /Read-only file system|Permission denied/);
    assert.match(settings, /Read-only file system|Permission denied|File exists/);
    assert.match(ordinary, /^made\n\[exit code 0\]$/, "other directories are made as usual");
    const top = [...Deno.readDirSync(ws)].map((entry) => entry.name).sort();
    assert.deepEqual(top, ["main.sh", "tools"], "neither .git nor .agent, nor a placeholder");
    assert.equal(await exists(join(home, "ran-init")), false);
  },
});

Deno.test({
  name: "cli sandbox guard: the write tools refuse those files without a rule that names them, " +
    "whatever the mode, and write them with one",
  ignore,
  async fn() {
    await using scratch = new Scratch();
    const home = await scratch.visible("agent_guard_home_");
    const { ws, before } = await repository(scratch);
    await Deno.symlink(join(ws, ".git"), join(ws, "meta"));
    const evil = fsmonitor(join(home, "ran-write"));
    const calls = [
      { name: "write", arguments: { path: ".git/config", content: evil } },
      { name: "write", arguments: { path: "meta/config", content: evil } },
      {
        name: "write",
        arguments: { path: join(ws, ".git/hooks/pre-commit"), content: "#!/bin/sh\n" },
      },
      { name: "write", arguments: { path: ".envrc", content: "touch x\n" } },
      { name: "write", arguments: { path: ".mcp.json", content: "{}" } },
      {
        name: "edit",
        arguments: { path: ".agent/settings.json", old_string: "openai/test", new_string: "x/y" },
      },
      { name: "write", arguments: { path: "vendor/lib/.git/config", content: evil } },
      { name: "write", arguments: { path: "src/ok.ts", content: "export {};\n" } },
    ];
    const script = () => [...calls.map((call) => ({ toolCalls: [call] })), { text: "done" }];

    // A tool-wide allow rule and accept-edits are not explicit.
    await using broad = startMockOpenAIServer({ replies: script() });
    const refused = await runSandboxed(
      scratch,
      broad,
      [
        "--cwd",
        ws,
        "--allow",
        "write",
        "--allow",
        "edit",
        "--permission-mode",
        "accept-edits",
        "go",
      ],
      { home },
    );
    assert.equal(refused.code, 0, refused.stderr);
    const first = results(refused);
    assert.equal(first.length, calls.length);
    for (const [index, result] of first.slice(0, -1).entries()) {
      assert.equal(result.isError, true, JSON.stringify(calls[index]));
      assert.match(result.output, /would run code outside the sandbox/);
    }
    assert.match(first[0].output, /--allow "write\(\.git\/config\)"/);
    assert.equal(first.at(-1)!.isError, false, first.at(-1)!.output);
    for (const [path, text] of before) {
      assert.equal(await Deno.readTextFile(join(ws, path)), text, `${path} changed`);
    }
    for (const path of [".envrc", ".mcp.json", ".git/hooks/pre-commit"]) {
      assert.equal(await exists(join(ws, path)), false, `${path} exists`);
    }

    // A rule that names the file lets that one through, and no other.
    await using named = startMockOpenAIServer({ replies: script() });
    const allowed = await runSandboxed(
      scratch,
      named,
      ["--cwd", ws, "--allow", "write(.git/config)", "go"],
      { home },
    );
    assert.equal(allowed.code, 0, allowed.stderr);
    const second = results(allowed);
    assert.equal(second[0].isError, false, second[0].output);
    assert.equal(await Deno.readTextFile(join(ws, ".git/config")), evil);
    for (const result of second.slice(2, -1)) assert.equal(result.isError, true, result.output);
    assert.equal(await exists(join(ws, ".envrc")), false);
    assert.equal(await exists(join(ws, ".git/hooks/pre-commit")), false);
  },
});
