/**
 * The summaries compaction writes: the prompt that asks the model for one, the transcript of
 * the messages it replaces, and the message that carries it in later requests.
 *
 * @module
 */

import { ProviderError } from "../errors.ts";
import { type Message, textOf, type UserMessage, userMessage } from "../messages.ts";
import { callModel } from "../model_call.ts";
import type { Model } from "../model.ts";
import type { RetryOptions } from "../retry.ts";
import { MESSAGE_OVERHEAD_TOKENS, type TokenCounter } from "./tokens.ts";
import { addUsage, emptyUsage, type Usage } from "../usage.ts";

/** The sections of a summary, in order. */
export const SUMMARY_SECTIONS: readonly string[] = [
  "Goal",
  "Instructions",
  "Discoveries",
  "Work done",
  "Files touched",
  "Next steps",
];

/** The system prompt of a summary request. */
export const SUMMARY_SYSTEM_PROMPT: string =
  "You summarize the earlier part of a conversation between a user and an AI agent that works " +
  "with tools, so that the agent can go on with the task from your summary and the most recent " +
  "messages alone. The agent's system prompt (its environment, its tools and the project's " +
  "instructions, such as AGENTS.md) is sent again with every request, so leave it out. " +
  "Everything else you are shown is gone once you have summarized it: keep every fact the agent " +
  "will need, and be specific (exact file paths, names, commands, error messages, numbers, and " +
  "decisions with their reasons). Never add anything that is not in the conversation. Do not " +
  "answer or continue the conversation: write only the summary.";

/** How the message carrying a summary begins. */
export const SUMMARY_MARKER = "[Summary of the earlier conversation]";

const _SECTION_HELP: Record<string, string> = {
  "Goal": "What the user wants done overall, and what done looks like.",
  "Instructions": "Every instruction, constraint and preference the user gave in the " +
    "conversation, in their words where the wording matters. The project's instructions are " +
    "in the system prompt, which is always sent: do not repeat them.",
  "Discoveries": "What was learned: how things work, causes of problems, facts found in files " +
    "and outputs.",
  "Work done": "What has been done so far and its results, including what failed and why.",
  "Files touched": "Each file read, created or changed, with a few words on what and why.",
  "Next steps": "What remains to be done, starting with what was in progress.",
};

/** What a summary prompt is made of. */
export interface SummaryPromptParts {
  /** The transcript of the messages to summarize. */
  transcript: string;
  /** The summary of what came before them, to fold in. */
  previous?: string;
  /** What the user asked the summary to focus on. */
  focus?: string;
}

/**
 * The user message of a summary request: the previous summary, the transcript, and the
 * sections to write.
 *
 * @example
 * ```ts
 * import { summaryPrompt } from "./summary.ts";
 * const prompt = summaryPrompt({ transcript: "[user]\nFix the bug", focus: "the parser" });
 * if (!prompt.includes("## Files touched") || !prompt.includes("the parser")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function summaryPrompt(parts: SummaryPromptParts): string {
  const lines: string[] = [];
  if (parts.previous) {
    lines.push(`<previous-summary>\n${parts.previous}\n</previous-summary>`, "");
  }
  lines.push(`<conversation>\n${parts.transcript}\n</conversation>`, "");
  if (parts.previous) {
    lines.push(
      "The previous summary covers what came before this part of the conversation: fold it " +
        "into the new summary, keeping what still matters.",
      "",
    );
  }
  if (parts.focus?.trim()) {
    lines.push(
      `The user asked the summary to focus on: ${parts.focus.trim()}. Give that the most ` +
        "detail; keep the rest short.",
      "",
    );
  }
  lines.push(
    "Write the summary in Markdown with exactly these sections, in this order (write " +
      '"None." under a section with nothing to say):',
    "",
  );
  for (const section of SUMMARY_SECTIONS) lines.push(`## ${section}`, _SECTION_HELP[section]);
  return lines.join("\n");
}

/**
 * The message that stands in for the messages a summary replaces, at the head of a request.
 *
 * @example
 * ```ts
 * import { SUMMARY_MARKER, summaryMessage } from "./summary.ts";
 * const message = summaryMessage("## Goal\nShip it");
 * if (!message.content.startsWith(SUMMARY_MARKER)) throw new Error("unexpected");
 * ```
 */
export function summaryMessage(summary: string): UserMessage {
  return userMessage(
    `${SUMMARY_MARKER} The earlier part of this conversation was removed to fit the context ` +
      `window; this summary of it stands in its place. The conversation goes on after it.\n\n` +
      `<summary>\n${summary}\n</summary>`,
  );
}

/**
 * A message as the summarizer reads it. Tool outputs and call arguments are cut to
 * `maxToolChars` (head and tail kept); reasoning is left out.
 *
 * @example
 * ```ts
 * import { transcriptEntry } from "./summary.ts";
 * const entry = transcriptEntry(
 *   { role: "tool", toolCallId: "1", name: "read", content: "x".repeat(5_000), isError: false },
 *   1_000,
 * );
 * if (!entry.startsWith("[tool result: read]") || entry.length > 1_100) throw new Error("unexpected");
 * ```
 */
