import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigError, runAgent, type ToolRunResult } from "../mod.ts";
import {
  type ConnectMcpOptions,
  connectMcpServers,
  loadMcpConfig,
  type McpConfig,
  type McpConnection,
  parseMcpConfig,
} from "../lib/mcp/mod.ts";
import { runToolCall } from "../lib/tool_runner.ts";
import { toolRegistry } from "../lib/tool.ts";
import { scriptedModel } from "../lib/testing/mod.ts";
import { _formatResult, _toolName } from "../lib/mcp/tools.ts";
import { EVERYTHING_RUN } from "./mcp_support.ts";
import { collect } from "./run_support.ts";

const DENO_RUN = EVERYTHING_RUN;
const STDIO: McpConfig = {
  mcpServers: { everything: { command: Deno.execPath(), args: [...DENO_RUN, "stdio"] } },
};

/** What stdio servers may inherit: the test process's own environment. */
const ENV: Record<string, string | undefined> = Deno.env.toObject();

async function connect(
  config: McpConfig,
  options: ConnectMcpOptions = {},
): Promise<McpConnection & { warnings: string[] }> {
  const warnings: string[] = [];
  const mcp = await connectMcpServers(config, {
    env: (name) => ENV[name],
    onWarning: (message) => warnings.push(message),
    ...options,
  });
  return Object.assign(mcp, { warnings });
}

async function call(
  mcp: McpConnection,
  name: string,
  input: Record<string, unknown>,
  signal = new AbortController().signal,
): Promise<ToolRunResult> {
  return await runToolCall(
    { type: "tool_call", id: "c1", name, input },
    toolRegistry(mcp.tools),
    { cwd: Deno.cwd(), signal },
  );
}

/** Whether a process still runs: it exists and is not a zombie waiting to be reaped. */
function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z /.test(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return false;
  }
}

async function gone(pid: number, ms = 3_000): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (alive(pid) && performance.now() < deadline) await sleep(20);
  return !alive(pid);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** The reference server in an HTTP mode (`streamableHttp` or `sse`), on a free port. */
async function startHttpServer(
  mode: "streamableHttp" | "sse",
  port = freePort(),
): Promise<{ base: string; child: Deno.ChildProcess } & AsyncDisposable> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [...DENO_RUN, mode],
    env: { PORT: String(port) },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const base = `http://127.0.0.1:${port}`;
  const deadline = performance.now() + 20_000;
  while (true) {
    try {
      const response = await fetch(`${base}/`);
      await response.body?.cancel();
      break;
    } catch (error) {
      if (performance.now() > deadline) throw error;
      await sleep(50);
    }
  }
  return {
    base,
    child,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
      await child.status;
    },
  };
}

Deno.test("parseMcpConfig() accepts the shapes users already have", () => {
  const { config } = parseMcpConfig({
    mcpServers: {
      plain: { command: "npx", args: ["-y", "server"], env: { A: "1" }, cwd: "sub" },
      stdio: { type: "stdio", command: "server", disabled: false },
      http: { type: "http", url: "https://example.com/mcp", headers: { Authorization: "x" } },
      alias: { type: "streamable-http", url: "https://example.com/mcp" },
      sse: { type: "sse", url: "http://127.0.0.1:3001/sse" },
      bare: { url: "https://example.com/mcp" },
    },
    otherKey: true,
  });
  assert.deepEqual(config.mcpServers, {
    plain: { command: "npx", args: ["-y", "server"], env: { A: "1" }, cwd: "sub" },
    stdio: { type: "stdio", command: "server" },
    http: { type: "http", url: "https://example.com/mcp", headers: { Authorization: "x" } },
    alias: { type: "streamable-http", url: "https://example.com/mcp" },
    sse: { type: "sse", url: "http://127.0.0.1:3001/sse" },
    bare: { type: "http", url: "https://example.com/mcp" },
  });
});

