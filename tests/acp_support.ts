/**
 * An editor for `agent acp`: the agent as a real child process on stdio, driven by the ACP SDK's
 * client side, which plays Zed. It keeps buffers of its own (what `fs/read_text_file` gives and
 * `fs/write_text_file` changes, never the disk), runs terminal commands as real processes,
 * answers permission questions from a queue, and records every update. Every message either way
 * is checked against the protocol's JSON schema (the SDK's `schema/v1/schema.json`), method by
 * method, and every line the agent writes to stdout must be a JSON-RPC message.
 *
 * @module
 */

import "./isolated_env.ts";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import schema from "@agentclientprotocol/sdk/schema/v1/schema.json" with { type: "json" };
import { Ajv2020 } from "ajv/dist/2020.js";
import type { MockServer } from "../lib/testing/mod.ts";
import { denoDir, MOD } from "./terminal_support.ts";

const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
ajv.addSchema(schema, "acp");

/** The schema definition of each method's params and result. */
const _METHODS: Record<string, { params: string; result?: string }> = {
  initialize: { params: "InitializeRequest", result: "InitializeResponse" },
  authenticate: { params: "AuthenticateRequest", result: "AuthenticateResponse" },
  "session/new": { params: "NewSessionRequest", result: "NewSessionResponse" },
  "session/load": { params: "LoadSessionRequest", result: "LoadSessionResponse" },
  "session/prompt": { params: "PromptRequest", result: "PromptResponse" },
  "session/cancel": { params: "CancelNotification" },
  "session/set_mode": { params: "SetSessionModeRequest", result: "SetSessionModeResponse" },
  "session/close": { params: "CloseSessionRequest", result: "CloseSessionResponse" },
  "session/update": { params: "SessionNotification" },
  "session/request_permission": {
    params: "RequestPermissionRequest",
    result: "RequestPermissionResponse",
  },
  "fs/read_text_file": { params: "ReadTextFileRequest", result: "ReadTextFileResponse" },
  "fs/write_text_file": { params: "WriteTextFileRequest", result: "WriteTextFileResponse" },
  "terminal/create": { params: "CreateTerminalRequest", result: "CreateTerminalResponse" },
  "terminal/output": { params: "TerminalOutputRequest", result: "TerminalOutputResponse" },
  "terminal/wait_for_exit": {
    params: "WaitForTerminalExitRequest",
    result: "WaitForTerminalExitResponse",
  },
  "terminal/kill": { params: "KillTerminalRequest", result: "KillTerminalResponse" },
  "terminal/release": { params: "ReleaseTerminalRequest", result: "ReleaseTerminalResponse" },
};

/**
 * Checks messages going one way against the schema: requests and notifications by their
 * method, responses by the method of the request they answer (sent the other way).
 */
function _checker(from: string, problems: string[], asked: Map<unknown, string>) {
  return (message: Record<string, unknown>, answered: Map<unknown, string>): void => {
    const fail = (what: string, errors: unknown) =>
      void problems.push(
        `${from}: ${what}: ${JSON.stringify(errors)} in ${JSON.stringify(message)}`,
      );
    if (message.jsonrpc !== "2.0") return fail("not JSON-RPC 2.0", null);
    if (typeof message.method === "string") {
      const known = _METHODS[message.method];
      if (!known) return fail(`unknown method ${message.method}`, null);
      if ("id" in message) asked.set(message.id, message.method);
      const validate = ajv.getSchema(`acp#/$defs/${known.params}`)!;
      if (!validate(message.params)) fail(`bad ${message.method} params`, validate.errors);
      return;
    }
    const method = answered.get(message.id);
    answered.delete(message.id);
    if (!method) return fail("a response to no request", null);
    if ("error" in message) {
      const validate = ajv.getSchema("acp#/$defs/Error")!;
      if (!validate(message.error)) fail(`bad error for ${method}`, validate.errors);
      return;
    }
    const result = _METHODS[method].result;
    const validate = ajv.getSchema(`acp#/$defs/${result}`)!;
    if (!validate(message.result)) fail(`bad ${method} result`, validate.errors);
  };
}

/**
 * What the schema says of one message sent by `from` (`agent` or `editor`), given the method of
 * the request it answers when it is a response: the problems found, none when it is valid.
 */
export function schemaProblems(
  from: "agent" | "editor",
  message: Record<string, unknown>,
  answers?: string,
): string[] {
  const problems: string[] = [];
  const answered = new Map<unknown, string>(answers ? [[message.id, answers]] : []);
  _checker(from, problems, new Map())(message, answered);
  return problems;
}

/** A terminal the editor runs a command in: a real process. */
interface _Terminal {
  child: Deno.ChildProcess;
  output: string;
  status: Promise<Deno.CommandStatus>;
  released: boolean;
  env: Record<string, string>;
}

/** What the editor was asked to start, and what became of it. */
export interface StartedTerminal {
  /** The request's command, args, env and cwd. */
  request: acp.CreateTerminalRequest;
  /** Its id. */
  id: string;
  /** Whether the agent released it. */
  released: () => boolean;
}

