import "./isolated_env.ts";
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import type { ToolContext, ToolOutput } from "../mod.ts";
import { runToolCall } from "../lib/tool_runner.ts";
import { toolRegistry } from "../lib/tool.ts";
import { detectSandbox } from "../lib/sandbox/mod.ts";
import {
  type BashExitStatus,
  type BashTerminal,
  type BashTerminalHandle,
  type BashTerminalSpec,
  type BashToolOptions,
  createBashTool,
} from "../tools/mod.ts";

// The sandbox's tests run real bubblewrap; where it cannot run, they are skipped, saying why.
const found = await detectSandbox();
const BWRAP = found.available ? found.path : "bwrap";
const NEEDS = found.available ? "" : ` (skipped: ${found.reason})`;

/** A secret the host program holds in its own environment, as an editor started with it would. */
const HOST_SECRET = "sk-host-0123456789abcdef0123456789";

/**
 * A host program's terminals, as an editor runs them: each command a real child process (in a
 * process group of its own, killed whole), given the host's own environment plus `spec.env`,
 * its stdout and stderr kept together, the oldest output dropped past `outputByteLimit`.
 */
class TestHost implements BashTerminal {
  readonly specs: BashTerminalSpec[] = [];
  readonly released: string[] = [];
  readonly killed: string[] = [];
  readonly env: Record<string, string>;
  /** Called with each spec before the command starts (or creating fails). */
  onCreate?: (spec: BashTerminalSpec) => void;
  #count = 0;

  constructor(
    env: Record<string, string> = {},
    readonly fail: { create?: boolean; waitForExit?: boolean } = {},
  ) {
    this.env = { ...Deno.env.toObject(), ...env };
  }

  create(spec: BashTerminalSpec): Promise<BashTerminalHandle> {
    this.specs.push(spec);
    this.onCreate?.(spec);
    if (this.fail.create) return Promise.reject(new Error("no terminal available"));
    const id = `term-${++this.#count}`;
    const child = new Deno.Command(spec.command, {
      args: spec.args,
      cwd: spec.cwd,
      env: { ...this.env, ...spec.env },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      detached: true,
    }).spawn();
    let bytes = new Uint8Array(0);
    let truncated = false;
    const keep = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream) {
        const joined = new Uint8Array(bytes.length + chunk.length);
        joined.set(bytes);
        joined.set(chunk, bytes.length);
        bytes = joined;
        if (bytes.length > spec.outputByteLimit) {
          let start = bytes.length - spec.outputByteLimit;
          while (start < bytes.length && (bytes[start] & 0xc0) === 0x80) start++;
          bytes = bytes.slice(start);
          truncated = true;
        }
      }
    };
    const streams = Promise.all([keep(child.stdout), keep(child.stderr)]);
    let exitStatus: BashExitStatus | null = null;
    const exited = child.status.then(async ({ code, signal }) => {
      await streams;
      exitStatus = { exitCode: signal === null ? code : null, signal };
      return exitStatus;
    });
    const killGroup = () => {
      try {
        Deno.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    };
    return Promise.resolve({
      id,
      output: () =>
        Promise.resolve({ output: new TextDecoder().decode(bytes), truncated, exitStatus }),
      waitForExit: () =>
        this.fail.waitForExit ? Promise.reject(new Error("the terminal went away")) : exited,
      kill: () => {
        this.killed.push(id);
        killGroup();
        return Promise.resolve();
      },
      release: async () => {
        this.released.push(id);
        killGroup();
        await exited;
      },
    });
  }
}

const context = (cwd: string, signal = new AbortController().signal): ToolContext => ({
  cwd,
  signal,
  toolCallId: "call-1",
});

async function bash(
  input: { command: string; timeout?: number },
  ctx: ToolContext,
  options: BashToolOptions,
): Promise<ToolOutput> {
  const tool = createBashTool({ killGraceMs: 300, ...options });
  const checked = tool.parse!(input);
  assert.ok(checked.success, "the input fits the schema");
  const result = await tool.execute(checked.data, ctx);
  assert.ok(typeof result !== "string");
  return result;
}

async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

