/**
 * The slash commands of the interactive session.
 *
 * @module
 */

import type { WithheldTool } from "../capabilities.ts";
import { describeWithheld } from "../workspace.ts";
import { formatUsd } from "../render.ts";
import { terminalText } from "../terminal_text.ts";
import { PERMISSION_MODES, type PermissionMode } from "../../permissions/policy.ts";
import type { SessionStore } from "../../session/mod.ts";
import type { Conversation } from "../../conversation/conversation.ts";

/** What the commands act on. */
export interface CommandContext {
  /** Writes to the terminal. */
  write(text: string): void;
  /** The conversation now. */
  conversation(): Conversation;
  /** Starts an empty conversation. */
  clear(): Promise<void>;
  /** Goes on with a saved session. */
  resume(id: string): Promise<void>;
  /** Compacts the conversation now, steered by `focus`. */
  compact(focus: string): Promise<void>;
  /** The model in use, `provider/model`. */
  model(): string;
  /** Switches the model; throws a clear error for a bad spec. */
  switchModel(spec: string): Promise<void>;
  /** The tools offered, and those left out. */
  tools(): { offered: string[]; withheld: WithheldTool[] };
  /** The permission mode now. */
  permissionMode(): PermissionMode;
  /** Switches the permission mode. */
  setPermissionMode(mode: PermissionMode): void;
  /** Where sessions are saved, if anywhere. */
  store: SessionStore | undefined;
  /** The working directory. */
  cwd: string;
  /** Ends the session. */
  exit(): void;
}

interface _Command {
  usage: string;
  help: string;
  run(args: string, context: CommandContext): Promise<void> | void;
}

const COMMANDS: Record<string, _Command> = {
  help: {
    usage: "/help",
    help: "show the commands",
    run: (_, { write }) => write(commandHelp()),
  },
  clear: {
    usage: "/clear",
    help: "start a new conversation",
    run: async (_, context) => {
      await context.clear();
      context.write("Started a new conversation.\n");
    },
  },
  compact: {
    usage: "/compact [focus]",
    help: "summarize the conversation so far to free context (focus: what to keep)",
    run: (args, context) => context.compact(args),
  },
  model: {
    usage: "/model [provider/model]",
    help: "show or switch the model",
    run: async (args, context) => {
      if (!args) return context.write(`Model: ${context.model()}\n`);
      try {
        await context.switchModel(args);
      } catch (error) {
        // A provider without its key or its server: the session stays on the model it had.
        const reason = (error as Error).message.replace(/\.?$/, ".");
        throw new Error(`${reason} Still on ${context.model()}.`);
      }
      context.write(`Model: ${context.model()}\n`);
    },
  },
  mode: {
    usage: "/mode [plan|default|accept-edits]",
    help: "show or switch the permission mode",
    run: (args, context) => {
      if (args) {
        if (!(PERMISSION_MODES as readonly string[]).includes(args)) {
          throw new Error(`no mode "${args}": use ${PERMISSION_MODES.join(", ")}`);
        }
        context.setPermissionMode(args as PermissionMode);
      }
      const explain: Record<PermissionMode, string> = {
        plan: "the agent only looks and proposes; changes are refused",
        default: "the agent asks before it changes anything",
        "accept-edits": "file edits in the workspace go through; commands still ask",
      };
      context.write(
        `Permission mode: ${context.permissionMode()} (${explain[context.permissionMode()]})\n`,
      );
    },
  },
  tools: {
    usage: "/tools",
    help: "list the tools offered, and why others are not",
    run: (_, context) => {
      const { offered, withheld } = context.tools();
      context.write(`Tools: ${offered.join(", ") || "none"}\n`);
      if (withheld.length) context.write(`Not offered: ${describeWithheld(withheld)}\n`);
    },
  },
  sessions: {
    usage: "/sessions",
    help: "list this directory's saved sessions",
    run: async (_, context) => {
      if (!context.store) return context.write("Sessions are not saved in this run.\n");
      const { sessions, total } = await context.store.list(context.cwd, { limit: 20 });
      if (sessions.length === 0) return context.write("No saved sessions here yet.\n");
      for (const info of sessions) {
        const current = info.id === context.conversation().id ? " (current)" : "";
        context.write(
          `${info.id.slice(0, 8)}  ${info.updated.slice(0, 16).replace("T", " ")}  ` +
            `${String(info.messages).padStart(4)} ${
              info.messages === 1 ? "message " : "messages"
            }  ${terminalText(info.title)}${current}\n`,
        );
      }
      if (total > sessions.length) {
        context.write(
          `The ${sessions.length} newest of ${total}: agent --sessions --page 2 shows the next.\n`,
        );
      }
      context.write("Resume one with /resume <id>.\n");
    },
  },
  resume: {
    usage: "/resume <id>",
    help: "go on with a saved session",
    run: async (args, context) => {
      if (!args) return context.write("Usage: /resume <id> (see /sessions)\n");
      await context.resume(args);
    },
  },
  cost: {
    usage: "/cost",
    help: "tokens and cost of this conversation",
    run: (_, context) => {
      const { usage, costUsd } = context.conversation();
      const cached = usage.cacheReadTokens ? ` (${usage.cacheReadTokens} cached)` : "";
      context.write(
        `${usage.inputTokens} input${cached} and ${usage.outputTokens} output tokens · ${
          costUsd === undefined ? "cost unknown for this model" : formatUsd(costUsd)
        }\n`,
      );
    },
  },
  exit: {
    usage: "/exit",
    help: "leave (so do Ctrl+C on an empty prompt and Ctrl+D)",
    run: (_, context) => context.exit(),
  },
};