Deno.test("parseMcpConfig() names the source and the field that is wrong", () => {
  const bad = (value: unknown, message: RegExp) =>
    assert.throws(
      () => parseMcpConfig(value, { source: "/p/.mcp.json" }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /^Bad MCP config in \/p\/\.mcp\.json: /);
        assert.match(error.message, message);
        return true;
      },
    );
  bad({ servers: {} }, /mcpServers: /);
  bad({ mcpServers: { fs: { args: ["x"] } } }, /mcpServers\.fs\.command: .*expected string/);
  bad({ mcpServers: { fs: { command: "x", args: "y" } } }, /mcpServers\.fs\.args: .*array/);
  bad({ mcpServers: { fs: { command: "x", args: ["ok", 3] } } }, /mcpServers\.fs\.args\[1\]: /);
  bad({ mcpServers: { fs: { command: "x", env: { A: 1 } } } }, /mcpServers\.fs\.env\.A: /);
  bad({ mcpServers: { web: { type: "websocket", url: "ws://x" } } }, /mcpServers\.web\.type: /);
  bad({ mcpServers: { web: { type: "http" } } }, /mcpServers\.web\.url: /);
  bad({ mcpServers: { web: { type: "http", url: "not a url" } } }, /mcpServers\.web\.url: /);
  bad({ mcpServers: { web: { type: "sse", url: "ftp://x/" } } }, /mcpServers\.web\.url: /);
  bad({ mcpServers: { fs: "npx" } }, /mcpServers\.fs: expected an object/);
});

Deno.test("loadMcpConfig() merges .mcp.json and --mcp-config files, later ones winning", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const write = (name: string, servers: Record<string, unknown>) =>
      Deno.writeTextFile(join(dir, name), JSON.stringify({ mcpServers: servers }));
    await write(".mcp.json", { a: { command: "a-project" }, b: { command: "b-project" } });
    await write("extra.json", { b: { command: "b-extra" }, c: { type: "http", url: "http://x/" } });
    const { config, files, warnings } = await loadMcpConfig({
      cwd: dir,
      files: ["extra.json", '{"mcpServers":{"c":{"command":"c-inline"}}}'],
      env: () => undefined,
    });
    assert.deepEqual(config.mcpServers, {
      a: { command: "a-project" },
      b: { command: "b-extra" },
      c: { command: "c-inline" },
    });
    assert.deepEqual(files, [join(dir, ".mcp.json"), join(dir, "extra.json")]);
    assert.deepEqual(warnings, []);

    // No .mcp.json is fine; a --mcp-config file that is missing or broken is not.
    await Deno.remove(join(dir, ".mcp.json"));
    const none = await loadMcpConfig({ cwd: dir });
    assert.deepEqual(none.config.mcpServers, {});
    await assert.rejects(
      loadMcpConfig({ cwd: dir, files: ["missing.json"] }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message === `Cannot read the MCP config ${join(dir, "missing.json")}: no such file`,
    );
    await Deno.writeTextFile(join(dir, "broken.json"), "{ nope");
    await assert.rejects(
      loadMcpConfig({ cwd: dir, files: [join(dir, "broken.json")] }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message.startsWith(`Bad MCP config in ${join(dir, "broken.json")}: not valid JSON`),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadMcpConfig() expands ${VAR} and ${VAR:-default}, warning of unset ones", async () => {
  const vars: Record<string, string> = { TOKEN: "t0k", HOST: "mcp.example.com", EMPTY: "" };
  const { config, warnings } = await loadMcpConfig({
    cwd: "/nonexistent",
    files: [JSON.stringify({
      mcpServers: {
        local: {
          command: "${BIN:-npx}",
          args: ["--token=${TOKEN}", "${EMPTY:-fallback}", "$HOME stays", "${MISSING}"],
          env: { API_TOKEN: "${TOKEN}" },
          cwd: "${DIR:-.}",
        },
        remote: {
          type: "http",
          url: "https://${HOST}/mcp",
          headers: { Authorization: "Bearer ${TOKEN}" },
        },
      },
    })],
    env: (name) => vars[name],
  });
  assert.deepEqual(config.mcpServers, {
    local: {
      command: "npx",
      args: ["--token=t0k", "fallback", "$HOME stays", ""],
      env: { API_TOKEN: "t0k" },
      cwd: ".",
    },
    remote: {
      type: "http",
      url: "https://mcp.example.com/mcp",
      headers: { Authorization: "Bearer t0k" },
    },
  });
  assert.deepEqual(warnings, [
    'the --mcp-config argument: mcpServers.local.args[3] uses ${MISSING}, which is not set; it expands to ""',
  ]);
});

Deno.test("loadMcpConfig() skips files Deno does not let it read, without asking", async () => {
  const allowed = await Deno.makeTempDir();
  const other = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      join(allowed, ".mcp.json"),
      JSON.stringify({ mcpServers: { mine: { command: "mine" } } }),
    );
    await Deno.writeTextFile(
      join(other, "elsewhere.json"),
      JSON.stringify({ mcpServers: { theirs: { command: "theirs" } } }),
    );
    const script = join(allowed, "load.ts");
    await Deno.writeTextFile(
      script,
      `import { loadMcpConfig } from ${
        JSON.stringify(new URL("../lib/mcp/config.ts", import.meta.url).href)
      };\n` +
        `const loaded = await loadMcpConfig({ cwd: ${JSON.stringify(allowed)}, files: [${
          JSON.stringify(join(other, "elsewhere.json"))
        }] });\n` +
        `console.log(JSON.stringify(loaded));\n`,
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        `--config=${new URL("../deno.json", import.meta.url).pathname}`,
        `--allow-read=${allowed}`,
        script,
      ],
      stdin: "null",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    const loaded = JSON.parse(new TextDecoder().decode(output.stdout));
    assert.deepEqual(loaded.config.mcpServers, { mine: { command: "mine" } });
    assert.deepEqual(loaded.files, [join(allowed, ".mcp.json")]);
    assert.equal(loaded.warnings.length, 1);
    assert.match(loaded.warnings[0], /elsewhere\.json not read: Deno does not grant read access/);
  } finally {
    await Deno.remove(allowed, { recursive: true });
    await Deno.remove(other, { recursive: true });
  }
});

