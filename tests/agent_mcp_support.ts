/**
 * `agent mcp` as other agents start it: a child process of the CLI, reached with the MCP SDK's
 * own client (on stdio, or over Streamable HTTP), its model the loopback mock OpenAI server, its
 * HOME, data directory and working directory its own.
 *
 * @module
 */

import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client"
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { MockReply, MockRequest } from "../lib/testing/mod.ts";
import { childEnv, MOD, tempDir } from "./terminal_support.ts";

export { Client };

/** The prompts the mock model knows, and what it does for each. */
export const PROMPTS = {
  /** Reads notes.txt, then says what it holds. */
  read: "READ the notes",
  /** Answers at once. */
  hello: "HELLO there",
  /** Follows up on an earlier task. */
  follow: "FOLLOW up",
  /** Answers only after a minute. */
  slow: "SLOW task",
  /** Writes out.txt, then says what the tool answered. */
  write: "WRITE out.txt",
  /** The provider refuses it. */
  fail: "FAIL at the provider",
  /** Reads a file named by the API key, then says the key. */
  leak: "LEAK the key",
} as const;

/** The API key the server is given: a secret, which no response may carry. */
export const API_KEY = "sk-mcp-test-0123456789abcdef";

/** The mock model's answer to a request: by the task's prompt, and what is answered so far. */
export function mockReply(body: Record<string, unknown>): MockReply {
  const messages = body.messages as { role: string; content?: unknown }[];
  // The task's prompt: the last user message that is one (a plan-mode note may follow it).
  const known = Object.values(PROMPTS) as string[];
  const at = messages.findLastIndex((message) =>
    message.role === "user" && known.some((prompt) => String(message.content).includes(prompt))
  );
  const asked = at < 0 ? "" : String(messages[at].content);
  // The tool's answer to this task, once it ran.
  const tool = messages.slice(at).findLast((message) => message.role === "tool");
  const answer = tool && String(tool.content);
  if (asked.includes(PROMPTS.leak)) {
    return answer !== undefined
      ? { text: `The key is ${API_KEY}` }
      : { toolCalls: [{ name: "read", arguments: { path: `${API_KEY}.txt` } }] };
  }
  if (asked.includes(PROMPTS.write)) {
    return answer !== undefined
      ? { text: `The tool said: ${answer}` }
      : { toolCalls: [{ name: "write", arguments: { path: "out.txt", content: "written" } }] };
  }
  if (asked.includes(PROMPTS.read)) {
    if (answer === undefined) {
      return { toolCalls: [{ name: "read", arguments: { path: "notes.txt" } }] };
    }
    const read = answer.includes("buy oat milk");
    return { text: read ? "The note says: buy oat milk" : "The note could not be read." };
  }
  if (asked.includes(PROMPTS.follow)) return { text: "Followed up." };
  if (asked.includes(PROMPTS.fail)) return { status: 400 };
  if (asked.includes(PROMPTS.slow)) return { text: "Too late.", delayMs: 60_000 };
  return { text: "Hello back." };
}

/** The request the mock received whose last user message holds `prompt`. */
export function requestFor(requests: readonly MockRequest[], prompt: string): MockRequest {
  const found = requests.find((request) => {
    const messages = request.body.messages as { role: string; content?: unknown }[];
    return String(messages.findLast((message) => message.role === "user")?.content ?? "")
      .includes(prompt);
  });
  if (!found) throw new Error(`the mock received no request for "${prompt}"`);
  return found;
}

/** The directories and environment of an `agent mcp` child. */
export interface McpChildSetup {
  /** Its working directory (with a notes.txt). */
  cwd: string;
  /** Its data directory. */
  dataDir: string;
  /** Its whole environment. */
  env: Record<string, string>;
  /** The arguments of `deno`. */
  args: string[];
}

/**
 * A working directory, data directory and environment for `agent mcp <extra>`, with the user's
 * `settings` when given.
 */
export async function mcpChild(
  modelUrl: string,
  extra: string[] = [],
  settings?: Record<string, unknown>,
): Promise<McpChildSetup> {
  const cwd = await tempDir("agent_mcp_cwd_");
  await Deno.writeTextFile(join(cwd, "notes.txt"), "buy oat milk\n");
  const configDir = join(await tempDir("agent_mcp_config_"), "agent");
  if (settings) {
    await Deno.mkdir(configDir);
    await Deno.writeTextFile(join(configDir, "settings.json"), JSON.stringify(settings));
  }
  const env = await childEnv({
    OPENAI_API_KEY: API_KEY,
    OPENAI_BASE_URL: modelUrl,
    AGENT_CONFIG_DIR: configDir,
  });
  const args = ["run", "-A", MOD, "mcp", "-m", "openai/test", "--sandbox", "off", ...extra];
  return { cwd, dataDir: env.AGENT_DATA_DIR, env, args };
}