Deno.test("bash in a host terminal: the host runs the shell, and the output and exit code come back", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    const host = new TestHost();
    const result = await bash({ command: "pwd; echo made > out.txt" }, context(dir), {
      terminal: host,
      env: { GREETING: "hello" },
    });
    assert.equal(result.output, `${dir}\n[exit code 0]`);
    assert.equal(result.isError, false);
    assert.equal(await Deno.readTextFile(join(dir, "out.txt")), "made\n");
    assert.equal(result.metadata?.exitCode, 0);
    assert.equal(result.metadata?.timedOut, false);
    assert.equal(result.metadata?.sandboxed, false);
    assert.equal(result.metadata?.terminalId, "term-1");
    assert.match(result.display ?? "", /^\$ pwd; echo made > out\.txt {2}\(exit code 0, /);
    const [spec] = host.specs;
    assert.equal(spec.toolCallId, "call-1");
    assert.equal(spec.command, "bash");
    assert.deepEqual(spec.args.slice(0, 1), ["-c"]);
    assert.deepEqual(spec.args.slice(2), ["bash", "pwd; echo made > out.txt"]);
    assert.deepEqual(spec.env, { GREETING: "hello" });
    assert.equal(spec.cwd, dir);
    assert.ok(spec.outputByteLimit >= 30_000, `a byte budget of ${spec.outputByteLimit}`);
    assert.deepEqual(host.released, ["term-1"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bash in a host terminal: stderr is merged in the order written, and variables are added", async () => {
  const host = new TestHost();
  const result = await bash(
    { command: 'echo a; echo b >&2; echo "$GREETING"' },
    context(Deno.cwd()),
    { terminal: host, env: { GREETING: "hello" } },
  );
  assert.equal(result.output, "a\nb\nhello\n[exit code 0]");
});

Deno.test("bash in a host terminal: a non-zero exit is an error", async () => {
  const host = new TestHost();
  const result = await bash({ command: "echo oops; exit 3" }, context(Deno.cwd()), {
    terminal: host,
  });
  assert.equal(result.output, "oops\n[exit code 3]");
  assert.equal(result.isError, true);
  assert.equal(result.metadata?.exitCode, 3);
  const syntax = await bash({ command: "if then" }, context(Deno.cwd()), { terminal: host });
  assert.equal(syntax.isError, true);
  assert.match(syntax.output, /line 1: syntax error/);
  const signalled = await bash({ command: "kill -9 $$" }, context(Deno.cwd()), {
    terminal: host,
  });
  assert.equal(signalled.output, "[killed by SIGKILL]");
  assert.equal(signalled.isError, true);
  assert.deepEqual(host.released, ["term-1", "term-2", "term-3"]);
});

Deno.test("bash in a host terminal: a timeout kills the command, which does nothing more", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const host = new TestHost();
    const started = performance.now();
    const result = await bash(
      { command: "echo waiting; sleep 1; touch late", timeout: 300 },
      context(dir),
      { terminal: host },
    );
    assert.ok(performance.now() - started < 1_000, "returned before the sleep ended");
    assert.equal(result.output, "waiting\n[killed: timed out after 0.3 s]");
    assert.equal(result.isError, true);
    assert.equal(result.metadata?.timedOut, true);
    assert.equal(result.metadata?.exitCode, null);
    assert.deepEqual(host.killed, ["term-1"]);
    assert.deepEqual(host.released, ["term-1"]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.equal(await exists(join(dir, "late")), false, "the command was really killed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bash in a host terminal: cancelling the call kills the command", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const host = new TestHost();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 200);
    const result = await bash(
      { command: "sleep 1; touch late" },
      context(dir, controller.signal),
      { terminal: host },
    );
    clearTimeout(timer);
    assert.equal(result.output, "[killed: cancelled]");
    assert.equal(result.isError, true);
    assert.equal(result.metadata?.timedOut, false);
    assert.deepEqual(host.killed, ["term-1"]);
    assert.deepEqual(host.released, ["term-1"]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.equal(await exists(join(dir, "late")), false, "the command was really killed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bash in a host terminal: a terminal that cannot start is a tool error that says so", async () => {
  const host = new TestHost({}, { create: true });
  const result = await runToolCall(
    { type: "tool_call", id: "c1", name: "bash", input: { command: "true" } },
    toolRegistry([createBashTool({ terminal: host })]),
    { cwd: Deno.cwd(), signal: new AbortController().signal },
  );
  assert.equal(result.isError, true);
  assert.equal(
    result.output,
    "Error: The host program's terminal could not start the command: no terminal available",
  );
  assert.equal(host.specs.length, 1);
});

Deno.test("bash in a host terminal: the terminal is released when waiting for it fails", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const host = new TestHost({}, { waitForExit: true });
    const result = await runToolCall(
      { type: "tool_call", id: "c1", name: "bash", input: { command: "sleep 1; touch late" } },
      toolRegistry([createBashTool({ terminal: host })]),
      { cwd: dir, signal: new AbortController().signal },
    );
    assert.equal(result.isError, true);
    assert.match(result.output, /^Error: The host program's terminal failed .*went away/);
    assert.deepEqual(host.released, ["term-1"]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.equal(await exists(join(dir, "late")), false, "releasing ended the command");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bash in a host terminal: output the terminal cut says so, and long output keeps its ends", async () => {
  const host = new TestHost();
  const result = await bash({ command: "seq 1 10000" }, context(Deno.cwd()), {
    terminal: host,
    maxOutputChars: 100,
  });
  const [spec] = host.specs;
  assert.ok(spec.outputByteLimit >= 100 && spec.outputByteLimit < 48_894);
  const [head, tail] = result.output.split(/\n\n\[… \d+ bytes of output cut …\]\n\n/);
  assert.ok(head.startsWith("[earlier output cut by the terminal]\n"), head);
  assert.ok(tail.endsWith("9999\n10000\n[exit code 0]"), tail);
  assert.ok(
    result.output.includes(`[… ${spec.outputByteLimit - 100} bytes of output cut …]`),
    result.output,
  );
  assert.equal(result.isError, false);

  const short = await bash({ command: "seq 1 3" }, context(Deno.cwd()), {
    terminal: host,
    maxOutputChars: 100,
  });
  assert.equal(short.output, "1\n2\n3\n[exit code 0]");
});

/** The file of the sandbox's environment that the command of `spec` sources first. */
function envFileOf(spec: BashTerminalSpec): string {
  const script = spec.args[spec.args.indexOf("--") + 3] ?? "";
  const path = /^\. '([^']+)'/.exec(script)?.[1];
  assert.ok(path, `the command sources a file of the environment: ${script}`);
  return path;
}

/** What the host saw of the environment file when it was asked to start a command. */
interface SeenEnvFile {
  path: string;
  fileMode: number;
  dirMode: number;
  text: string;
}

/** Records, as each command is started, its environment file and the modes it has then. */
function recordEnvFiles(host: TestHost): SeenEnvFile[] {
  const seen: SeenEnvFile[] = [];
  host.onCreate = (spec) => {
    const path = envFileOf(spec);
    seen.push({
      path,
      fileMode: Deno.statSync(path).mode! & 0o777,
      dirMode: Deno.statSync(dirname(path)).mode! & 0o777,
      text: Deno.readTextFileSync(path),
    });
  };
  return seen;
}

/** A directory the sandbox sees, read-only: under /var/tmp, else beside these tests. */
async function visibleDir(): Promise<string> {
  const here = new URL(".", import.meta.url).pathname;
  const parent = await Deno.stat("/var/tmp").then(() => "/var/tmp", () => here);
  return await Deno.realPath(await Deno.makeTempDir({ dir: parent, prefix: "bash_term_" }));
}

Deno.test({
  name:
    `bash in a host terminal with the sandbox: bwrap runs it, with the sandbox's environment alone${NEEDS}`,
  ignore: !found.available,
  async fn() {
    const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "bash_term_ws_" }));
    const outside = await visibleDir();
    try {
      const host = new TestHost({ EDITOR_SERVICE_TOKEN: HOST_SECRET, EDITOR_ONLY: "yes" });
      const seen = recordEnvFiles(host);
      const result = await bash(
        {
          command: 'env; echo "greeting=$GREETING"; echo in > "$PWD/inside.txt"; ' +
            `echo out > ${outside}/outside.txt`,
        },
        context(ws),
        {
          terminal: host,
          env: { GREETING: "hello", DATABASE_URL: "postgres://app:pw-in-url@db.example/x" },
          sandbox: { bwrap: BWRAP, writable: [ws], net: false },
        },
      );
      assert.equal(result.metadata?.sandboxed, true);
      assert.equal(result.metadata?.terminalId, "term-1");
      assert.ok(!result.output.includes(HOST_SECRET), "the host's secret stays out");
      assert.doesNotMatch(result.output, /EDITOR_SERVICE_TOKEN|EDITOR_ONLY/);
      assert.match(result.output, /^greeting=hello$/m);
      assert.match(result.output, /^TMPDIR=\/tmp$/m);
      assert.match(result.output, /^PATH=/m);
      assert.match(result.output, /outside\.txt: Read-only file system/);
      assert.match(result.output, /\[exit code 1\]$/);
      assert.equal(await Deno.readTextFile(join(ws, "inside.txt")), "in\n");
      assert.equal(await exists(join(outside, "outside.txt")), false);

      const [spec] = host.specs;
      assert.equal(spec.command, BWRAP);
      assert.deepEqual(spec.env, {});
      assert.equal(spec.args[0], "--clearenv");
      // Other users read command lines: no value of the environment is on it, and the URL's
      // password reaches the command all the same.
      assert.ok(!spec.args.some((arg) => /pw-in-url|hello/.test(arg)), spec.args.join(" "));
      assert.equal(spec.args.filter((arg) => arg === "--setenv").length, 1, "only TMPDIR");
      assert.match(result.output, /^DATABASE_URL=postgres:\/\/app:pw-in-url@db\.example\/x$/m);
      assert.ok(spec.args.includes("--die-with-parent") && spec.args.includes("--unshare-pid"));
      const inner = spec.args.slice(spec.args.indexOf("--") + 1);
      assert.match(inner[0], /(^|\/)bash$/);
      assert.deepEqual(inner.slice(1), [
        "-c",
        `. '${seen[0].path}' 2>/dev/null; exec 2>/dev/null; "$0" -c "$1" 2>&1; exit $?`,
        "bash",
        inner[4],
      ]);
      assert.deepEqual(host.released, ["term-1"]);
      assert.equal(await exists(dirname(seen[0].path)), false, "the environment file is gone");
      // What held the place of absent protected entries is gone with the sandbox.
      assert.deepEqual([...Deno.readDirSync(ws)].map((entry) => entry.name), ["inside.txt"]);
    } finally {
      await Deno.remove(ws, { recursive: true });
      await Deno.remove(outside, { recursive: true });
    }
  },
});

Deno.test({
  name:
    `bash in a host terminal with the sandbox: the environment reaches the command through a file of the user's alone, never the command line${NEEDS}`,
  ignore: !found.available,
  async fn() {
    const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "bash_term_ws_" }));
    try {
      const host = new TestHost({ EDITOR_SERVICE_TOKEN: HOST_SECRET, EDITOR_ONLY: "yes" });
      const seen = recordEnvFiles(host);
      const values = {
        GREETING: "hello-4b8",
        DATABASE_URL: "postgres://app:pw-7f3@db.example/x",
        SENTRY_URL: "https://key-5c1@sentry.example/42",
        KUBECONFIG_DATA: "user: ada\npassword: kube-2a9\n",
        TRICKY: `it's "quoted-9e2" $HOME \`id\` \\ a'\\''b\nline two\n\n`,
      };
      const result = await bash(
        {
          command: `printf '<%s>\\n' "$GREETING" "$DATABASE_URL" "$SENTRY_URL" ` +
            `"$KUBECONFIG_DATA" "$TRICKY" "\${EDITOR_SERVICE_TOKEN-unset}" ` +
            `"\${EDITOR_ONLY-unset}"; env | grep -c '^NOT-A-NAME='`,
        },
        context(ws),
        {
          terminal: host,
          // UID: a variable bash keeps read-only, which its own value stands for, quietly.
          env: { ...values, "NOT-A-NAME": "dash-6d0", UID: "4242" },
          sandbox: { bwrap: BWRAP, writable: [ws], net: false },
        },
      );
      // The command sees each value exactly, and nothing of the host's own environment.
      assert.equal(
        result.output,
        Object.values(values).map((value) => `<${value}>\n`).join("") +
          "<unset>\n<unset>\n0\n[exit code 1]",
      );
      assert.ok(!result.output.includes(HOST_SECRET));

      // No value is on bwrap's command line, nor anywhere else in what the host is sent.
      const [spec] = host.specs;
      const sent = JSON.stringify({ command: spec.command, args: spec.args, env: spec.env });
      for (const mark of ["hello-4b8", "pw-7f3", "key-5c1", "kube-2a9", "quoted-9e2", "dash-6d0"]) {
        assert.ok(!sent.includes(mark), `${mark} in ${sent}`);
      }
      assert.deepEqual(spec.env, {});
      assert.ok(spec.args.includes("--clearenv"));

      // The file was the user's alone while it existed, bound read-only, and is gone now.
      assert.equal(seen.length, 1);
      const [file] = seen;
      assert.equal(file.fileMode.toString(8), "600");
      assert.equal(file.dirMode.toString(8), "700");
      assert.match(file.text, /^export GREETING='hello-4b8'$/m);
      assert.doesNotMatch(file.text, /NOT-A-NAME/);
      const dir = dirname(file.path);
      const bind = spec.args.findIndex((arg, i) => arg === "--ro-bind" && spec.args[i + 1] === dir);
      assert.ok(bind > spec.args.indexOf("/tmp"), "bound after the sandbox's own /tmp");
      assert.equal(await exists(dir), false, "the environment file is gone");
      assert.deepEqual(host.released, ["term-1"]);
    } finally {
      await Deno.remove(ws, { recursive: true });
    }
  },
});

