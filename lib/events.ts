/**
 * What a run streams ({@link AgentEvent}) and what it returns ({@link RunResult}).
 *
 * @module
 */

import type { CompactionState } from "./compaction_state.ts";
import type { Message } from "./messages.ts";
import type { FinishReason } from "./model.ts";
import type { Usage } from "./usage.ts";

/** How a run ended. */
export type RunStatus = "success" | "max_turns" | "aborted" | "error";

/** What a run returns. */
export interface RunResult {
  /** How the run ended. */
  status: RunStatus;
  /** The final answer: the text of the last assistant message. */
  text: string;
  /** The whole conversation: the history passed in, then everything this run added. */
  messages: Message[];
  /** Model calls made (one per turn). */
  turns: number;
  /** Tool calls made. */
  toolCalls: number;
  /** Tokens used by the whole run. */
  usage: Usage;
  /** What the run cost in US dollars, when the model's prices are known. */
  costUsd?: number;
  /** Wall time of the run. */
  durationMs: number;
  /** The session the run belongs to. */
  sessionId: string;
  /** Why the last model call ended. */
  finishReason?: FinishReason;
  /** What went wrong, when `status` is `error`. */
  error?: { name: string; message: string };
  /**
   * The summary in force at the end, when the conversation was compacted (in this run or an
   * earlier one): pass it back as `compactionState` with `messages` to go on.
   */
  compaction?: CompactionState;
}

/** The sandbox a run's commands are under, as the `start` event reports it. */
export type SandboxReport =
  | {
    /** Commands run inside bubblewrap. */
    kind: "bubblewrap";
    /** The mode asked for. */
    mode: "auto" | "required";
    /** Whether commands keep the network. */
    net: boolean;
    /** What commands may write besides a private `/tmp`. */
    writable: string[];
  }
  | {
    /** Commands run without a sandbox, or (`required`) do not run at all. */
    kind: "none";
    /** The mode asked for. */
    mode: "auto" | "required" | "off";
    /** Why there is no sandbox. */
    reason: string;
  };

/**
 * How a run stands with the project it works in: whether the user trusts it, and if not, what it
 * asked for that was left out (its hooks, MCP servers, allow rules, default mode).
 */
export interface ProjectReport {
  /** The project's directory. */
  dir: string;
  /** Whether the project is trusted. */
  trusted: boolean;
  /** What was left out, in words (empty when trusted or when it asked for nothing). */
  withheld: string[];
}

/**
 * What the agent loop streams, in order: `start`, then turns, then `result`. The layers above
 * extend it where they make their own events: a run loop's (`RunLoopEvent` in lib/runloop) and
 * the service's (`ServiceEvent` in lib/service).
 */
export type AgentEvent =
  | {
    /** The run started. */
    type: "start";
    /** The session id. */
    sessionId: string;
    /** The model, as `provider/model`. */
    model: string;
    /** The names of the tools offered to the model. */
    tools: string[];
    /** The working directory. */
    cwd: string;
    /** What the runtime grants each capability, when the caller said. */
    capabilities?: Readonly<Record<string, string>>;
    /** The sandbox shell commands run in, when the caller said. */
    sandbox?: SandboxReport;
    /** Whether the project is trusted, and what of it was left out if not, when the caller said. */
    project?: ProjectReport;
  }
  | {
    /** A model call begins. */
    type: "turn_start";
    /** The turn number, from 1. */
    turn: number;
  }
  | {
    /** A piece of the answer. */
    type: "text_delta";
    /** The text. */
    text: string;
  }
  | {
    /** A piece of the model's reasoning. */
    type: "reasoning_delta";
    /** The text. */
    text: string;
  }
  | {
    /** The model called a tool; it runs now. */
    type: "tool_call";
    /** The call id. */
    id: string;
    /** The tool's name. */
    name: string;
    /** The arguments. */
    input: unknown;
  }
  | {
    /** A tool call finished. */
    type: "tool_result";
    /** The call id. */
    id: string;
    /** The tool's name. */
    name: string;
    /** What the model will see. */
    output: string;
    /** Whether the call failed. */
    isError: boolean;
    /** How long the call took. */
    durationMs: number;
    /** A short form for people, when the tool gave one. */
    display?: string;
    /** Structured data the tool attached for the caller. */
    metadata?: Record<string, unknown>;
  }
  | {
    /**
     * A model call failed and is tried again. Deltas streamed by the failed attempt are void;
     * `result.text` never repeats them.
     */
    type: "retry";
    /** The retry number, from 1. */
    attempt: number;
    /** The wait before the retry. */
    delayMs: number;
    /** What failed. */
    error: string;
  }
  | {
    /**
     * What is sent of the conversation was made smaller to fit the context window: older tool
     * outputs left out, older turns summarized. The history itself is not changed.
     */
    type: "compaction";
    /** Why: the request grew too large, the user asked, or the provider refused it as too long. */
    reason: "auto" | "manual" | "overflow";
    /** Estimated tokens of the request before. */
    tokensBefore: number;
    /** Estimated tokens of the request after. */
    tokensAfter: number;
    /**
     * The summary in force afterwards, to pass back as `compactionState`; `{ summary: "",
     * replaces: 0 }` when only tool outputs were left out and nothing was ever summarized.
     */
    state: CompactionState;
    /** Tool outputs left out of the request. */
    droppedToolOutputs: number;
    /** Messages newly folded into the summary (0 when only tool outputs were left out). */
    summarizedMessages: number;
  }
  | {
    /** A message was added to the conversation (input, answer, tool result, nudge). */
    type: "message";
    /** The message. */
    message: Message;
  }
  | {
    /**
     * The loop corrected the model (a repeated call, an announced action not taken), or could
     * not summarize the conversation.
     */
    type: "notice";
    /** What happened: a loop caught, a nudge sent, a summary that could not be made. */
    kind: "doom_loop" | "nudge" | "compaction_failed";
    /** What happened, in words; for `doom_loop` and `nudge`, the words sent to the model. */
    message: string;
  }
  | {
    /** A turn ended. */
    type: "turn_end";
    /** The turn number. */
    turn: number;
    /** Tokens the turn used. */
    usage: Usage;
    /** What the turn cost in US dollars, when the model's prices are known. */
    costUsd?: number;
  }
  | ({
    /** The run ended. */
    type: "result";
  } & Omit<RunResult, "messages">);

/** The `type` of every {@link AgentEvent}. */
export type AgentEventType = AgentEvent["type"];