Deno.test("MCP tool names: sanitized, at most 64 characters, unique", () => {
  const taken = new Set<string>();
  assert.equal(_toolName("everything", "get-sum", taken), "mcp__everything__get-sum");
  assert.equal(_toolName("my server", "read.file", taken), "mcp__my_server__read_file");
  assert.equal(_toolName("my.server", "read file", taken), "mcp__my_server__read_file_2");
  assert.equal(_toolName("my server", "read/file", taken), "mcp__my_server__read_file_3");
  const long = _toolName("s", "x".repeat(100), taken);
  assert.equal(long, `mcp__s__${"x".repeat(56)}`);
  const again = _toolName("s", "x".repeat(90), taken);
  assert.equal(again, `mcp__s__${"x".repeat(54)}_2`);
  for (const name of taken) assert.match(name, /^[a-zA-Z0-9_-]{1,64}$/);
});

Deno.test("MCP results: text, images, resources, structured content, isError", () => {
  const png = btoa("\x89PNG1234567");
  const result = _formatResult({
    content: [
      { type: "text", text: "first" },
      { type: "image", data: png, mimeType: "image/png" },
      { type: "resource", resource: { uri: "file:///a.txt", mimeType: "text/plain", text: "A" } },
      { type: "resource", resource: { uri: "file:///b.bin", blob: btoa("12345") } },
      { type: "resource_link", uri: "file:///c", name: "c" },
    ],
    isError: true,
  });
  assert.equal(
    result.output,
    "first\n[image: image/png, 11 bytes]\n[resource: file:///a.txt, text/plain]\nA\n" +
      "[resource: file:///b.bin, 5 bytes]\n[resource link: c <file:///c>]",
  );
  assert.equal(result.isError, true);
  const structured = _formatResult({
    content: [{ type: "audio", data: btoa("ab"), mimeType: "audio/wav" }],
    structuredContent: { temperature: 22, unit: "C" },
  });
  assert.equal(
    structured.output,
    '[audio: audio/wav, 2 bytes]\n{\n  "temperature": 22,\n  "unit": "C"\n}',
  );
  assert.equal(structured.isError, false);
  assert.deepEqual(structured.metadata?.structuredContent, { temperature: 22, unit: "C" });
  assert.equal(_formatResult({ content: [] }).output, "(no output)");
  assert.equal(
    _formatResult({ content: [{ type: "image", data: "AA==", mimeType: "image/png" }] }).output,
    "[image: image/png, 1 byte]",
  );
});

