/**
 * The client's side of the MCP spec that users meet: a server that asks the user for input
 * (`elicitation/create`), asks for the workspace roots (`roots/list`), reports the progress of a
 * call (`notifications/progress`), and says how to use it (`instructions`). Against a real MCP
 * server (the SDK's `McpServer`, on stdio: `mcp_asking_server.ts`).
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath as fromFileUrl, pathToFileURL } from "node:url";
import {
  type ConnectMcpOptions,
  connectMcpServers,
  type McpConfig,
  type McpConnection,
} from "../lib/mcp/mod.ts";
import type { Tool } from "../lib/tool.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { childEnv, MOD, runCli, tempDir, Terminal } from "./terminal_support.ts";

const ASKING: McpConfig = {
  mcpServers: {
    asking: {
      command: Deno.execPath(),
      args: [
        "run",
        "-A",
        "--config",
        fromFileUrl(new URL("../deno.json", import.meta.url)),
        fromFileUrl(new URL("./mcp_asking_server.ts", import.meta.url)),
      ],
    },
  },
};

/** Connects to the asking server, keeping the warnings. */
async function connect(
  options: ConnectMcpOptions = {},
): Promise<McpConnection & { warnings: string[] }> {
  const warnings: string[] = [];
  const mcp = await connectMcpServers(ASKING, {
    ...options,
    onWarning: (message) => warnings.push(message),
  });
  assert.equal(mcp.servers()[0].state, "connected", warnings.join("\n"));
  return Object.assign(mcp, { warnings });
}

/** Calls a tool of the asking server and parses the JSON it answers with. */
async function call(mcp: McpConnection, tool: string, input = {}): Promise<unknown> {
  const found = mcp.tools.find((each) => each.name === `mcp__asking__${tool}`) as Tool;
  assert.ok(found, `no tool ${tool}`);
  const result = await found.execute(input, {
    signal: new AbortController().signal,
    cwd: Deno.cwd(),
    toolCallId: "call-1",
  });
  const output = typeof result === "string" ? result : result.output;
  return JSON.parse(output);
}

Deno.test("a server's request for input reaches onElicitation, and the fields it leaves out take their defaults", async () => {
  const asked: { server: string; message: string; fields: string[] }[] = [];
  await using mcp = await connect({
    onElicitation(server, request) {
      asked.push({
        server,
        message: request.message,
        fields: Object.keys(request.requestedSchema.properties),
      });
      return Promise.resolve({ action: "accept", content: { name: "Ada", age: 36 } });
    },
  });
  const answer = await call(mcp, "ask", { message: "Who is there?" });
  assert.deepEqual(asked, [{
    server: "asking",
    message: "Who is there?",
    fields: ["name", "age", "status", "verified", "nickname"],
  }]);
  assert.deepEqual(answer, {
    action: "accept",
    content: { name: "Ada", age: 36, status: "active", verified: true },
  });
  assert.deepEqual(mcp.warnings, []);
});

Deno.test("an accepted answer with nothing filled in sends every default", async () => {
  await using mcp = await connect({
    onElicitation: () => Promise.resolve({ action: "accept", content: {} }),
  });
  assert.deepEqual(await call(mcp, "ask"), {
    action: "accept",
    content: { name: "John Doe", age: 30, status: "active", verified: true },
  });
});

Deno.test("an answer that does not fit the form is declined, with a warning that says why", async () => {
  const answers = [
    { content: { name: "Ada", age: "old" }, why: '"age" must be a number' },
    {
      content: { name: "Ada", status: "gone" },
      why: '"status" must be one of "active", "inactive"',
    },
    { content: { name: "Ada", age: -1 }, why: '"age" must be at least 0' },
    { content: { name: "Ada", color: "red" }, why: '"color" is not a field of the form' },
    { content: { name: 7 }, why: '"name" must be text' },
  ];
  for (const { content, why } of answers) {
    await using mcp = await connect({
      onElicitation: () => Promise.resolve({ action: "accept", content }),
    });
    assert.deepEqual(await call(mcp, "ask"), { action: "decline" });
    assert.equal(mcp.warnings.length, 1, mcp.warnings.join("\n"));
    assert.ok(mcp.warnings[0].includes(why), mcp.warnings[0]);
  }
});

Deno.test("a declined or cancelled request reaches the server as such", async () => {
  for (const action of ["decline", "cancel"] as const) {
    await using mcp = await connect({ onElicitation: () => Promise.resolve({ action }) });
    assert.deepEqual(await call(mcp, "ask"), { action });
  }
});