Deno.test({
  name:
    `bash in a host terminal with the sandbox: a shell found only on the sandbox's PATH starts${NEEDS}`,
  ignore: !found.available,
  async fn() {
    const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "bash_term_ws_" }));
    const bin = await visibleDir();
    try {
      const real = Deno.realPathSync(
        new TextDecoder().decode(
          (await new Deno.Command("bash", { args: ["-c", "type -P bash"] }).output()).stdout,
        ).trim(),
      );
      await Deno.symlink(real, join(bin, "term-shell"));
      const host = new TestHost();
      const result = await bash({ command: 'echo "hi from $0"' }, context(ws), {
        terminal: host,
        shell: "term-shell",
        env: { PATH: `${bin}:${Deno.env.get("PATH")}` },
        sandbox: { bwrap: BWRAP, writable: [ws], net: false },
      });
      assert.equal(result.output, "hi from term-shell\n[exit code 0]");
      const [spec] = host.specs;
      assert.equal(spec.args[spec.args.indexOf("--") + 1], join(bin, "term-shell"));
    } finally {
      await Deno.remove(ws, { recursive: true });
      await Deno.remove(bin, { recursive: true });
    }
  },
});

Deno.test({
  name: `bash in a host terminal with the sandbox: a timeout ends everything inside${NEEDS}`,
  ignore: !found.available,
  async fn() {
    const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "bash_term_ws_" }));
    try {
      const host = new TestHost();
      const seen = recordEnvFiles(host);
      const result = await bash(
        { command: "(sleep 1; touch bg) & echo waiting; sleep 1; touch late", timeout: 300 },
        context(ws),
        { terminal: host, sandbox: { bwrap: BWRAP, writable: [ws], net: false } },
      );
      assert.equal(result.output, "waiting\n[killed: timed out after 0.3 s]");
      assert.deepEqual(host.released, ["term-1"]);
      assert.equal(seen.length, 1);
      assert.equal(await exists(dirname(seen[0].path)), false, "the environment file is gone");
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      assert.deepEqual([...Deno.readDirSync(ws)], [], "nothing ran on, nothing left behind");
    } finally {
      await Deno.remove(ws, { recursive: true });
    }
  },
});