Deno.test("connectMcpServers() offers a stdio server's tools as mcp__<server>__<tool>", async () => {
  await using mcp = await connect(STDIO);
  assert.deepEqual(mcp.warnings, []);
  const { tools: listed } = await mcp.client("everything")!.listTools();
  const callable = listed.filter((tool) => tool.execution?.taskSupport !== "required");
  assert.ok(callable.some((tool) => tool.name === "echo"));
  assert.ok(callable.some((tool) => tool.name === "get-sum"));
  assert.deepEqual(
    mcp.tools.map((tool) => tool.name),
    callable.map((tool) => `mcp__everything__${tool.name}`),
  );
  const echo = mcp.tools.find((tool) => tool.name === "mcp__everything__echo")!;
  const original = listed.find((tool) => tool.name === "echo")!;
  assert.equal(echo.description, `MCP server "everything": ${original.description}`);
  assert.deepEqual(echo.capabilities, ["run"]);
  assert.equal(echo.inputSchema.type, "object");
  assert.deepEqual(echo.inputSchema.properties, original.inputSchema.properties);
  assert.equal(echo.inputSchema.$schema, undefined);

  const [status] = mcp.servers();
  assert.equal(status.name, "everything");
  assert.equal(status.transport, "stdio");
  assert.equal(status.state, "connected");
  assert.equal(status.restarts, 0);
  assert.ok(status.pid !== undefined && alive(status.pid));
  assert.deepEqual(status.tools, mcp.tools.map((tool) => tool.name));
});

Deno.test("runAgent() calls an MCP tool over stdio and the model reads its result", async () => {
  await using mcp = await connect(STDIO);
  const model = scriptedModel([
    { toolCalls: [{ name: "mcp__everything__echo", input: { message: "hello over stdio" } }] },
    { text: "It said hello." },
  ]);
  const { events, result } = await collect(runAgent({ model, tools: mcp.tools, input: "Echo" }));
  assert.equal(result.status, "success");
  const toolResult = events.find((event) => event.type === "tool_result");
  assert.deepEqual(
    toolResult && { output: toolResult.output, isError: toolResult.isError },
    { output: "Echo: hello over stdio", isError: false },
  );
  assert.ok(JSON.stringify(model.requests[1].messages).includes("Echo: hello over stdio"));

  const sum = await call(mcp, "mcp__everything__get-sum", { a: 2, b: 3 });
  assert.equal(sum.output, "The sum of 2 and 3 is 5.");
  assert.equal(sum.isError, false);
});

Deno.test("an MCP error result is passed on with isError, and images are described", async () => {
  await using mcp = await connect(STDIO);
  const invalid = await call(mcp, "mcp__everything__echo", { message: 42 });
  assert.equal(invalid.isError, true);
  assert.match(invalid.output, /Input validation error.*expected string/);

  const raw = await mcp.client("everything")!.callTool({ name: "get-tiny-image", arguments: {} });
  const image = (raw.content as { type: string; data?: string; mimeType?: string }[])
    .find((item) => item.type === "image")!;
  const bytes = atob(image.data!).length;
  const described = await call(mcp, "mcp__everything__get-tiny-image", {});
  assert.equal(described.isError, false);
  assert.match(described.output, new RegExp(`^\\[image: image/png, ${bytes} bytes\\]$`, "m"));
  assert.ok(!described.output.includes(image.data!.slice(0, 40)), "no base64 for the model");

  const weather = await call(mcp, "mcp__everything__get-structured-content", {
    location: "Chicago",
  });
  assert.equal(weather.isError, false);
  assert.deepEqual(JSON.parse(weather.output), weather.metadata?.structuredContent);
});