Deno.test("without onElicitation a request for input is declined, and said once on the warnings", async () => {
  await using mcp = await connect();
  assert.deepEqual(await call(mcp, "ask", { message: "Your password?\n\u001b[31mnow" }), {
    action: "decline",
  });
  assert.deepEqual(await call(mcp, "ask"), { action: "decline" });
  assert.deepEqual(mcp.warnings, [
    'MCP server "asking" asked for input (Your password? [31mnow); nobody can answer in a ' +
    "headless run, so it was declined",
  ]);
});

Deno.test("roots/list answers with the workspace roots as file:// URIs", async () => {
  const cwd = await Deno.makeTempDir();
  const other = await Deno.makeTempDir();
  try {
    await using mcp = await connect({ cwd, roots: [cwd, other] });
    assert.deepEqual(await call(mcp, "roots"), {
      roots: [
        { uri: pathToFileURL(cwd).href, name: cwd.split("/").pop() },
        { uri: pathToFileURL(other).href, name: other.split("/").pop() },
      ],
    });
  } finally {
    await Deno.remove(cwd, { recursive: true });
    await Deno.remove(other, { recursive: true });
  }
});

Deno.test("without roots the client declares none, and a server that asks gets an error", async () => {
  await using mcp = await connect();
  const found = mcp.tools.find((each) => each.name === "mcp__asking__roots") as Tool;
  const result = await found.execute({}, {
    signal: new AbortController().signal,
    cwd: Deno.cwd(),
    toolCallId: "call-1",
  });
  assert.ok(typeof result !== "string" && result.isError, JSON.stringify(result));
});

Deno.test("a call sends a progress token, and what the server reports of it reaches onProgress", async () => {
  const heard: unknown[] = [];
  await using mcp = await connect({
    onProgress: (server, tool, progress) => heard.push({ server, tool, ...progress }),
  });
  const answer = await call(mcp, "slow") as { token: unknown };
  assert.notEqual(answer.token, null);
  assert.deepEqual(
    heard,
    [1, 2, 3].map((step) => ({
      server: "asking",
      tool: "slow",
      progress: step,
      total: 3,
      message: `step ${step}`,
    })),
  );
});

Deno.test("the server's instructions are in its status", async () => {
  await using mcp = await connect();
  assert.match(mcp.servers()[0].instructions ?? "", /^Call ask before anything else\./);
});

/** A headless CLI run with the asking server, whose model calls `tools` in turn. */
async function runWithAsking(
  tools: string[],
  output: "text" | "json",
): Promise<
  {
    code: number;
    stdout: string;
    stderr: string;
    requests: { body: Record<string, unknown> }[];
    dir: string;
    other: string;
  }
> {
  const dir = await tempDir();
  const other = await tempDir();
  const config = join(dir, "mcp.json");
  await Deno.writeTextFile(config, JSON.stringify(ASKING));
  await using server = startMockOpenAIServer({
    replies: [
      ...tools.map((tool) => ({ toolCalls: [{ name: `mcp__asking__${tool}`, arguments: {} }] })),
      { text: "done" },
    ],
  });
  const run = await runCli(
    [
      "-m",
      "openai/test",
      "--mcp-config",
      config,
      "--add-dir",
      other,
      "--no-session",
      "--output",
      output,
      "go",
    ],
    {
      cwd: dir,
      env: {
        OPENAI_API_KEY: "sk-test",
        OPENAI_BASE_URL: server.url,
        AGENT_CONFIG_DIR: await tempDir(),
      },
    },
  );
  return { ...run, requests: server.requests, dir, other };
}

/** The text of the tool results the model got back, in order. */
function toolOutputs(requests: { body: Record<string, unknown> }[]): string[] {
  const last = requests.at(-1)!.body.messages as { role: string; content: string }[];
  return last.filter((message) => message.role === "tool").map((message) => message.content);
}

Deno.test("cli: a headless run declines a request for input with one warning, answers roots/list with the workspace, and shows progress", async () => {
  const run = await runWithAsking(["ask", "roots", "slow"], "text");
  assert.equal(run.code, 0, run.stderr);
  const [asked, roots] = toolOutputs(run.requests);
  assert.deepEqual(JSON.parse(asked), { action: "decline" });
  assert.deepEqual(
    JSON.parse(roots).roots.map((root: { uri: string }) => root.uri),
    [pathToFileURL(await Deno.realPath(run.dir)).href, pathToFileURL(run.other).href],
  );
  const stderr = run.stderr.split("\n");
  assert.equal(
    stderr.filter((line) => line.includes("nobody can answer in a headless run")).length,
    1,
    run.stderr,
  );
  // Three reports within a few milliseconds: one line.
  assert.deepEqual(stderr.filter((line) => line.includes('MCP server "asking" (slow)')), [
    'agent: MCP server "asking" (slow): 1/3 step 1',
  ]);
});

