/**
 * One ACP session: a conversation prepared as a CLI run is (the project's settings and trust, its
 * memory, the sandbox, Deno's grants), in the directory the editor gives, with the editor as the
 * file system and the terminal where it offers them and as the one who answers permission
 * questions. Its prompts run one at a time; each event becomes the `session/update` it is.
 *
 * @module
 */

import type {
  AgentContext,
  AvailableCommand,
  ClientCapabilities,
  ContentBlock,
  McpServer,
  PermissionOption,
  RequestPermissionResponse,
  SessionModeState,
  SessionUpdate,
  StopReason,
} from "@agentclientprotocol/sdk";
import { fileURLToPath } from "node:url";
import type { Driver } from "../../conversation/driver.ts";
import { startPrepared } from "../conversation.ts";
import type { McpServerConfig } from "../../mcp/config.ts";
import {
  PERMISSION_MODES,
  type PermissionAnswer,
  type PermissionMode,
} from "../../permissions/policy.ts";
import type { PermissionRequest } from "../../hooks.ts";
import type { RunLoopEvent } from "../../runloop/events.ts";
import { type RunLoops, runLoops } from "../../runloop/manager.ts";
import { SessionError } from "../../session/mod.ts";
import { redactValue } from "../../secrets/redact.ts";
import { eventRedactor } from "../../service/redacted_events.ts";
import type { BashTerminal } from "../../../tools/bash_terminal.ts";
import type { CliArgs } from "../args.ts";
import { prepare, type Prepared } from "../prepare.ts";
import { describeWithheld } from "../workspace.ts";
import { clientFs } from "./client_fs.ts";
import { eventUpdates, historyUpdates, toolCallView } from "./updates.ts";

/** The permission modes as an editor offers them. */
const _MODES: Record<PermissionMode, { name: string; description: string }> = {
  default: { name: "Default", description: "Ask before changing files or running commands" },
  "accept-edits": {
    name: "Accept edits",
    description: "Edit files in the workspace without asking; ask before running commands",
  },
  plan: { name: "Plan", description: "Only look and propose: nothing is changed" },
};

/** The answers a permission question offers, and what each means to the rules. */
const _OPTIONS: readonly (PermissionOption & { answer: PermissionAnswer })[] = [
  { optionId: "allow_once", name: "Allow", kind: "allow_once", answer: "yes" },
  { optionId: "allow_always", name: "Always allow", kind: "allow_always", answer: "always" },
  { optionId: "reject_once", name: "Reject", kind: "reject_once", answer: "no" },
  { optionId: "reject_always", name: "Always reject", kind: "reject_always", answer: "never" },
];

/** The slash commands a session takes. */
export const ACP_COMMANDS: readonly AvailableCommand[] = [
  {
    name: "compact",
    description: "Summarize the conversation so far to free context",
    input: { hint: "what the summary should keep" },
  },
  { name: "model", description: "Show or switch the model", input: { hint: "provider/model" } },
  {
    name: "mode",
    description: "Show or switch the permission mode",
    input: { hint: "plan | default | accept-edits" },
  },
  { name: "tools", description: "List the tools offered, and why others are not" },
  { name: "cost", description: "Tokens and cost of this conversation" },
];

/** What a session is opened with. */
export interface AcpSessionOptions {
  /** The session's id, as the editor knows it. */
  id: string;
  /** The working directory the editor gave. */
  cwd: string;
  /** The flags `agent acp` was started with. */
  args: CliArgs;
  /** Reads the environment. */
  env(name: string): string | undefined;
  /** Writes a line to stderr (the log). */
  log(text: string): void;
  /** The editor. */
  client: AgentContext;
  /** What the editor offers (file system, terminal). */
  capabilities: ClientCapabilities;
  /** MCP servers the editor gives the session. */
  mcpServers: readonly McpServer[];
  /** A saved session to go on with (`session/load`). */
  resume?: string;
}