Deno.test("runAgent() calls an MCP tool over Streamable HTTP", async () => {
  await using server = await startHttpServer("streamableHttp");
  await using mcp = await connect({
    mcpServers: { web: { type: "http", url: `${server.base}/mcp`, headers: { "X-Test": "1" } } },
  });
  assert.deepEqual(mcp.warnings, []);
  const [status] = mcp.servers();
  assert.equal(status.transport, "http");
  assert.equal(status.state, "connected");
  assert.equal(status.pid, undefined);
  const echo = mcp.tools.find((tool) => tool.name === "mcp__web__echo")!;
  assert.deepEqual(echo.capabilities, ["net"]);
  const model = scriptedModel([
    { toolCalls: [{ name: "mcp__web__echo", input: { message: "hello over http" } }] },
    { text: "done" },
  ]);
  const { events, result } = await collect(runAgent({ model, tools: mcp.tools, input: "Echo" }));
  assert.equal(result.status, "success");
  const toolResult = events.find((event) => event.type === "tool_result");
  assert.equal(toolResult?.type === "tool_result" && toolResult.output, "Echo: hello over http");
});

Deno.test("an HTTP server that went away gives a tool error; the next call reconnects", async () => {
  const port = freePort();
  const first = await startHttpServer("streamableHttp", port);
  await using mcp = await connect({
    mcpServers: { web: { type: "http", url: `http://127.0.0.1:${port}/mcp` } },
  });
  assert.equal((await call(mcp, "mcp__web__echo", { message: "1" })).output, "Echo: 1");
  await first[Symbol.asyncDispose]();

  const failed = await call(mcp, "mcp__web__echo", { message: "2" });
  assert.equal(failed.isError, true);
  assert.match(
    failed.output,
    /^Error: MCP server "web" stopped: .*Connection refused.*; it will be restarted on the next call$/,
  );
  await using _second = await startHttpServer("streamableHttp", port);
  const next = await call(mcp, "mcp__web__echo", { message: "3" });
  assert.equal(next.output, "Echo: 3");
  assert.equal(next.isError, false);
  assert.deepEqual(
    mcp.servers().map((status) => [status.state, status.restarts]),
    [["connected", 1]],
  );
});

Deno.test("an http server that only speaks SSE is reached through the SSE fallback", async () => {
  await using server = await startHttpServer("sse");
  await using mcp = await connect({
    mcpServers: {
      guessed: { type: "http", url: `${server.base}/sse` },
      declared: { type: "sse", url: `${server.base}/sse` },
    },
  });
  assert.deepEqual(mcp.warnings, []);
  assert.deepEqual(
    mcp.servers().map((status) => [status.name, status.transport, status.state]),
    [["guessed", "sse", "connected"], ["declared", "sse", "connected"]],
  );
  for (const name of ["mcp__guessed__echo", "mcp__declared__echo"]) {
    const result = await call(mcp, name, { message: name });
    assert.equal(result.output, `Echo: ${name}`);
    assert.deepEqual(mcp.tools.find((tool) => tool.name === name)?.capabilities, ["net"]);
  }
});

