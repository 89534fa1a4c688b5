/**
 * An editor for `bench/acp.ts`: `agent acp` as a child process on stdio, driven by the ACP SDK's
 * client side, counting the protocol's bytes and messages both ways. It reads files from disk
 * for `fs/read_text_file`, refuses writes, and cancels permission questions.
 *
 * @module
 */

import * as acp from "@agentclientprotocol/sdk";

/** `agent acp` with an editor attached. */
export interface Editor {
  /** The agent's process id. */
  pid: number;
  /** The editor's side of the connection. */
  agent: acp.ClientContext;
  /** Bytes and messages (lines) written to the agent and read from it so far. */
  bytes: { sent: number; received: number; messages: number };
  /** Updates of each session so far. */
  updates: Map<string, acp.SessionUpdate[]>;
  /** Resolves at the next update of a session of this kind. */
  nextUpdate(sessionId: string, kind: acp.SessionUpdate["sessionUpdate"]): Promise<void>;
  /** Closes stdin and waits for the process to end. */
  close(): Promise<void>;
}

/** How to start {@link startEditor}. */
export interface EditorOptions {
  /** `deno` arguments: `run`, its flags, the module, `acp` and its flags. */
  args: string[];
  /** The agent's working directory. */
  cwd: string;
  /** Its whole environment. */
  env: Record<string, string>;
  /** Whether the editor offers its file system. */
  fs: boolean;
}

/**
 * Starts `agent acp` and initializes it.
 *
 * @example
 * ```ts
 * import { startEditor } from "./acp_editor.ts";
 * // An agent that answers `initialize` and nothing else.
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/agent.ts`, `
 *   import * as acp from "npm:@agentclientprotocol/sdk@2.4.0";
 *   const app = acp.agent({ name: "tiny" })
 *     .onRequest("initialize", () => ({ protocolVersion: acp.PROTOCOL_VERSION }));
 *   await app.connect(acp.ndJsonStream(Deno.stdout.writable, Deno.stdin.readable)).closed;
 * `);
 * const editor = await startEditor({
 *   args: ["run", "-A", "--no-lock", `${dir}/agent.ts`],
 *   cwd: dir,
 *   env: Deno.env.toObject(),
 *   fs: false,
 * });
 * const { sent, received, messages } = editor.bytes;
 * await editor.close();
 * await Deno.remove(dir, { recursive: true });
 * if (messages !== 2 || sent === 0 || received === 0) throw new Error("unexpected");
 * ```
 */
export async function startEditor(options: EditorOptions): Promise<Editor> {
  const { args, cwd, env, fs } = options;
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const reading = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) stderr += chunk;
  })();
  const bytes = { sent: 0, received: 0, messages: 0 };
  const lines = (chunk: Uint8Array) => {
    for (const byte of chunk) if (byte === 10) bytes.messages++;
  };
  const stdout = child.stdout.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytes.received += chunk.byteLength;
        lines(chunk);
        controller.enqueue(chunk);
      },
    }),
  );
  const writer = child.stdin.getWriter();
  const stdin = new WritableStream<Uint8Array>({
    write(chunk) {
      bytes.sent += chunk.byteLength;
      lines(chunk);
      return writer.write(chunk);
    },
    close: () => writer.close().catch(() => {}),
  });
  const updates = new Map<string, acp.SessionUpdate[]>();
  const waiting: Array<{ sessionId: string; kind: string; found: () => void }> = [];
  const connection = acp.client({ name: "bench-editor" })
    .onNotification("session/update", ({ params }) => {
      const seen = updates.get(params.sessionId) ?? [];
      seen.push(params.update);
      updates.set(params.sessionId, seen);
      for (const wait of [...waiting]) {
        if (wait.sessionId !== params.sessionId) continue;
        if (wait.kind !== params.update.sessionUpdate) continue;
        waiting.splice(waiting.indexOf(wait), 1);
        wait.found();
      }
    })
    .onRequest("session/request_permission", () => ({ outcome: { outcome: "cancelled" } }))
    .onRequest("fs/read_text_file", async ({ params }) => ({
      content: await Deno.readTextFile(params.path),
    }))
    .onRequest("fs/write_text_file", () => {
      throw new Error("the task writes nothing");
    })
    .connect(acp.ndJsonStream(stdin, stdout));
  try {
    await connection.agent.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: fs, writeTextFile: fs }, terminal: false },
      clientInfo: { name: "bench-editor", version: "1.0.0" },
    });
  } catch (error) {
    child.kill("SIGKILL");
    await reading;
    throw new Error(`initialize failed: ${error}\n${stderr}`);
  }
  return {
    pid: child.pid,
    agent: connection.agent,
    bytes,
    updates,
    nextUpdate: (sessionId, kind) =>
      new Promise((found) => waiting.push({ sessionId, kind, found })),
    async close() {
      connection.close();
      await writer.close().catch(() => {});
      const status = await child.status;
      await reading;
      if (!status.success) throw new Error(`agent acp exited with ${status.code}:\n${stderr}`);
    },
  };
}