export function transcriptEntry(message: Message, maxToolChars: number): string {
  switch (message.role) {
    case "user":
      return `[user]\n${message.content}`;
    case "tool":
      return `[tool ${message.isError ? "error" : "result"}: ${message.name}]\n${
        _cut(message.content, maxToolChars)
      }`;
    case "assistant": {
      const lines = ["[assistant]"];
      const text = textOf(message).trim();
      if (text) lines.push(text);
      for (const part of message.content) {
        if (part.type !== "tool_call") continue;
        const input = part.invalidInput ?? JSON.stringify(part.input ?? {});
        lines.push(`[tool call: ${part.name} ${_cut(input, maxToolChars)}]`);
      }
      return lines.join("\n");
    }
  }
}

/** What {@link summarize} needs. */
export interface SummarizeOptions {
  /** The model that writes the summary. */
  model: Model;
  /** The messages to summarize. */
  messages: readonly Message[];
  /** The summary of what came before them. */
  previous?: string;
  /** What the summary should focus on. */
  focus?: string;
  /** Counts tokens, to split a transcript too long for one request. */
  counter: TokenCounter;
  /** The most tokens a summary request may hold (prompt and transcript). */
  inputTokens: number;
  /** The most tokens of a summary. */
  maxOutputTokens: number;
  /** Tool outputs longer than this are cut in the transcript. */
  maxToolChars: number;
  /** Cancels the summary. */
  signal: AbortSignal;
  /** How failed calls are retried. */
  retry?: RetryOptions;
}

/**
 * Summarizes messages with the model (no tools offered), folding in the previous summary. A
 * transcript too long for one request is summarized in parts, each folded into the next.
 * Throws when a call fails or the model gives no text.
 *
 * @example
 * ```ts
 * import { summarize } from "./summary.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * import { HEURISTIC_COUNTER } from "./tokens.ts";
 * const { summary } = await summarize({
 *   model: scriptedModel([{ text: "## Goal\nFix the bug" }]),
 *   messages: [{ role: "user", content: "Fix the bug" }],
 *   counter: HEURISTIC_COUNTER,
 *   inputTokens: 4_000,
 *   maxOutputTokens: 500,
 *   maxToolChars: 1_000,
 *   signal: new AbortController().signal,
 * });
 * if (summary !== "## Goal\nFix the bug") throw new Error("unexpected");
 * ```
 */
export async function summarize(
  options: SummarizeOptions,
): Promise<{ summary: string; usage: Usage }> {
  const { counter } = options;
  const usage = emptyUsage();
  const fixed = counter.count(SUMMARY_SYSTEM_PROMPT) + counter.count(summaryPrompt({
    transcript: "",
    focus: options.focus,
    previous: " ",
  })) + 2 * MESSAGE_OVERHEAD_TOKENS;
  // Room for the transcript, once the prompt and a previous summary (at most one answer's
  // worth, or the given one) are in.
  const previousTokens = Math.max(
    options.maxOutputTokens,
    options.previous ? counter.count(options.previous) : 0,
  );
  const room = Math.max(256, options.inputTokens - fixed - previousTokens);
  let previous = options.previous;
  for (const chunk of _chunks(options.messages, options, room)) {
    const request = {
      system: SUMMARY_SYSTEM_PROMPT,
      messages: [userMessage(summaryPrompt({ transcript: chunk, previous, focus: options.focus }))],
      tools: [],
      maxOutputTokens: options.maxOutputTokens,
      signal: options.signal,
    };
    const call = callModel(options.model, request, options.retry);
    let step = await call.next();
    while (!step.done) step = await call.next(); // deltas and retries are not the run's
    const answer = step.value;
    addUsage(usage, answer.usage);
    if (answer.aborted) throw options.signal.reason ?? new DOMException("Aborted", "AbortError");
    const text = textOf({ role: "assistant", content: answer.content }).trim();
    if (!text) {
      throw new ProviderError(
        `${options.model.provider}/${options.model.id} wrote an empty summary`,
      );
    }
    previous = text;
  }
  return { summary: previous ?? "", usage };
}

/** Characters per token that hardly any text passes (runs of one letter take about 8). */
const _MOST_CHARS_PER_TOKEN = 8;

/** The transcript in pieces of at most `room` tokens, split between messages. */
function* _chunks(
  messages: readonly Message[],
  options: SummarizeOptions,
  room: number,
): Generator<string> {
  let entries: string[] = [];
  let tokens = 0;
  for (const message of messages) {
    let entry = transcriptEntry(message, options.maxToolChars);
    // Longer than this, an entry surely passes `room`: cutting it first keeps counting short.
    const most = room * _MOST_CHARS_PER_TOKEN;
    if (entry.length > most) entry = _cut(entry, most);
    let size = options.counter.count(entry) + 1;
    if (size > room) {
      // One message larger than a request: keep what fits of it.
      entry = _cut(entry, Math.floor(entry.length * room / size * 0.9));
      size = options.counter.count(entry) + 1;
    }
    if (tokens + size > room && entries.length > 0) {
      yield entries.join("\n\n");
      entries = [];
      tokens = 0;
    }
    entries.push(entry);
    tokens += size;
  }
  if (entries.length > 0) yield entries.join("\n\n");
}

/** `text` cut to about `max` characters, keeping its head and its tail. */
function _cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * 0.75);
  const tail = Math.max(0, max - head);
  const omitted = text.length - head - tail;
  return `${text.slice(0, head)}\n[… ${omitted.toLocaleString("en-US")} characters left out …]\n${
    tail > 0 ? text.slice(-tail) : ""
  }`;
}