Deno.test("servers that cannot start give warnings and no tools; the agent goes on", async () => {
  const port = freePort();
  await using mcp = await connect({
    mcpServers: {
      missing: { command: "no-such-mcp-server-command" },
      crashing: { command: "bash", args: ["-c", "echo 'boom: bad flag' >&2; exit 3"] },
      unreachable: { type: "http", url: `http://127.0.0.1:${port}/mcp` },
      ...STDIO.mcpServers,
    },
  });
  const warning = (server: string) =>
    mcp.warnings.find((w) => w.startsWith(`MCP server "${server}" failed to start: `));
  assert.equal(mcp.warnings.length, 3);
  assert.equal(
    warning("missing"),
    'MCP server "missing" failed to start: command "no-such-mcp-server-command" not found: ' +
      'install it or fix "command" in the MCP config; its tools are not available',
  );
  assert.equal(
    warning("crashing"),
    'MCP server "crashing" failed to start: exited with code 3 (stderr: boom: bad flag); ' +
      "its tools are not available",
  );
  assert.match(
    warning("unreachable") ?? "",
    new RegExp(
      `^MCP server "unreachable" failed to start: could not reach ` +
        `http://127\\.0\\.0\\.1:${port}/mcp \\(Streamable HTTP\\): .*Connection refused.*; ` +
        `its tools are not available$`,
    ),
  );
  assert.deepEqual(
    mcp.servers().map((status) => [status.name, status.state, status.tools.length > 0]),
    [
      ["missing", "failed", false],
      ["crashing", "failed", false],
      ["unreachable", "failed", false],
      ["everything", "connected", true],
    ],
  );
  assert.ok(mcp.tools.every((tool) => tool.name.startsWith("mcp__everything__")));

  const model = scriptedModel([
    { toolCalls: [{ name: "mcp__missing__anything", input: {} }] },
    { toolCalls: [{ name: "mcp__everything__echo", input: { message: "still here" } }] },
    { text: "ok" },
  ]);
  const { events, result } = await collect(runAgent({ model, tools: mcp.tools, input: "go" }));
  assert.equal(result.status, "success");
  const results = events.filter((event) => event.type === "tool_result");
  assert.deepEqual(
    results.map((event) => event.type === "tool_result" && [event.isError, event.output]),
    [
      [true, results[0].type === "tool_result" && results[0].output],
      [false, "Echo: still here"],
    ],
  );
  assert.match(
    results[0].type === "tool_result" ? results[0].output : "",
    /^Error: unknown tool "mcp__missing__anything"/,
  );
});

Deno.test("a server that does not answer is stopped after startupTimeoutMs", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const started = performance.now();
    await using mcp = await connect({
      mcpServers: {
        silent: { command: "bash", args: ["-c", `echo $$ > ${dir}/pid; exec sleep 30`] },
      },
    }, { startupTimeoutMs: 500 });
    assert.ok(performance.now() - started < 5_000);
    assert.deepEqual(mcp.warnings, [
      'MCP server "silent" failed to start: it did not answer within 0.5 s; ' +
      "its tools are not available",
    ]);
    assert.deepEqual(mcp.tools, []);
    assert.equal(mcp.servers()[0].state, "failed");
    assert.equal(mcp.servers()[0].error, "it did not answer within 0.5 s");
    assert.ok(await gone(Number(await Deno.readTextFile(join(dir, "pid")))), "sleep is stopped");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a server killed during a call gives a tool error; the next call restarts it", async () => {
  await using mcp = await connect(STDIO);
  const before = mcp.servers()[0].pid!;
  const pending = call(mcp, "mcp__everything__trigger-long-running-operation", {
    duration: 5,
    steps: 1,
  });
  await sleep(200);
  Deno.kill(before, "SIGKILL");
  const failed = await pending;
  assert.equal(failed.isError, true);
  assert.match(
    failed.output,
    /^Error: MCP server "everything" stopped: killed by SIGKILL.*; it will be restarted on the next call$/,
  );
  assert.ok(failed.durationMs < 4_000, `took ${failed.durationMs} ms`);
  assert.equal(mcp.servers()[0].state, "stopped");

  const next = await call(mcp, "mcp__everything__echo", { message: "back" });
  assert.equal(next.output, "Echo: back");
  assert.equal(next.isError, false);
  const [status] = mcp.servers();
  assert.equal(status.state, "connected");
  assert.equal(status.restarts, 1);
  assert.ok(status.pid !== undefined && status.pid !== before && alive(status.pid));
});