Deno.test({
  name:
    `bash in a host terminal with the sandbox: a terminal that cannot start releases the sandbox${NEEDS}`,
  ignore: !found.available,
  async fn() {
    const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "bash_term_ws_" }));
    try {
      const host = new TestHost({}, { create: true });
      const seen = recordEnvFiles(host);
      await assert.rejects(
        bash({ command: "true" }, context(ws), {
          terminal: host,
          sandbox: { bwrap: BWRAP, writable: [ws], net: false },
        }),
        /The host program's terminal could not start the command: no terminal available/,
      );
      assert.equal(host.specs[0].command, BWRAP);
      assert.deepEqual([...Deno.readDirSync(ws)], [], "no placeholder left behind");
      assert.equal(seen.length, 1);
      assert.equal(await exists(dirname(seen[0].path)), false, "the environment file is gone");
    } finally {
      await Deno.remove(ws, { recursive: true });
    }
  },
});

Deno.test({
  name:
    `bash in a host terminal with the sandbox: what the command left in git's index is taken out, and said${NEEDS}`,
  ignore: !found.available,
  async fn() {
    const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "bash_term_ws_" }));
    const git = async (...args: string[]) => {
      const out = await new Deno.Command("git", {
        args: ["-c", "user.name=Ada", "-c", "user.email=ada@example.com", ...args],
        cwd: ws,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      return new TextDecoder().decode(out.stdout);
    };
    try {
      await git("init", "-q");
      await git("commit", "-q", "--allow-empty", "-m", "first");
      const host = new TestHost();
      const result = await bash(
        {
          command: "mkdir sub && git -C sub init -q && " +
            "git -C sub -c user.name=Ada -c user.email=ada@example.com commit -q --allow-empty " +
            "-m x && git add sub 2>/dev/null; git ls-files -s sub",
        },
        context(ws),
        { terminal: host, sandbox: { bwrap: BWRAP, writable: [ws], net: false } },
      );
      assert.match(result.output, /took sub out of git's index/i);
      assert.match(result.output, /^160000 [0-9a-f]{40} 0\tsub$/m, "the command did add it");
      assert.equal(result.isError, true, "what the command did did not stick");
      assert.match(result.display ?? "", /took sub out of git's index/i);
      assert.equal(result.metadata?.terminalId, "term-1");
      assert.equal(await git("ls-files", "-s", "sub"), "");
    } finally {
      await Deno.remove(ws, { recursive: true });
    }
  },
});