/** A client connected to `agent mcp` on stdio, and what the server wrote to stderr. */
export interface StdioServer extends AsyncDisposable {
  /** The connected client. */
  client: Client;
  /** The child's setup. */
  setup: McpChildSetup;
  /** Everything on stderr so far. */
  stderr(): string;
  /** Waits until stderr matches `pattern` (at most `ms`), and gives the match. */
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpExecArray>;
}

/** Starts `agent mcp` on stdio (with the user's `settings`) and connects a client to it. */
export async function startStdioServer(
  modelUrl: string,
  settings?: Record<string, unknown>,
): Promise<StdioServer> {
  const setup = await mcpChild(modelUrl, [], settings);
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: setup.args,
    env: setup.env,
    cwd: setup.cwd,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array | string) => {
    stderr += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
  });
  const client = new Client({ name: "agent-mcp-test", version: "1.0.0" });
  await client.connect(transport);
  return {
    client,
    setup,
    stderr: () => stderr,
    waitFor: (pattern, ms) => waitFor(() => stderr, pattern, ms),
    async [Symbol.asyncDispose]() {
      await client.close();
    },
  };
}

/** An `agent mcp --port 0` child, listening. */
export interface HttpServer extends AsyncDisposable {
  /** Its `/mcp` URL. */
  url: string;
  /** The token in the file it named. */
  token: string;
  /** That file. */
  tokenFile: string;
  /** Everything on stderr so far. */
  stderr(): string;
  /** A client connected with `token`. */
  connect(token?: string): Promise<Client>;
  /** Sends SIGINT and gives the exit code. */
  interrupt(): Promise<number>;
}

/** Starts `agent mcp --port 0` and reads its URL and token from its start line. */
export async function startHttpServer(modelUrl: string): Promise<HttpServer> {
  const setup = await mcpChild(modelUrl, ["--port", "0"]);
  const child = new Deno.Command(Deno.execPath(), {
    args: setup.args,
    cwd: setup.cwd,
    env: setup.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const reading = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) stderr += chunk;
  })();
  const stdout = new Response(child.stdout).text();
  const dispose = async () => {
    try {
      child.kill("SIGKILL");
    } catch { /* it has ended */ }
    await child.status;
    await reading;
    await stdout;
  };
  let match: RegExpExecArray;
  try {
    match = await waitFor(
      () => stderr,
      /serving MCP \(\S+\) on (http:\/\/\S+\/mcp) \(bearer token in (\S+), readable by you alone\)/,
    );
  } catch (error) {
    await dispose();
    throw error;
  }
  const [, url, tokenFile] = match;
  const token = (await Deno.readTextFile(tokenFile)).trim();
  return {
    url,
    token,
    tokenFile,
    stderr: () => stderr,
    async connect(given = token) {
      const client = new Client({ name: "agent-mcp-test", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { authorization: `Bearer ${given}` } },
        }),
      );
      return client;
    },
    async interrupt() {
      child.kill("SIGINT");
      return (await child.status).code;
    },
    [Symbol.asyncDispose]: dispose,
  };
}

/** A log message the server sent: its level and words. */
export interface LogMessage {
  /** The level. */
  level: string;
  /** The words. */
  data: string;
}

/** Collects the log messages `client` receives, from now on. */
export function collectLog(client: Client): LogMessage[] {
  const messages: LogMessage[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    const { level, data } = notification.params;
    messages.push({ level, data: String(data) });
  });
  return messages;
}

/** Waits until `text()` matches `pattern`, for at most `ms`. */
export async function waitFor(
  text: () => string,
  pattern: RegExp,
  ms = 30_000,
): Promise<RegExpExecArray> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const match = pattern.exec(text());
    if (match) return match;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`waited ${ms} ms for ${pattern}; stderr:\n${text()}`);
}

/** The text of every session file under `dataDir`. */
export async function sessionTexts(dataDir: string): Promise<string[]> {
  const texts: string[] = [];
  for await (const project of Deno.readDir(join(dataDir, "sessions"))) {
    if (!project.isDirectory) continue;
    for await (const file of Deno.readDir(join(dataDir, "sessions", project.name))) {
      if (file.name.endsWith(".jsonl")) {
        texts.push(await Deno.readTextFile(join(dataDir, "sessions", project.name, file.name)));
      }
    }
  }
  return texts;
}