/** `agent acp` with an editor attached. */
export interface AcpAgent extends AsyncDisposable {
  /** The editor's side of the connection. */
  agent: acp.ClientContext;
  /** The working directory sessions are opened in. */
  cwd: string;
  /** Its data directory (sessions, memory). */
  dataDir: string;
  /** What the editor has in its buffers, by absolute path (unsaved edits; writes land here). */
  buffers: Map<string, string>;
  /** Every `fs/write_text_file` request, in order. */
  writes: acp.WriteTextFileRequest[];
  /** Every `fs/read_text_file` request, in order. */
  reads: acp.ReadTextFileRequest[];
  /** The answers to give permission questions, in order (an option id, or "cancel"). */
  answers: string[];
  /** Every permission question, in order. */
  questions: acp.RequestPermissionRequest[];
  /** Every terminal started. */
  terminals: StartedTerminal[];
  /** Every update, in order. */
  updates: acp.SessionNotification[];
  /** Resolves at the next update that `match` accepts. */
  nextUpdate(match: (update: acp.SessionUpdate) => boolean): Promise<acp.SessionUpdate>;
  /** Messages that broke the schema, or stdout lines that were not protocol. */
  problems: string[];
  /** What the agent wrote to stderr so far. */
  stderr(): string;
  /** The agent's process id. */
  pid: number;
  /** Ends the connection (stdin closed) and waits for the process; gives its exit code. */
  close(): Promise<number>;
}

/** How to start {@link startAcp}. */
export interface StartAcpOptions {
  /** The mock model. */
  model: MockServer;
  /** More flags after `acp`. */
  args?: string[];
  /** More environment. */
  env?: Record<string, string>;
  /** What the editor offers (default: file system and terminal). */
  clientCapabilities?: acp.ClientCapabilities;
  /** A data directory to use (default a new one, removed on dispose). */
  dataDir?: string;
  /** A working directory to use (default a new one, removed on dispose). */
  cwd?: string;
  /** Deno's permission flags (default `-A`). */
  permissions?: string[];
}