Deno.test("a server that dies between calls is restarted by the next call, which says so", async () => {
  await using mcp = await connect(STDIO);
  const before = mcp.servers()[0].pid!;
  Deno.kill(before, "SIGKILL");
  const deadline = performance.now() + 3_000;
  while (mcp.servers()[0].state !== "stopped" && performance.now() < deadline) await sleep(20);
  assert.equal(mcp.servers()[0].state, "stopped");
  assert.match(mcp.servers()[0].error ?? "", /^killed by SIGKILL/);
  assert.deepEqual(mcp.warnings.map((w) => w.replace(/ \(stderr: .*\)/, "")), [
    'MCP server "everything" stopped: killed by SIGKILL; it will be restarted on the next call',
  ]);

  const next = await call(mcp, "mcp__everything__echo", { message: "again" });
  assert.equal(next.isError, false);
  assert.match(
    next.output,
    /^\[MCP server "everything" had stopped \(killed by SIGKILL.*\) and was restarted; any state it held is lost\]\nEcho: again$/,
  );
  const after = await call(mcp, "mcp__everything__echo", { message: "plain" });
  assert.equal(after.output, "Echo: plain");
  assert.equal(mcp.servers()[0].restarts, 1);
});

Deno.test("a hung call times out after callTimeoutMs and the server is restarted", async () => {
  await using mcp = await connect(STDIO, { callTimeoutMs: 300 });
  const before = mcp.servers()[0].pid!;
  const hung = await call(mcp, "mcp__everything__trigger-long-running-operation", {
    duration: 10,
    steps: 1,
  });
  assert.equal(hung.isError, true);
  assert.equal(
    hung.output,
    'Error: MCP server "everything" did not answer "trigger-long-running-operation" within ' +
      "0.3 s; the server will be restarted on the next call",
  );
  assert.ok(hung.durationMs < 3_000, `took ${hung.durationMs} ms`);
  assert.ok(await gone(before), "the hung server is stopped");

  const next = await call(mcp, "mcp__everything__echo", { message: "fresh" });
  assert.equal(next.output, "Echo: fresh");
  const [status] = mcp.servers();
  assert.equal(status.restarts, 1);
  assert.notEqual(status.pid, before);
});

Deno.test("the call's signal cancels an MCP call; the server stays up", async () => {
  await using mcp = await connect(STDIO);
  const before = mcp.servers()[0].pid!;
  // Watch what the client sends.
  const transport = mcp.client("everything")!.transport!;
  const sent: { method?: string; id?: unknown; params?: Record<string, unknown> }[] = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    sent.push(message as (typeof sent)[number]);
    return send(message, options);
  };
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 150);
  const cancelled = await call(
    mcp,
    "mcp__everything__trigger-long-running-operation",
    { duration: 10, steps: 1 },
    controller.signal,
  );
  assert.equal(cancelled.isError, true);
  assert.equal(cancelled.output, "Error: cancelled, the run was aborted.");
  assert.ok(cancelled.durationMs < 2_000, `took ${cancelled.durationMs} ms`);
  const request = sent.find((message) => message.method === "tools/call");
  assert.ok(request?.id !== undefined);
  assert.deepEqual(
    sent.filter((message) => message.method === "notifications/cancelled")
      .map((message) => message.params?.requestId),
    [request.id],
  );
  const next = await call(mcp, "mcp__everything__echo", { message: "still" });
  assert.equal(next.output, "Echo: still");
  const [status] = mcp.servers();
  assert.equal(status.pid, before);
  assert.equal(status.restarts, 0);
});

