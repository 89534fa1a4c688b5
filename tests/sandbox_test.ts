import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigError, type ToolContext, type ToolOutput } from "../mod.ts";
import {
  connectMcpServers,
  type McpConfig,
  type McpSandboxOptions,
  type McpStdioServerConfig,
  parseMcpConfig,
} from "../lib/mcp/mod.ts";
import { createBashTool } from "../tools/mod.ts";
import { detectSandbox, resolveSandbox } from "../lib/sandbox/mod.ts";
import { runToolCall } from "../lib/tool_runner.ts";
import { sandboxArgs } from "../lib/sandbox/bubblewrap.ts";
import { sandboxEnv } from "../lib/sandbox/env.ts";
import { toolRegistry } from "../lib/tool.ts";
import type { BashToolOptions } from "../tools/bash.ts";
import { guardPlan, protectedEntry } from "../lib/sandbox/protected.ts";
import { holdPlaceholders, isPlaceholder } from "../lib/sandbox/placeholders.ts";
import { readSmallFileSync } from "../lib/sandbox/read_small.ts";

// These tests run real bubblewrap. Where it cannot run, they are skipped, saying why; the
// tests of the pure parts run everywhere.
const found = await detectSandbox();
const ignore = !found.available;
if (!found.available) console.warn(`sandbox tests skipped: ${found.reason}`);
const BWRAP = found.available ? found.path : "bwrap";
const NEEDS = found.available ? "" : ` (skipped: ${found.reason})`;

const context = (cwd: string, signal = new AbortController().signal): ToolContext => ({
  cwd,
  signal,
  toolCallId: "t1",
});

async function bash(
  command: string,
  ctx: ToolContext,
  options: BashToolOptions = {},
  timeout?: number,
): Promise<ToolOutput> {
  const tool = createBashTool({ killGraceMs: 300, ...options });
  const checked = tool.parse!({ command, timeout });
  assert.ok(checked.success, "the input fits the schema");
  const result = await tool.execute(checked.data, ctx);
  assert.ok(typeof result !== "string");
  return result;
}

/** The bash tool's sandbox over `writable`. */
function sandbox(writable: string[], extra: { net?: boolean; hide?: string[] } = {}) {
  return { sandbox: { bwrap: BWRAP, writable, net: extra.net ?? false, hide: extra.hide } };
}

/** A directory under /tmp: the sandbox's own /tmp hides it unless it is writable. */
async function tempDir(): Promise<string> {
  return await Deno.realPath(await Deno.makeTempDir({ prefix: "sandbox_test_" }));
}

/** A directory the sandbox sees, read-only: under /var/tmp, else beside these tests. */
async function visibleDir(): Promise<string> {
  const here = new URL(".", import.meta.url).pathname;
  const parent = await Deno.stat("/var/tmp").then(() => "/var/tmp", () => here);
  return await Deno.realPath(await Deno.makeTempDir({ dir: parent, prefix: "sandbox_test_" }));
}

async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

/** The host pids of the live `sleep` processes whose argument holds `marker`. */
function hostPids(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const [program, arg] = cmdline.split("\0");
      const live = !/^\d+ \(.*\) Z /.test(stat);
      if (program === "sleep" && arg?.startsWith(marker) && live) pids.push(Number(entry.name));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

async function until(check: () => boolean | Promise<boolean>, ms = 3_000): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return await check();
}

/** A number no other process on the machine has on its command line. */
function marker(): string {
  return `${7000 + Math.floor(Math.random() * 1000)}.${crypto.randomUUID().replace(/\D/g, "")}`;
}

Deno.test("detectSandbox() reports a missing bwrap with the reason, without throwing", async () => {
  const missing = await detectSandbox({ path: "/nonexistent/bwrap" });
  assert.equal(missing.available, false);
  assert.ok(!missing.available && /\/nonexistent\/bwrap/.test(missing.reason), "names the path");
  assert.equal(
    detectSandbox({ path: "/nonexistent/bwrap" }),
    detectSandbox({ path: "/nonexistent/bwrap" }),
  );
});