/** Starts `agent acp` and initializes it as an editor would. */
export async function startAcp(
  options: StartAcpOptions,
): Promise<AcpAgent & { initialized: acp.InitializeResponse }> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_acp_" }));
  const home = join(root, "home");
  const dataDir = options.dataDir ?? join(root, "data");
  const cwd = options.cwd ?? join(root, "work");
  for (const dir of [home, dataDir, cwd]) await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...(options.permissions ?? ["-A"]),
      MOD,
      "acp",
      "-m",
      "openai/test",
      ...(options.args ?? []),
    ],
    cwd: root,
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: home,
      DENO_DIR: await denoDir(),
      OPENAI_API_KEY: "sk-acp-test-key-000000000000",
      OPENAI_BASE_URL: options.model.url,
      AGENT_DATA_DIR: dataDir,
      AGENT_CONFIG_DIR: join(home, "config"),
      NO_COLOR: "1",
      ...options.env,
    },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const reading = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) stderr += chunk;
  })();

  const problems: string[] = [];
  const buffers = new Map<string, string>();
  const writes: acp.WriteTextFileRequest[] = [];
  const reads: acp.ReadTextFileRequest[] = [];
  const answers: string[] = [];
  const questions: acp.RequestPermissionRequest[] = [];
  const terminals: StartedTerminal[] = [];
  const running = new Map<string, _Terminal>();
  const updates: acp.SessionNotification[] = [];
  const waiting: {
    match: (update: acp.SessionUpdate) => boolean;
    found: (u: acp.SessionUpdate) => void;
  }[] = [];

  // Every line on stdout must be a JSON-RPC message; each is checked against the schema.
  const byAgent = new Map<unknown, string>();
  const byEditor = new Map<unknown, string>();
  const checkAgent = _checker("agent", problems, byAgent);
  const checkEditor = _checker("editor", problems, byEditor);
  let partial = "";
  const decoder = new TextDecoder();
  const stdout = child.stdout.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(bytes, controller) {
        partial += decoder.decode(bytes, { stream: true });
        const lines = partial.split("\n");
        partial = lines.pop()!;
        for (const line of lines) {
          if (!line.trim()) continue;
          try {
            checkAgent(JSON.parse(line), byEditor);
          } catch (error) {
            problems.push(`agent wrote a line that is not protocol: ${line} (${error})`);
          }
        }
        controller.enqueue(bytes);
      },
    }),
  );
  const encoder = new TextEncoder();
  const stdin = new WritableStream<Uint8Array>({
    async write(bytes) {
      for (const line of decoder.decode(bytes).split("\n")) {
        if (line.trim()) checkEditor(JSON.parse(line), byAgent);
      }
      const writer = child.stdin.getWriter();
      try {
        await writer.write(bytes);
      } finally {
        writer.releaseLock();
      }
    },
    async close() {
      await child.stdin.close().catch(() => {});
    },
  });
  void encoder;

  const editor = acp.client({ name: "test-editor" })
    .onNotification("session/update", ({ params }) => {
      updates.push(params);
      for (const wait of [...waiting]) {
        if (wait.match(params.update)) {
          waiting.splice(waiting.indexOf(wait), 1);
          wait.found(params.update);
        }
      }
    })
    .onRequest("session/request_permission", ({ params }) => {
      questions.push(params);
      const answer = answers.shift() ?? "reject_once";
      return answer === "cancel"
        ? { outcome: { outcome: "cancelled" } }
        : { outcome: { outcome: "selected", optionId: answer } };
    })
    .onRequest("fs/read_text_file", async ({ params }) => {
      reads.push(params);
      const text = buffers.get(params.path) ?? await Deno.readTextFile(params.path);
      return { content: text };
    })
    .onRequest("fs/write_text_file", ({ params }) => {
      writes.push(params);
      buffers.set(params.path, params.content);
      return {};
    })
    .onRequest("terminal/create", ({ params }) => {
      const id = `term-${terminals.length + 1}`;
      const env = Object.fromEntries((params.env ?? []).map((v) => [v.name, v.value]));
      const spawned = new Deno.Command(params.command, {
        args: params.args ?? [],
        cwd: params.cwd ?? cwd,
        env,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const terminal: _Terminal = {
        child: spawned,
        output: "",
        status: spawned.status,
        released: false,
        env,
      };
      const collect = async (stream: ReadableStream<Uint8Array>) => {
        for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
          terminal.output += chunk;
        }
      };
      const collected = Promise.all([collect(spawned.stdout), collect(spawned.stderr)]);
      terminal.status = spawned.status.then(async (status) => (await collected, status));
      running.set(id, terminal);
      terminals.push({ request: params, id, released: () => terminal.released });
      return { terminalId: id };
    })
    .onRequest("terminal/output", async ({ params }) => {
      const terminal = running.get(params.terminalId)!;
      const done = await Promise.race([terminal.status, Promise.resolve(undefined)]);
      return {
        output: terminal.output,
        truncated: false,
        exitStatus: done ? { exitCode: done.code, signal: done.signal ?? null } : null,
      };
    })
    .onRequest("terminal/wait_for_exit", async ({ params }) => {
      const status = await running.get(params.terminalId)!.status;
      return { exitCode: status.code, signal: status.signal ?? null };
    })
    .onRequest("terminal/kill", ({ params }) => {
      try {
        running.get(params.terminalId)!.child.kill("SIGKILL");
      } catch { /* it has ended */ }
      return {};
    })
    .onRequest("terminal/release", ({ params }) => {
      const terminal = running.get(params.terminalId)!;
      terminal.released = true;
      try {
        terminal.child.kill("SIGKILL");
      } catch { /* it has ended */ }
      return {};
    });

  const connection = editor.connect(acp.ndJsonStream(stdin, stdout));
  const close = async () => {
    connection.close();
    await child.stdin.close().catch(() => {});
    const status = await Promise.race([
      child.status,
      new Promise<undefined>((done) => setTimeout(() => done(undefined), 10_000)),
    ]);
    if (!status) {
      child.kill("SIGKILL");
      return (await child.status).code;
    }
    return status.code;
  };
  const dispose = async () => {
    await close().catch(() => {});
    for (const terminal of running.values()) {
      try {
        terminal.child.kill("SIGKILL");
      } catch { /* it has ended */ }
      await terminal.status.catch(() => {});
    }
    await reading;
    await Deno.remove(root, { recursive: true }).catch(() => {});
  };
  let initialized: acp.InitializeResponse;
  try {
    initialized = await connection.agent.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: options.clientCapabilities ??
        { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
      clientInfo: { name: "test-editor", version: "1.0.0" },
    });
  } catch (error) {
    await dispose();
    throw new Error(`initialize failed: ${error}\n${stderr}`);
  }
  return {
    initialized,
    agent: connection.agent,
    cwd,
    dataDir,
    buffers,
    writes,
    reads,
    answers,
    questions,
    terminals,
    updates,
    nextUpdate: (match) => {
      const seen = updates.find((update) => match(update.update));
      if (seen) return Promise.resolve(seen.update);
      return new Promise((found) => waiting.push({ match, found }));
    },
    problems,
    stderr: () => stderr,
    pid: child.pid,
    close,
    [Symbol.asyncDispose]: dispose,
  };
}

/** The updates of a kind, in order. */
export function updatesOf<K extends acp.SessionUpdate["sessionUpdate"]>(
  agent: Pick<AcpAgent, "updates">,
  kind: K,
  sessionId?: string,
): Extract<acp.SessionUpdate, { sessionUpdate: K }>[] {
  return agent.updates
    .filter((note) => !sessionId || note.sessionId === sessionId)
    .map((note) => note.update)
    .filter((update): update is Extract<acp.SessionUpdate, { sessionUpdate: K }> =>
      update.sessionUpdate === kind
    );
}

/** The text of the agent's message chunks, joined. */
export function answerText(agent: Pick<AcpAgent, "updates">, sessionId?: string): string {
  return updatesOf(agent, "agent_message_chunk", sessionId)
    .map((update) => update.content.type === "text" ? update.content.text : "")
    .join("");
}