/**
 * The help text listing the commands.
 *
 * @example
 * ```ts
 * import { commandHelp } from "./commands.ts";
 * const help = commandHelp();
 * if (!/\/mode \[plan\|default\|accept-edits\] +show/.test(help)) throw new Error(help);
 * ```
 */
export function commandHelp(): string {
  const commands = Object.values(COMMANDS);
  const width = Math.max(...commands.map((command) => command.usage.length)) + 2;
  const rows = commands.map((command) => `  ${command.usage.padEnd(width)}${command.help}`);
  return `Commands:\n${rows.join("\n")}\n` +
    `Write @path to attach a file (Tab completes it). End a line with \\ to go on on the next.\n` +
    `Ctrl+C stops the answer; on an empty prompt it leaves.\n`;
}

/**
 * The command names, for completion.
 *
 * @example
 * ```ts
 * import { commandNames } from "./commands.ts";
 * if (!commandNames().includes("/exit")) throw new Error("unexpected");
 * ```
 */
export function commandNames(): string[] {
  return Object.keys(COMMANDS).map((name) => `/${name}`);
}

/**
 * Runs a slash command line (`/name args`). Gives false when the line is not a command.
 * An unknown command or a failing one is reported, never thrown.
 *
 * @example
 * ```ts
 * import { runCommand } from "./commands.ts";
 * let out = "";
 * const handled = await runCommand("/nope", { write: (t: string) => out += t } as never);
 * if (!handled || !out.includes("Unknown command /nope")) throw new Error(out);
 * ```
 */
export async function runCommand(line: string, context: CommandContext): Promise<boolean> {
  const match = /^\/(\S+)\s*(.*)$/s.exec(line.trim());
  if (!match) return false;
  const command = Object.hasOwn(COMMANDS, match[1]) ? COMMANDS[match[1]] : undefined;
  if (!command) {
    context.write(`Unknown command /${match[1]}. Type /help for the commands.\n`);
    return true;
  }
  try {
    await command.run(match[2].trim(), context);
  } catch (error) {
    context.write(`/${match[1]}: ${terminalText((error as Error).message)}\n`);
  }
  return true;
}