Deno.test("${VAR} expansion reaches the server; other variables are not inherited", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      join(dir, ".mcp.json"),
      JSON.stringify({
        mcpServers: {
          everything: {
            command: "${DENO_BIN}",
            args: [...DENO_RUN, "${MODE:-stdio}"],
            env: { GREETING: "hello ${NAME}" },
          },
        },
      }),
    );
    const vars: Record<string, string | undefined> = {
      ...ENV,
      DENO_BIN: Deno.execPath(),
      NAME: "Ada",
      OPENAI_API_KEY: "sk-secret",
    };
    const { config } = await loadMcpConfig({ cwd: dir, env: (name) => vars[name] });
    await using mcp = await connect(config, { env: (name) => vars[name], cwd: dir });
    const result = await call(mcp, "mcp__everything__get-env", {});
    const env = JSON.parse(result.output);
    assert.equal(env.GREETING, "hello Ada");
    assert.equal(env.PATH, vars.PATH);
    assert.equal(env.OPENAI_API_KEY, undefined);
    assert.equal(env.NAME, undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stdio servers inherit the locale, TLS, proxy and cache variables, never API keys", async () => {
  const vars: Record<string, string | undefined> = {
    ...ENV,
    LANG: "de_DE.UTF-8",
    NODE_EXTRA_CA_CERTS: "/etc/ssl/corp-ca.pem",
    SSL_CERT_FILE: "/etc/ssl/corp-bundle.pem",
    HTTPS_PROXY: "http://proxy.corp.example:3128",
    NO_PROXY: "*",
    npm_config_cache: "/var/cache/npm",
    OPENAI_API_KEY: "sk-secret",
    ANTHROPIC_API_KEY: "sk-ant-secret",
    GITHUB_TOKEN: "ghp-secret",
    HTTP_PROXY: "http://alice:S3cret@proxy.corp.example:3128",
    PIP_INDEX_URL: "https://__token__:pypi-secret@pypi.corp.example/simple",
  };
  await using mcp = await connect(STDIO, { env: (name) => vars[name] });
  assert.deepEqual(mcp.warnings, []);
  const env = JSON.parse((await call(mcp, "mcp__everything__get-env", {})).output);
  for (
    const name of [
      "LANG",
      "NODE_EXTRA_CA_CERTS",
      "SSL_CERT_FILE",
      "HTTPS_PROXY",
      "NO_PROXY",
      "npm_config_cache",
      "DENO_DIR",
      "HOME",
    ]
  ) {
    assert.equal(env[name], vars[name], name);
  }
  for (
    const name of [
      "OPENAI_API_KEY",
      "ANTHROPIC_API_KEY",
      "GITHUB_TOKEN",
      "HTTP_PROXY",
      "PIP_INDEX_URL",
    ]
  ) {
    assert.equal(env[name], undefined, `${name} is not passed on`);
  }
  assert.doesNotMatch(JSON.stringify(env), /secret|S3cret/);
});

Deno.test("close() ends every server process, grandchildren included; tools fail afterwards", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const mcp = await connect({
      mcpServers: {
        ...STDIO.mcpServers,
        wrapped: {
          command: "bash",
          args: [
            "-c",
            `sleep 300 & echo $! > ${dir}/grandchild; exec "$0" "$@"`,
            Deno.execPath(),
            ...DENO_RUN,
            "stdio",
          ],
        },
      },
    });
    assert.deepEqual(mcp.warnings, []);
    const pids = mcp.servers().map((status) => status.pid!);
    const grandchild = Number(await Deno.readTextFile(join(dir, "grandchild")));
    assert.equal(pids.length, 2);
    for (const pid of [...pids, grandchild]) assert.ok(alive(pid));
    assert.equal((await call(mcp, "mcp__wrapped__echo", { message: "w" })).output, "Echo: w");

    await mcp.close();
    // The group was signalled; its processes are gone once the kernel has delivered it.
    for (const pid of [...pids, grandchild]) assert.ok(await gone(pid), `process ${pid} is gone`);
    assert.deepEqual(mcp.servers().map((status) => status.state), ["closed", "closed"]);
    const after = await call(mcp, "mcp__everything__echo", { message: "late" });
    assert.equal(after.isError, true);
    assert.equal(after.output, 'Error: MCP server "everything" is closed');
    await mcp.close(); // twice is fine
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
