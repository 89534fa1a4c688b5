/**
 * What a resumed conversation shows first: its last exchanges, each the user's message and the
 * answer, cut short, so that the user sees where they left off.
 *
 * @module
 */

import stringWidth from "string-width";
import { isProgramNote } from "../../session/store.ts";
import type { Message } from "../../messages.ts";
import { terminalText } from "../terminal_text.ts";

/** Options of {@link recap}. */
export interface RecapOptions {
  /** Exchanges shown at most (default 3). */
  exchanges?: number;
  /** The terminal's width: longer lines are cut. */
  columns: number;
  /** ANSI colours. */
  color: boolean;
}

/**
 * The last exchanges of a conversation, a few lines each: `› message` and the final answer
 * below it, indented; empty when there is none.
 *
 * @example
 * ```ts
 * import { recap } from "./recap.ts";
 * const text = recap([
 *   { role: "user", content: "What is 2 + 2?" },
 *   { role: "assistant", content: [{ type: "text", text: "4." }] },
 * ], { columns: 80, color: false });
 * if (text !== "› What is 2 + 2?\n  4.\n") throw new Error(JSON.stringify(text));
 * ```
 */
export function recap(messages: readonly Message[], options: RecapOptions): string {
  const paint = (code: string, text: string) =>
    options.color ? `\x1b[${code}m${text}\x1b[0m` : text;
  const exchanges: { said: string; answer: string }[] = [];
  for (const message of messages) {
    if (message.role === "user") {
      const said = message.content;
      if (!isProgramNote(said)) {
        exchanges.push({ said, answer: "" });
      }
    } else if (message.role === "assistant" && exchanges.length > 0) {
      // The final answer: text before tool calls was part of the work.
      const text = message.content.map((part) => part.type === "text" ? part.text : "").join("")
        .trim();
      if (text) exchanges[exchanges.length - 1].answer = text;
    }
  }
  const shown = exchanges.slice(-(options.exchanges ?? 3));
  const earlier = exchanges.length - shown.length;
  const width = Math.max(10, options.columns - 2);
  const lines: string[] = [];
  if (earlier > 0) {
    lines.push(paint("2", `  … ${earlier} earlier exchange${earlier === 1 ? "" : "s"}`));
  }
  for (const exchange of shown) {
    // Saved text is shown without the control characters a terminal would act on.
    const said = terminalText(exchange.said);
    const answer = terminalText(exchange.answer);
    const [first, ...more] = said.trim().split("\n");
    lines.push(`${paint("36", "›")} ${_cut(first, width, more.length > 0)}`);
    const answered = answer.split("\n").filter((line) => line.trim());
    for (const [index, line] of answered.slice(0, 2).entries()) {
      const last = index === Math.min(answered.length, 2) - 1;
      lines.push(paint("2", `  ${_cut(line, width, last && answered.length > 2)}`));
    }
    if (answered.length === 0) lines.push(paint("2", "  (no answer)"));
  }
  return lines.length ? `${lines.join("\n")}\n` : "";
}

/** `text` within `width` columns, with "…" where it was cut (or where more follows). */
function _cut(text: string, width: number, more: boolean): string {
  if (stringWidth(text) <= width && !more) return text;
  let cut = "";
  for (const { segment } of new Intl.Segmenter().segment(text)) {
    if (stringWidth(cut + segment) > width - 1) break;
    cut += segment;
  }
  return `${cut.trimEnd()}…`;
}