Deno.test({
  name: `detectSandbox() finds bwrap, probes it, and caches the answer${NEEDS}`,
  ignore,
  fn: async () => {
    assert.ok(found.available);
    assert.match(found.path, /^\//);
    assert.match(found.version, /^\d+\.\d+/);
    assert.equal(detectSandbox(), detectSandbox(), "one probe per process");
    assert.equal(await detectSandbox(), found);
  },
});

Deno.test("sandboxEnv() strips keys, tokens and passwords, and keeps the rest", () => {
  const env = sandboxEnv({
    PATH: "/usr/bin",
    HOME: "/home/ada",
    LANG: "C.UTF-8",
    AWS_REGION: "eu-west-1",
    GIT_AUTHOR_NAME: "Ada",
    MONKEY: "kept: KEY is not a whole word here",
    OPENAI_API_KEY: "x",
    ANTHROPIC_API_KEY: "x",
    TAVILY_API_KEY: "x",
    GITHUB_TOKEN: "x",
    GH_TOKEN: "x",
    NPM_TOKEN: "x",
    AWS_ACCESS_KEY_ID: "x",
    AWS_SECRET_ACCESS_KEY: "x",
    AWS_SESSION_TOKEN: "x",
    AZURE_CLIENT_SECRET: "x",
    GOOGLE_APPLICATION_CREDENTIALS: "x",
    PGPASSWORD: "x",
    db_password_file: "x",
    SIGNING_KEYS: "x",
    SSH_AUTH_SOCK: "x",
    token: "x",
  });
  assert.deepEqual(Object.keys(env), [
    "PATH",
    "HOME",
    "LANG",
    "AWS_REGION",
    "GIT_AUTHOR_NAME",
    "MONKEY",
  ]);
});

Deno.test("resolveSandbox(): auto warns, required refuses, off never uses it", () => {
  const here = { available: true, version: "0.8.0", path: "/usr/bin/bwrap" } as const;
  const none = { available: false, reason: "bubblewrap is not installed" } as const;
  assert.deepEqual(resolveSandbox({ mode: "auto" }, here), { use: true });
  assert.deepEqual(resolveSandbox({ mode: "required" }, here), { use: true });
  assert.deepEqual(resolveSandbox({ mode: "off" }, here), { use: false });
  assert.deepEqual(resolveSandbox({ mode: "off" }, none), { use: false });
  assert.deepEqual(resolveSandbox({ mode: "auto" }, none), {
    use: false,
    warning: "commands run without a sandbox: bubblewrap is not installed; install bubblewrap " +
      "(apt-get install bubblewrap) or set --sandbox off to silence this",
  });
  const required = resolveSandbox({ mode: "required" }, none);
  assert.equal(required.use, false);
  assert.match(required.refuse ?? "", /^The sandbox is required, but bubblewrap is not installed/);
  assert.match(required.refuse ?? "", /apt-get install bubblewrap/);
});

Deno.test("sandboxArgs(): root read-only, then /tmp, the writable roots, the hidden secrets", async () => {
  const ws = await tempDir();
  const home = await tempDir();
  try {
    await Deno.mkdir(join(home, ".ssh"));
    await Deno.writeTextFile(join(home, ".netrc"), "machine x password y");
    await Deno.mkdir(join(ws, "sub"));
    const args = sandboxArgs({
      command: ["make", "--", "test"],
      cwd: join(ws, "sub"),
      writable: [join(ws, "sub"), ws, "/nonexistent/dir"],
      net: false,
      home,
    });
    const text = args.join(" ");
    const at = (part: string) => {
      const index = text.indexOf(part);
      assert.ok(index >= 0, `has ${part}`);
      return index;
    };
    assert.ok(at("--ro-bind / /") < at("--tmpfs /tmp"));
    assert.ok(at("--tmpfs /tmp") < at(`--bind ${ws} ${ws}`), "workspaces in /tmp show through");
    assert.ok(at(`--bind ${ws} ${ws}`) < at(`--bind ${ws}/sub ${ws}/sub`), "parents first");
    assert.ok(at(`--bind ${ws}/sub`) < at(`--tmpfs ${home}/.ssh `));
    assert.ok(at(`--tmpfs ${home}/.ssh `) < at(`--remount-ro ${home}/.ssh `), "sealed last");
    at(`--ro-bind /dev/null ${home}/.netrc`);
    assert.ok(!text.includes(`${home}/.aws`), "absent secrets are not mounted over");
    assert.ok(!text.includes("/nonexistent/dir"), "missing roots are skipped");
    for (const flag of ["--unshare-pid", "--as-pid-1", "--die-with-parent", "--unshare-net"]) {
      at(flag);
    }
    at("--cap-drop ALL");
    at("--setenv TMPDIR /tmp");
    assert.ok(text.endsWith(`--chdir ${ws}/sub -- make -- test`));
    const online = sandboxArgs({ command: ["true"], cwd: ws, writable: [ws], net: true, home });
    assert.ok(!online.includes("--unshare-net"));
    // A workspace inside a hidden directory is bound after it, and sealed after both.
    const nested = sandboxArgs({
      command: ["true"],
      cwd: join(home, ".ssh"),
      writable: [join(home, ".ssh")],
      net: false,
      home,
      hide: [home],
    }).join(" ");
    assert.ok(nested.indexOf(`--tmpfs ${home} `) < nested.indexOf(`--bind ${home}/.ssh `));
    assert.ok(nested.indexOf(`--bind ${home}/.ssh `) < nested.indexOf(`--tmpfs ${home}/.ssh `));
    assert.ok(nested.indexOf(`--tmpfs ${home}/.ssh `) < nested.indexOf(`--remount-ro ${home} `));
  } finally {
    await Deno.remove(ws, { recursive: true });
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("createBashTool() with a required sandbox that is missing refuses every command", async () => {
  const dir = await tempDir();
  try {
    const decision = resolveSandbox({ mode: "required" }, {
      available: false,
      reason: "bubblewrap is not installed",
    });
    const tool = createBashTool({ sandbox: { refuse: decision.refuse! } });
    const result = await runToolCall(
      { type: "tool_call", id: "c1", name: "bash", input: { command: "touch refused.txt" } },
      toolRegistry([tool]),
      { cwd: dir, signal: new AbortController().signal },
    );
    assert.equal(result.isError, true);
    assert.equal(result.output, decision.refuse);
    assert.equal(await exists(join(dir, "refused.txt")), false, "nothing ran");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: `the sandbox: nothing is written outside the workspace; inside works${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    const outside = await visibleDir();
    // A HOME of the test's own, where the sandbox sees it (its /tmp is a private one).
    const home = await visibleDir();
    const tmpName = `sandbox_test_${crypto.randomUUID()}`;
    const homeFile = join(home, `.${tmpName}`);
    try {
      const result = await bash(
        `touch ${outside}/escaped; echo x > "$HOME/.${tmpName}"; echo ok > inside.txt; ` +
          `echo t > /tmp/${tmpName} && cat /tmp/${tmpName}; echo "TMPDIR=$TMPDIR"`,
        context(ws),
        { env: { HOME: home }, ...sandbox([ws]) },
      );
      assert.match(
        result.output,
        new RegExp(`touch: cannot touch '${outside}/escaped': Read-only`),
      );
      assert.match(result.output, /\.sandbox_test_.*: Read-only file system/);
      assert.match(result.output, /\nt\nTMPDIR=\/tmp\n\[exit code 0\]$/);
      assert.equal(result.metadata?.sandboxed, true);
      assert.equal(await exists(join(outside, "escaped")), false);
      assert.equal(await exists(homeFile), false);
      assert.equal(await exists(`/tmp/${tmpName}`), false, "its /tmp is its own");
      assert.equal(await Deno.readTextFile(join(ws, "inside.txt")), "ok\n");
      // The same command without the sandbox does write: the test can tell.
      const free = await bash(`touch ${outside}/escaped`, context(ws));
      assert.equal(free.metadata?.sandboxed, false);
      assert.equal(await exists(join(outside, "escaped")), true);
    } finally {
      await Deno.remove(ws, { recursive: true });
      await Deno.remove(outside, { recursive: true });
      await Deno.remove(home, { recursive: true });
    }
  },
});

Deno.test({
  name: `the sandbox: no network, not even the host's loopback, unless net is on${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    let requests = 0;
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
      requests++;
      return new Response("pong");
    });
    try {
      const port = server.addr.port;
      const get = `exec 3<>/dev/tcp/127.0.0.1/${port} && ` +
        `printf 'GET / HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n' >&3 && cat <&3`;
      const offline = await bash(get, context(ws), sandbox([ws]));
      assert.equal(offline.isError, true);
      assert.match(offline.output, /Connection refused|Network is unreachable/);
      assert.equal(requests, 0);
      const online = await bash(get, context(ws), sandbox([ws], { net: true }));
      assert.equal(online.isError, false, online.output);
      assert.match(online.output, /\r\n\r\npong\n\[exit code 0\]$/);
      assert.equal(requests, 1);
    } finally {
      await server.shutdown();
      await Deno.remove(ws, { recursive: true });
    }
  },
});

Deno.test({
  name: `the sandbox: API keys are not in the environment, ordinary variables are${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    const env = { OPENAI_API_KEY: "sk-sandbox-test", GH_TOKEN: "ghp-sandbox-test", GREETING: "hi" };
    try {
      const command = "env; tr '\\0' '\\n' < /proc/1/environ";
      const inside = await bash(command, context(ws), { env, ...sandbox([ws]) });
      assert.equal(inside.isError, false, inside.output);
      assert.doesNotMatch(inside.output, /OPENAI_API_KEY|GH_TOKEN|sandbox-test/);
      assert.match(inside.output, /^GREETING=hi$/m);
      assert.match(inside.output, /^PATH=\//m);
      assert.match(inside.output, new RegExp(`^HOME=${Deno.env.get("HOME")}$`, "m"));
      const free = await bash("env", context(ws), { env });
      assert.match(free.output, /^OPENAI_API_KEY=sk-sandbox-test$/m, "outside, it is there");
    } finally {
      await Deno.remove(ws, { recursive: true });
    }
  },
});

Deno.test({
  name: `the sandbox: ~/.ssh and other secrets are hidden, the rest of HOME is not${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    const home = await visibleDir();
    try {
      await Deno.mkdir(join(home, ".ssh"));
      await Deno.writeTextFile(join(home, ".ssh", "id_rsa"), "SECRET-SSH-KEY");
      await Deno.mkdir(join(home, ".aws"));
      await Deno.writeTextFile(join(home, ".aws", "credentials"), "SECRET-AWS");
      await Deno.writeTextFile(join(home, ".netrc"), "machine x password SECRET-NETRC");
      await Deno.mkdir(join(home, "agent-data"));
      await Deno.writeTextFile(join(home, "agent-data", "session.jsonl"), "SECRET-SESSION");
      await Deno.writeTextFile(join(home, "notes.txt"), "visible notes");
      const command = 'ls -A "$HOME/.ssh" "$HOME/.aws" "$HOME/agent-data"; ' +
        'cat "$HOME/.netrc" "$HOME/notes.txt"; cat "$HOME/.ssh/id_rsa"; ' +
        'touch "$HOME/.ssh/planted"';
      const options = {
        env: { HOME: home },
        ...sandbox([ws], { hide: [join(home, "agent-data")] }),
      };
      const result = await bash(command, context(ws), options);
      assert.doesNotMatch(result.output, /SECRET|^(id_rsa|credentials|session\.jsonl)$/m);
      assert.match(result.output, /\/\.ssh:\n\n/, "~/.ssh is empty");
      assert.match(result.output, /\/\.aws:\n\n/, "~/.aws is empty");
      assert.match(result.output, /\/agent-data:\n(cat|$)/m, "the hidden data dir is empty");
      assert.match(result.output, /\.netrc: Permission denied/);
      assert.match(result.output, /visible notes/);
      assert.match(result.output, /\.ssh\/id_rsa: No such file or directory/);
      assert.match(result.output, /\.ssh\/planted': Read-only file system/);
      const free = await bash(command, context(ws), { env: { HOME: home } });
      assert.match(free.output, /SECRET-SSH-KEY/, "outside, it is there");
    } finally {
      await Deno.remove(ws, { recursive: true });
      await Deno.remove(home, { recursive: true });
    }
  },
});

Deno.test({
  name:
    `the sandbox: a secret inside the workspace is hidden, a workspace inside one is not${NEEDS}`,
  ignore,
  fn: async () => {
    const home = await visibleDir();
    try {
      const project = join(home, ".kube", "project");
      await Deno.mkdir(project, { recursive: true });
      await Deno.writeTextFile(join(home, ".kube", "config"), "SECRET-KUBE");
      await Deno.mkdir(join(home, ".ssh"));
      await Deno.writeTextFile(join(home, ".ssh", "id_rsa"), "SECRET-SSH");
      const options = { env: { HOME: home } };
      // The workspace is HOME itself: writable, but its ~/.ssh stays hidden.
      const wide = await bash(
        "ls -A .ssh; cat .ssh/id_rsa; echo w > home.txt && cat home.txt",
        context(home),
        { ...options, ...sandbox([home]) },
      );
      assert.doesNotMatch(wide.output, /SECRET/);
      assert.match(wide.output, /^w\n\[exit code 0\]$/m);
      // The workspace is inside ~/.kube: it shows, writable; the rest of ~/.kube does not.
      const inner = await bash(
        "ls -A ..; cat ../config; echo p > p.txt && cat p.txt",
        context(project),
        { ...options, ...sandbox([project]) },
      );
      assert.doesNotMatch(inner.output, /SECRET/);
      assert.match(inner.output, /^project\n/, "only the workspace is left in ~/.kube");
      assert.match(inner.output, /\np\n\[exit code 0\]$/);
      assert.equal(await Deno.readTextFile(join(project, "p.txt")), "p\n");
    } finally {
      await Deno.remove(home, { recursive: true });
    }
  },
});

Deno.test({
  name: `the sandbox: git add, commit and branch work in the workspace's repository${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    try {
      await Deno.writeTextFile(join(ws, "a.txt"), "a\n");
      const init = await new Deno.Command("git", { args: ["init", "-q"], cwd: ws }).output();
      assert.ok(init.success);
      const result = await bash(
        "git add a.txt && " +
          "git -c user.name=Ada -c user.email=ada@example.com commit -qm first && " +
          "git switch -qc topic && git log --format=%s && git status --short | wc -l",
        context(ws),
        sandbox([ws]),
      );
      assert.equal(result.output, "first\n0\n[exit code 0]");
      // Nothing of what stood in place of absent protected entries is left.
      const left = [...Deno.readDirSync(ws)].map((entry) => entry.name).sort();
      assert.deepEqual(left, [".git", "a.txt"]);
      const git = [...Deno.readDirSync(join(ws, ".git"))].map((entry) => entry.name);
      for (const name of ["commondir", "config.worktree", "modules", "worktrees"]) {
        assert.ok(!git.includes(name), `.git/${name} left behind`);
      }
    } finally {
      await Deno.remove(ws, { recursive: true });
    }
  },
});

Deno.test("protectedEntry() finds the entry a path is in by name, at any depth, ignoring case", () => {
  const entry = (path: string, home?: string) => {
    const found = protectedEntry(path, home);
    return found && `${found.path} ${found.anchor}`;
  };
  assert.equal(entry("/w/.git/config"), "/w/.git/config .git");
  assert.equal(entry("/w/a/b/.git/hooks/pre-push"), "/w/a/b/.git/hooks .git");
  assert.equal(entry("/w/.Git/Config"), "/w/.Git/Config .git");
  assert.equal(entry("/w/sub/.git"), "/w/sub/.git .git", "a .git file points git elsewhere");
  assert.equal(entry("/w/.git/modules/x/index"), "/w/.git/modules .git");
  assert.equal(entry("/w/pkg/.agent/settings.json"), "/w/pkg/.agent .agent");
  assert.equal(entry("/w/.envrc"), "/w/.envrc .envrc");
  assert.equal(entry("/w/.vscode/tasks.json"), "/w/.vscode .vscode");
  assert.equal(entry("/home/ada/.bashrc", "/home/ada"), "/home/ada/.bashrc .bashrc");
  assert.equal(entry("/home/ada/.config/git/config", "/home/ada"), "/home/ada/.config/git git");
  for (
    const free of ["/w/.git/HEAD", "/w/.git/objects/ab/cd", "/w/src/.gitignore", "/w/AGENTS.md"]
  ) {
    assert.equal(entry(free), undefined, free);
  }
  assert.equal(entry("/w/.bashrc", "/home/ada"), undefined, "startup files only count at home");
});

Deno.test("guardPlan(): protected entries of the workspace, absent ones too, nested repositories, parents pinned", async () => {
  const ws = await tempDir();
  try {
    await Deno.mkdir(join(ws, ".git", "hooks"), { recursive: true });
    await Deno.writeTextFile(join(ws, ".git", "config"), "");
    await Deno.mkdir(join(ws, "vendor", "lib", ".git"), { recursive: true });
    await Deno.writeTextFile(join(ws, "vendor", "lib", ".git", "config"), "");
    await Deno.mkdir(join(ws, "mod"));
    await Deno.writeTextFile(join(ws, "mod", ".git"), "gitdir: ../.git/modules/mod\n");
    await Deno.writeTextFile(join(ws, ".gitmodules"), '[submodule "mod"]\n\tpath = mod\n');
    await Deno.mkdir(join(ws, "build"));
    await Deno.mkdir(join(ws, "data", ".agent"), { recursive: true });
    const plan = guardPlan({
      cwd: ws,
      writable: [ws, join(ws, "build")],
      hidden: [join(ws, "data")],
    });
    const existing = plan.existing.map((path) => path.slice(ws.length)).sort();
    assert.deepEqual(existing, [
      "/.git/config",
      "/.git/hooks",
      "/mod/.git",
      "/vendor/lib/.git/config",
    ]);
    const missing = plan.missing.map((entry) => `${entry.path.slice(ws.length)} ${entry.kind}`);
    for (
      const path of [
        "/.agent dir",
        "/.mcp.json dir",
        "/.envrc dir",
        "/.git/commondir file",
        "/.git/modules dir",
        "/build/.envrc dir",
        "/vendor/lib/.git/hooks dir",
      ]
    ) {
      assert.ok(missing.includes(path), `${path} in ${missing}`);
    }
    assert.ok(
      !missing.some((path) => path.startsWith("/vendor/lib/.envrc")),
      "nested: existing only",
    );
    assert.ok(!missing.some((path) => path.startsWith("/data")), "hidden: nothing to guard");
    assert.equal(plan.missing.find((e) => e.path.endsWith("commondir"))?.content, ".\n");
    const pins = plan.pins.map((path) => path.slice(ws.length)).sort();
    assert.deepEqual(pins, ["/.git", "/mod", "/vendor", "/vendor/lib", "/vendor/lib/.git"]);
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});

Deno.test("holdPlaceholders(): the last sandbox holding a placeholder takes it away; one left behind is taken over", async () => {
  const ws = await tempDir();
  try {
    const envrc = { path: join(ws, ".envrc"), kind: "dir" as const };
    const commondir = { path: join(ws, "commondir"), kind: "file" as const, content: ".\n" };
    const first = holdPlaceholders([envrc, commondir]);
    const second = holdPlaceholders([envrc]);
    assert.ok(isPlaceholder(envrc) && isPlaceholder(commondir));
    assert.equal(await Deno.readTextFile(commondir.path), ".\n");
    first.release();
    assert.ok(isPlaceholder(envrc), "still held by the second");
    assert.equal(await exists(commondir.path), false);
    second.release();
    assert.equal(await exists(envrc.path), false);
    // Left behind (its sandbox could not tell when it ended): the next one takes it away.
    holdPlaceholders([envrc]).leave();
    assert.ok(isPlaceholder(envrc));
    const plan = guardPlan({ cwd: ws, writable: [ws] });
    assert.ok(plan.missing.some((entry) => entry.path === envrc.path), "taken over");
    holdPlaceholders(plan.missing).release();
    // At once, or (a process being started elsewhere holding a copy of a handle) a moment later.
    for (let wait = 0; wait < 50 && [...Deno.readDirSync(ws)].length > 0; wait++) {
      await new Promise((done) => setTimeout(done, 10));
    }
    assert.deepEqual([...Deno.readDirSync(ws)], []);
    // What the user made is never taken for one.
    await Deno.mkdir(envrc.path);
    assert.equal(isPlaceholder(envrc), false);
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});

const hasMake = await new Deno.Command("make", { args: ["--version"], stdout: "null" }).output()
  .then((output) => output.success, () => false);

Deno.test({
  name: `the sandbox: a make build and shell scripts work in the workspace${NEEDS}`,
  ignore: ignore || !hasMake,
  fn: async () => {
    const ws = await tempDir();
    try {
      await Deno.writeTextFile(join(ws, "in.txt"), "hello\n");
      await Deno.writeTextFile(
        join(ws, "Makefile"),
        "out/up.txt: in.txt\n\tmkdir -p out\n\ttr a-z A-Z < in.txt > $@\n",
      );
      await Deno.writeTextFile(join(ws, "build.sh"), "cp in.txt built.txt\n");
      await Deno.writeTextFile(join(ws, "test.sh"), 'grep -q hello built.txt && echo "passed"\n');
      const result = await bash(
        "make -s && cat out/up.txt && sh ./build.sh && sh ./test.sh",
        context(ws),
        sandbox([ws]),
      );
      assert.equal(result.output, "HELLO\npassed\n[exit code 0]");
      assert.equal(await Deno.readTextFile(join(ws, "out", "up.txt")), "HELLO\n");
    } finally {
      await Deno.remove(ws, { recursive: true });
    }
  },
});

Deno.test({
  name: `the sandbox: deno runs with its cache read-only${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    try {
      const result = await bash(
        `"${Deno.execPath()}" eval 'console.log(1 + 1)'`,
        context(ws),
        sandbox([ws]),
      );
      assert.equal(result.output, "2\n[exit code 0]");
    } finally {
      await Deno.remove(ws, { recursive: true });
    }
  },
});

Deno.test({
  name: `the sandbox: a fresh PID namespace that holds only the command${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    try {
      const result = await bash("echo $$; ps -e -o comm=", context(ws), sandbox([ws]));
      const [pid, ...names] = result.output.replace(/\n\[exit code 0\]$/, "").split("\n");
      assert.ok(Number(pid) <= 3, `the shell is pid ${pid}`);
      assert.ok(names.length <= 4, `only ${names.join(", ")}`);
      assert.ok(!names.includes("deno"), "the host's processes are not there");
    } finally {
      await Deno.remove(ws, { recursive: true });
    }
  },
});

Deno.test({
  name: `the sandbox: the timeout kills everything inside, SIGTERM-proof jobs too${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    const mark = marker();
    try {
      const running = bash(
        `sleep ${mark}1 & (trap '' TERM; exec sleep ${mark}2) & ` +
          `touch started; echo waiting; sleep ${mark}3`,
        context(ws),
        sandbox([ws]),
        1_500,
      );
      assert.ok(await until(() => exists(join(ws, "started"))), "the command started");
      assert.ok(await until(() => hostPids(mark).length === 3), "three sleeps run");
      const result = await running;
      assert.equal(result.output, "waiting\n[killed: timed out after 1.5 s]");
      assert.equal(result.metadata?.timedOut, true);
      assert.ok(await until(() => hostPids(mark).length === 0), `left: ${hostPids(mark)}`);
    } finally {
      await Deno.remove(ws, { recursive: true });
    }
  },
});

Deno.test({
  name: `the sandbox: cancelling kills everything inside${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    const mark = marker();
    try {
      const controller = new AbortController();
      const running = bash(
        `sleep ${mark}1 & touch started; wait`,
        context(ws, controller.signal),
        sandbox([ws]),
      );
      assert.ok(await until(() => hostPids(mark).length === 1), "the sleep runs");
      controller.abort();
      const result = await running;
      assert.equal(result.output, "[killed: cancelled]");
      assert.ok(await until(() => hostPids(mark).length === 0), `left: ${hostPids(mark)}`);
    } finally {
      await Deno.remove(ws, { recursive: true });
    }
  },
});

Deno.test({
  name: `the sandbox: cancelling while bwrap sets up leaves nothing behind${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    const mark = marker();
    try {
      for (let i = 0; i < 20; i++) {
        const controller = new AbortController();
        const running = bash(`sleep ${mark}${i}; exit $?`, context(ws, controller.signal), {
          ...sandbox([ws]),
          killGraceMs: 100,
        });
        setTimeout(() => controller.abort(), i % 10);
        assert.equal((await running).output, "[killed: cancelled]");
      }
      assert.ok(await until(() => hostPids(mark).length === 0), `left: ${hostPids(mark)}`);
    } finally {
      for (const pid of hostPids(mark)) Deno.kill(pid, "SIGKILL");
      await Deno.remove(ws, { recursive: true });
    }
  },
});

Deno.test({
  name: `the sandbox: jobs left behind, even with setsid, end with the command${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    const mark = marker();
    try {
      const started = performance.now();
      const result = await bash(
        `sleep ${mark}1 & setsid sleep ${mark}2 > /dev/null 2>&1 & echo done`,
        context(ws),
        sandbox([ws]),
      );
      assert.ok(performance.now() - started < 2_000);
      assert.equal(result.output, "done\n[exit code 0]");
      assert.ok(await until(() => hostPids(mark).length === 0), `left: ${hostPids(mark)}`);
    } finally {
      await Deno.remove(ws, { recursive: true });
    }
  },
});

/** An MCP stdio server with one tool, `probe`, that reports what it can do from where it runs. */
const PROBE_SERVER = `
const encoder = new TextEncoder();
const send = (message) => Deno.stdout.writeSync(encoder.encode(JSON.stringify(message) + "\\n"));
const attempt = async (action) => {
  try { await action(); return "ok"; } catch (error) { return String(error.message ?? error); }
};
async function probe(args) {
  return {
    pid: Deno.pid,
    cwd: Deno.cwd(),
    greeting: Deno.env.get("GREETING") ?? null,
    inside: await attempt(() => Deno.writeTextFile(args.inside, "x")),
    outside: await attempt(() => Deno.writeTextFile(args.outside, "x")),
    net: await attempt(async () => (await Deno.connect({ hostname: "127.0.0.1", port: args.port })).close()),
  };
}
const decoder = new TextDecoder();
let buffer = "";
for await (const chunk of Deno.stdin.readable) {
  buffer += decoder.decode(chunk, { stream: true });
  let end;
  while ((end = buffer.indexOf("\\n")) >= 0) {
    const line = buffer.slice(0, end);
    buffer = buffer.slice(end + 1);
    if (!line.trim()) continue;
    const { id, method, params } = JSON.parse(line);
    if (id === undefined) continue;
    const reply = (result) => send({ jsonrpc: "2.0", id, result });
    if (method === "initialize") {
      reply({
        protocolVersion: params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "probe", version: "1.0.0" },
      });
    } else if (method === "tools/list") {
      reply({ tools: [{ name: "probe", description: "Reports", inputSchema: { type: "object" } }] });
    } else if (method === "tools/call") {
      reply({ content: [{ type: "text", text: JSON.stringify(await probe(params.arguments)) }] });
    } else {
      send({ jsonrpc: "2.0", id, error: { code: -32601, message: "Method not found" } });
    }
  }
}
`;

function probeConfig(
  script: string,
  cwd: string,
  sandbox: Pick<McpStdioServerConfig, "sandbox">,
): McpConfig {
  return {
    mcpServers: {
      probe: {
        command: Deno.execPath(),
        args: ["run", "-A", "--no-config", "--no-lock", script],
        env: { GREETING: "hello" },
        cwd,
        ...sandbox,
      },
    },
  };
}

const MCP_ENV: Record<string, string | undefined> = {
  PATH: Deno.env.get("PATH"),
  HOME: Deno.env.get("HOME"),
};

Deno.test({
  name: `an MCP stdio server with "sandbox": true runs inside the sandbox${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    const outside = await visibleDir();
    const extra = await visibleDir();
    const script = join(outside, "probe_server.js");
    await Deno.writeTextFile(script, PROBE_SERVER);
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response("pong"),
    );
    const warnings: string[] = [];
    const sandboxOption: McpSandboxOptions = { bwrap: BWRAP, workspace: [ws] };
    try {
      const probe = async (config: McpConfig, target: string) => {
        await using mcp = await connectMcpServers(config, {
          cwd: ws,
          env: (name) => MCP_ENV[name],
          sandbox: sandboxOption,
          onWarning: (message) => warnings.push(message),
        });
        const result = await runToolCall(
          {
            type: "tool_call",
            id: "c1",
            name: "mcp__probe__probe",
            input: {
              inside: join(ws, "inside.txt"),
              outside: join(target, "escaped.txt"),
              port: server.addr.port,
            },
          },
          toolRegistry(mcp.tools),
          { cwd: ws, signal: new AbortController().signal },
        );
        assert.equal(result.isError, false, result.output);
        return JSON.parse(result.output);
      };

      const confined = await probe(probeConfig(script, ws, { sandbox: true }), outside);
      assert.deepEqual(warnings, []);
      assert.ok(confined.pid <= 3, `pid ${confined.pid} in a fresh PID namespace`);
      assert.equal(confined.cwd, ws);
      assert.equal(confined.greeting, "hello", "its configured env is kept");
      assert.equal(confined.inside, "ok");
      assert.match(confined.outside, /Read-only file system/);
      assert.match(confined.net, /Connection refused|unreachable/i);
      assert.equal(await exists(join(ws, "inside.txt")), true);
      assert.equal(await exists(join(outside, "escaped.txt")), false);

      const widened = await probe(
        probeConfig(script, ws, { sandbox: { net: true, writable: [extra] } }),
        extra,
      );
      assert.equal(widened.outside, "ok", "its extra writable directory");
      assert.equal(widened.net, "ok", "the network, when it asks");
      assert.equal(await exists(join(extra, "escaped.txt")), true);

      const free = await probe(probeConfig(script, ws, {}), outside);
      assert.equal(free.outside, "ok", "without the sandbox it can: the test can tell");
    } finally {
      await server.shutdown();
      for (const dir of [ws, outside, extra]) await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test('parseMcpConfig() reads "sandbox" on stdio servers, expanding ${VAR} in writable', () => {
  const { config } = parseMcpConfig({
    mcpServers: {
      plain: { command: "a", sandbox: true },
      wide: { command: "b", sandbox: { net: true, writable: ["${CACHE:-/var/cache/b}", "out"] } },
      off: { command: "c", sandbox: false },
    },
  }, { env: () => undefined });
  assert.deepEqual(config.mcpServers, {
    plain: { command: "a", sandbox: true },
    wide: { command: "b", sandbox: { net: true, writable: ["/var/cache/b", "out"] } },
    off: { command: "c" },
  });
  assert.throws(
    () => parseMcpConfig({ mcpServers: { x: { command: "a", sandbox: { net: "yes" } } } }),
    (error) => error instanceof ConfigError && /mcpServers\.x\.sandbox/.test(error.message),
  );
});

Deno.test("an MCP server that asks for the sandbox does not start without one", async () => {
  const config: McpConfig = {
    mcpServers: { confined: { command: "true", sandbox: true }, other: { command: "no-such-cmd" } },
  };
  for (const sandbox of [undefined, { unavailable: "bubblewrap is not installed" }]) {
    const warnings: string[] = [];
    await using mcp = await connectMcpServers(config, {
      sandbox,
      onWarning: (message) => warnings.push(message),
    });
    assert.equal(mcp.servers()[0].state, "failed");
    const reason = sandbox ? "bubblewrap is not installed" : "none was set up";
    assert.equal(
      warnings.find((warning) => warning.includes('"confined"')),
      `MCP server "confined" failed to start: it asks for the sandbox ("sandbox" in its ` +
        `config), but ${reason}; install bubblewrap (apt-get install bubblewrap), or remove ` +
        `"sandbox" from its config to run it unconfined; its tools are not available`,
    );
  }
});

Deno.test({
  name: `the sandbox: a readable directory under /tmp shows, read-only; without it, not${NEEDS}`,
  ignore,
  fn: async () => {
    const ws = await tempDir();
    const cache = await tempDir();
    await Deno.writeTextFile(join(cache, "module.js"), "cached");
    try {
      const command = `cat ${cache}/module.js; echo; touch ${cache}/new 2>&1 | sed 's/.*: //'`;
      const shown = await bash(command, context(ws), {
        sandbox: { bwrap: BWRAP, writable: [ws], net: false, readable: [cache] },
      });
      assert.match(shown.output, /^cached\nRead-only file system\n/);
      const hidden = await bash(
        `cat ${cache}/module.js 2>&1 | sed 's/.*: //'`,
        context(ws),
        sandbox([ws]),
      );
      assert.match(hidden.output, /^No such file or directory\n/);
    } finally {
      await Deno.remove(ws, { recursive: true });
      await Deno.remove(cache, { recursive: true });
    }
  },
});

Deno.test("sandbox: a FIFO where git's index or a pointer file stood is not waited on", async () => {
  // A command still running may swap such a file for a FIFO between a look and a read; a
  // synchronous read of it would block the whole agent, with no way for Ctrl+C to act.
  const dir = await Deno.makeTempDir();
  try {
    const fifo = join(dir, "index");
    const made = await new Deno.Command("mkfifo", { args: [fifo] }).output();
    assert.ok(made.success, "mkfifo");
    assert.equal(readSmallFileSync(fifo, 1 << 20), undefined);
    const file = join(dir, ".gitmodules");
    await Deno.writeTextFile(file, "[submodule]\n");
    assert.equal(new TextDecoder().decode(readSmallFileSync(file, 4096)), "[submodule]\n");
    assert.equal(readSmallFileSync(file, 4), undefined);
    assert.equal(readSmallFileSync(join(dir, "absent"), 4096), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("protectedEntry(): a git directory by another name is told by what it holds", async () => {
  const ws = await tempDir();
  try {
    const made = await new Deno.Command("git", {
      args: ["init", "-q", `--separate-git-dir=${join(ws, "gd")}`, join(ws, "inner")],
    }).output();
    assert.ok(made.success, "git init");
    assert.equal(protectedEntry(join(ws, "gd", "config"))?.path, join(ws, "gd", "config"));
    assert.equal(
      protectedEntry(join(ws, "gd", "hooks", "pre-commit"))?.path,
      join(ws, "gd", "hooks"),
    );
    // A directory that is not one keeps its config files the user's to write.
    await Deno.mkdir(join(ws, "app"));
    assert.equal(protectedEntry(join(ws, "app", "config")), undefined);
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});