Deno.test("cli: json output shows no progress", async () => {
  const run = await runWithAsking(["slow"], "json");
  assert.equal(run.code, 0, run.stderr);
  assert.ok(!run.stderr.includes("(slow)"), run.stderr);
  assert.match(toolOutputs(run.requests)[0], /"token"/);
});

Deno.test("cli: a server's instructions are in the system prompt, under its name, redacted", async () => {
  const run = await runWithAsking([], "json");
  assert.equal(run.code, 0, run.stderr);
  const messages = run.requests[0].body.messages as { role: string; content: string }[];
  const system = messages.find((message) => message.role === "system")!.content;
  assert.match(system, /## MCP server "asking"\nCall ask before anything else\. The token is /);
  assert.ok(!system.includes("sk-xxxxxxxxxx"), system);
});

Deno.test("interactive: the user fills in a server's form field by field; Ctrl+C cancels, an empty required field declines", async () => {
  const cwd = await Deno.realPath(await tempDir());
  const config = join(cwd, "mcp.json");
  await Deno.writeTextFile(config, JSON.stringify(ASKING));
  const ask = (message: string, required?: string[]) => ({
    toolCalls: [{ name: "mcp__asking__ask", arguments: { message, required } }],
  });
  await using server = startMockOpenAIServer({
    replies: [ask("Who is there?"), ask("Again?"), ask("Once more?", ["nickname"]), {
      text: "All asked.",
    }],
  });
  const env = await childEnv({
    OPENAI_API_KEY: "sk-test",
    OPENAI_BASE_URL: server.url,
    AGENT_CONFIG_DIR: await tempDir(),
  });
  await using terminal = await Terminal.start(
    [
      Deno.execPath(),
      "run",
      "-A",
      MOD,
      "-m",
      "openai/test",
      "--mcp-config",
      config,
      "--no-session",
    ],
    env,
    cwd,
  );
  await terminal.waitFor(/\/help for commands/, 60_000);
  await terminal.type("ask me");
  await terminal.keys("Enter");
  // The call itself is asked about first: always allowed from then on.
  await terminal.waitFor(/Allow\? \[y\]es \/ \[n\]o \/ \[a\]lways › $/m);
  await terminal.type("a");
  await terminal.keys("Enter");
  await terminal.waitFor(
    /MCP server "asking" asks: Who is there\?[\s\S]*name\* \(Name: Your name\) \[default: John Doe\] › $/m,
  );
  await terminal.type("Ada");
  await terminal.keys("Enter");
  await terminal.waitFor(/age \(Your age\) \[default: 30\] › $/m);
  await terminal.type("old");
  await terminal.keys("Enter");
  await terminal.waitFor(/it must be a number\n\s+age \(Your age\) \[default: 30\] › $/m);
  await terminal.type("36");
  await terminal.keys("Enter");
  await terminal.waitFor(/status \(Your status\) \[active\|inactive\] \[default: active\] › $/m);
  await terminal.keys("Enter");
  await terminal.waitFor(/verified \[y\|n\] \[default: true\] › $/m);
  await terminal.type("n");
  await terminal.keys("Enter");
  await terminal.waitFor(/nickname › $/m);
  await terminal.keys("Enter");
  // The second form: Ctrl+C cancels it, and the run goes on.
  await terminal.waitFor(/asks: Again\?[\s\S]*name\*[^\n]*› $/m);
  await terminal.keys("C-c");
  // The third: an empty required field without a default declines it.
  await terminal.waitFor(/asks: Once more\?[\s\S]*name \(Name[^\n]*› $/m);
  for (const field of ["age", "status", "verified"]) {
    await terminal.keys("Enter");
    await terminal.waitFor(new RegExp(`Once more\\?[\\s\\S]*\\n  ${field} [^\\n]*› $`, "m"));
  }
  await terminal.keys("Enter");
  await terminal.waitFor(/Once more\?[\s\S]*nickname\* › $/m);
  await terminal.keys("Enter");
  await terminal.waitFor(/All asked\./);
  assert.deepEqual(toolOutputs(server.requests).map((output) => JSON.parse(output)), [
    {
      action: "accept",
      content: { name: "Ada", age: 36, verified: false, status: "active" },
    },
    { action: "cancel" },
    { action: "decline" },
  ]);
});