/** A session, open. */
export interface AcpSession {
  /** The permission modes, and the one in force. */
  modes(): SessionModeState;
  /** Sends the saved conversation as the updates it was made of (`session/load`). */
  replay(): Promise<void>;
  /** Tells the editor which slash commands there are. */
  announceCommands(): Promise<void>;
  /** Runs a prompt to its end; resolves to why it stopped. */
  prompt(blocks: readonly ContentBlock[]): Promise<StopReason>;
  /** Cancels the prompt going on, if any: it stops with `cancelled`. */
  cancel(): void;
  /** Switches the permission mode. */
  setMode(mode: string): void;
  /** Whether a prompt is going on. */
  busy(): boolean;
  /** Cancels what goes on, waits for it to end, and closes everything the session opened. */
  close(): Promise<void>;
}

/** A request the editor made that cannot be served, with the JSON-RPC code to answer it with. */
export class AcpRequestError extends Error {
  /** The JSON-RPC error code. */
  readonly code: number;

  /** An error answered with `code` and `message`. */
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * Opens a session: prepares the run in its directory (as `agent -p` would there, nobody asked
 * about trust), and starts its conversation, new or loaded.
 */
export async function openAcpSession(options: AcpSessionOptions): Promise<AcpSession> {
  const { id, client, capabilities } = options;
  const fs = capabilities.fs ?? {};
  const pending: Promise<unknown>[] = [];
  let unsent = false;
  const notify = (update: SessionUpdate) => {
    const sent = client.notify("session/update", { sessionId: id, update }).catch((error) => {
      // The editor went away: said once, not once per token still streaming.
      if (!unsent) options.log(`agent: updates are not sent: ${(error as Error).message}`);
      unsent = true;
    });
    pending.push(sent);
    if (pending.length > 256) pending.splice(0, 128);
  };
  const terminal: BashTerminal | undefined = capabilities.terminal
    ? {
      async create(spec) {
        const handle = await client.createTerminal({
          sessionId: id,
          command: spec.command,
          args: spec.args,
          env: Object.entries(spec.env).map(([name, value]) => ({ name, value })),
          cwd: spec.cwd,
          outputByteLimit: spec.outputByteLimit,
        });
        // The editor shows the command running as the call's content.
        notify({
          sessionUpdate: "tool_call_update",
          toolCallId: spec.toolCallId,
          content: [{ type: "terminal", terminalId: handle.id }],
        });
        return {
          id: handle.id,
          output: () => handle.currentOutput(),
          waitForExit: () => handle.waitForExit(),
          kill: async () => void await handle.kill(),
          release: async () => void await handle.release(),
        };
      },
    }
    : undefined;
  const args: CliArgs = {
    ...options.args,
    cwd: options.cwd,
    resume: options.resume,
    continue: false,
  };
  let prepared: Prepared;
  try {
    prepared = await prepare(args, {
      env: options.env,
      warn: (text) => options.log(`agent: ${text}`),
      log: options.log,
      interactive: false,
      mcpServers: mcpServersOf(options.mcpServers),
      fs: fs.readTextFile || fs.writeTextFile
        ? clientFs({
          read: fs.readTextFile
            ? async (path) =>
              (await client.request("fs/read_text_file", { sessionId: id, path })).content
            : undefined,
          write: fs.writeTextFile
            ? async (path, content) =>
              void await client.request("fs/write_text_file", { sessionId: id, path, content })
            : undefined,
        })
        : undefined,
      bash: terminal ? { terminal } : undefined,
      resumeExact: true,
    });
  } catch (error) {
    // A session to load that is not there, or that another process writes, is the editor's to
    // hear of as such: it keeps calling the session by the id it gave.
    if (error instanceof SessionError && error.reason === "busy") {
      throw new AcpRequestError(
        -32600,
        `${error.message}: close it there first (this editor would otherwise lose what is said ` +
          `there), or start a new session`,
      );
    }
    if (
      options.resume &&
      (error instanceof SessionError || /no (saved )?session|not found/i.test(String(error)))
    ) {
      throw new AcpRequestError(-32002, (error as Error).message);
    }
    throw error;
  }
  const { setup } = prepared;
  let running: AbortController | undefined;
  let prompting: Promise<void> = Promise.resolve();

  const ask = async (request: PermissionRequest, why: string): Promise<PermissionAnswer> => {
    const { call } = request;
    const view = toolCallView(call.name, call.input, setup.cwd);
    try {
      const response: RequestPermissionResponse = await client.request(
        "session/request_permission",
        {
          sessionId: id,
          toolCall: redactValue({
            toolCallId: call.id,
            title: view.title,
            kind: view.kind,
            status: "pending" as const,
            rawInput: call.input,
            locations: view.locations,
            content: [{ type: "content" as const, content: { type: "text" as const, text: why } }],
          }, prepared.redact),
          options: _OPTIONS.map(({ optionId, name, kind }) => ({ optionId, name, kind })),
        },
        { cancellationSignal: running?.signal, stopWaitingOnCancel: true },
      );
      const { outcome } = response;
      if (outcome.outcome !== "selected") return "no";
      return _OPTIONS.find((option) => option.optionId === outcome.optionId)?.answer ?? "no";
    } catch {
      return "no";
    }
  };

  const loops: RunLoops = runLoops({
    memory: prepared.memory,
    // The answer stands; the editor's log tells that memory failed (a full disk, a lock).
    onArchiveError: (runLoopId, error) =>
      options.log(
        `agent: run loop ${runLoopId} was not archived in memory: ${prepared.redact(error)}`,
      ),
  });
  const driver: Driver = startPrepared(prepared, options.args, {
    // The editor's user answers what a rule or the mode asks.
    permission: { ...prepared.policy, ask },
    runLoops: loops,
    id: options.resume ? undefined : id,
    // One conversation, one run loop at a time, as in the terminal.
    placing: "continue",
  });

  const say = (text: string) =>
    notify({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
  const settle = async () => {
    while (pending.length) await pending.splice(0).at(-1);
  };

  const setMode = (mode: string) => {
    if (!PERMISSION_MODES.includes(mode as PermissionMode)) {
      throw new AcpRequestError(
        -32602,
        `Unknown mode "${mode}": one of ${PERMISSION_MODES.join(", ")}`,
      );
    }
    prepared.mode.current = mode as PermissionMode;
  };

  const command = async (name: string, rest: string): Promise<boolean> => {
    switch (name) {
      case "compact": {
        const done = await driver.compact({ focus: rest });
        say(
          done
            ? `Compacted the conversation: about ${done.tokensBefore} → ${done.tokensAfter} tokens.`
            : "Nothing to compact yet.",
        );
        return true;
      }
      case "model": {
        if (rest) {
          const model = prepared.resolveModel(rest);
          await driver.switchModel(model, rest);
        }
        say(`The model is ${driver.modelSpec}.`);
        return true;
      }
      case "mode": {
        if (rest) {
          setMode(rest);
          notify({ sessionUpdate: "current_mode_update", currentModeId: prepared.mode.current });
        }
        say(`The permission mode is ${prepared.mode.current}.`);
        return true;
      }
      case "tools": {
        const offered = setup.tools.map((tool) => tool.name).join(", ") || "none";
        say(
          `Tools offered: ${offered}.` +
            (setup.withheld.length ? ` Not offered: ${describeWithheld(setup.withheld)}.` : ""),
        );
        return true;
      }
      case "cost": {
        const { usage, costUsd } = driver.conversation;
        say(
          `${usage.inputTokens} input and ${usage.outputTokens} output tokens` +
            (costUsd === undefined ? "." : `, $${costUsd.toFixed(4)}.`),
        );
        return true;
      }
      default:
        return false;
    }
  };

  return {
    modes: () => ({
      currentModeId: prepared.mode.current,
      availableModes: PERMISSION_MODES.map((mode) => ({ id: mode, ..._MODES[mode] })),
    }),
    async replay() {
      const updates = historyUpdates(driver.conversation.messages, setup.cwd);
      for (const update of updates) notify(redactValue(update, prepared.redact));
      await settle();
    },
    async announceCommands() {
      notify({ sessionUpdate: "available_commands_update", availableCommands: [...ACP_COMMANDS] });
      await settle();
    },
    async prompt(blocks) {
      if (running) {
        throw new AcpRequestError(
          -32600,
          "A prompt is already running in this session: cancel it first",
        );
      }
      const text = promptText(blocks);
      const slash = /^\/(\S+)\s*(.*)$/s.exec(text.trim());
      if (slash) {
        try {
          if (await command(slash[1], slash[2].trim())) {
            await settle();
            return "end_turn";
          }
        } catch (error) {
          say(`/${slash[1]}: ${(error as Error).message}`);
          await settle();
          return "end_turn";
        }
      }
      const controller = new AbortController();
      running = controller;
      const ended = Promise.withResolvers<void>();
      prompting = ended.promise;
      const redactor = eventRedactor<RunLoopEvent>(prepared.redact);
      const calls = new Map<string, { name: string; input: unknown }>();
      const send = (events: RunLoopEvent[]) => {
        for (const event of events) {
          for (const update of eventUpdates(event, setup.cwd, calls)) notify(update);
        }
      };
      try {
        const events = driver.send(text, { signal: controller.signal });
        let step = await events.next();
        while (!step.done) {
          send(redactor.push(step.value));
          step = await events.next();
        }
        send(redactor.flush());
        const result = step.value;
        await settle();
        switch (result.status) {
          case "success":
            return "end_turn";
          case "max_turns":
            return "max_turn_requests";
          case "aborted":
            return "cancelled";
          default:
            // The session goes on: the next prompt can try again.
            throw new AcpRequestError(
              -32603,
              prepared.redact(result.error?.message ?? "The run failed"),
            );
        }
      } finally {
        running = undefined;
        ended.resolve();
      }
    },
    cancel() {
      running?.abort();
    },
    setMode,
    busy: () => running !== undefined,
    async close() {
      // A prompt going on ends cancelled, and answers so, before the session closes under it.
      running?.abort();
      await prompting;
      await settle().catch(() => {});
      await driver.endRunLoop().catch(() => {});
      await loops.archivePending().catch(() => {});
      await driver.close();
      await prepared.close();
    },
  };
}

/**
 * What the user sent as one message: text as it is, a file the editor attached (`@file`) with
 * its content, a link to one as its path, for the model to read.
 *
 * @example
 * ```ts
 * import { promptText } from "./session.ts";
 * const text = promptText([
 *   { type: "text", text: "Explain" },
 *   { type: "resource", resource: { uri: "file:///w/a.ts", text: "let a = 1;" } },
 *   { type: "resource_link", uri: "file:///w/b.ts", name: "b.ts" },
 * ]);
 * if (!text.includes('<file path="/w/a.ts">\nlet a = 1;\n</file>') || !text.includes("@/w/b.ts")) {
 *   throw new Error(text);
 * }
 * ```
 */
export function promptText(blocks: readonly ContentBlock[]): string {
  const parts: string[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case "text":
        parts.push(block.text);
        break;
      case "resource_link":
        parts.push(`@${_pathOf(block.uri)}`);
        break;
      case "resource": {
        const { resource } = block;
        const where = _pathOf(resource.uri);
        parts.push(
          "text" in resource
            ? `\n<file path="${where}">\n${resource.text}\n</file>\n`
            : `\n(${where} is attached as binary data, which is not shown)\n`,
        );
        break;
      }
      default:
        parts.push(`\n(an attachment of type ${block.type} is not shown: only text is taken)\n`);
    }
  }
  return parts.join(" ").trim();
}

/**
 * The editor's MCP servers in the configuration's words: stdio servers with their command,
 * arguments and environment; HTTP and SSE servers with their URL and headers.
 *
 * @example
 * ```ts
 * import { mcpServersOf } from "./session.ts";
 * const config = mcpServersOf([
 *   { name: "fs", command: "npx", args: ["server"], env: [{ name: "TOKEN", value: "t" }] },
 *   { type: "http", name: "web", url: "https://example.com/mcp", headers: [] },
 * ]);
 * if (config.fs.type !== "stdio" || config.web.type !== "http") throw new Error("unexpected");
 * ```
 */
export function mcpServersOf(servers: readonly McpServer[]): Record<string, McpServerConfig> {
  const config: Record<string, McpServerConfig> = {};
  for (const server of servers) {
    if ("url" in server) {
      config[server.name] = {
        type: server.type === "sse" ? "sse" : "http",
        url: server.url,
        headers: Object.fromEntries(server.headers.map((header) => [header.name, header.value])),
      };
    } else {
      config[server.name] = {
        type: "stdio",
        command: server.command,
        args: [...server.args],
        env: Object.fromEntries(server.env.map((variable) => [variable.name, variable.value])),
      };
    }
  }
  return config;
}

function _pathOf(uri: string): string {
  try {
    return uri.startsWith("file:") ? fileURLToPath(uri) : uri;
  } catch {
    return uri;
  }
}
