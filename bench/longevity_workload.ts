/**
 * The workload of `bench/longevity.ts`: realistic text (words drawn with Zipfian frequencies,
 * prose, code-like tool output, paths), the messages of a saved session, the run loops of an
 * archive, and the prompts of runs. Seeded, so that every run of the benchmark writes the same.
 */

import type { Message } from "../lib/messages.ts";
import type { RunLoop } from "../lib/memory/mod.ts";
import { zipfText } from "./zipf_text.ts";

const { next, pick, word } = zipfText(2026);

/** A sentence of 6 to 19 words. */
export function sentence(): string {
  const words = Array.from({ length: 6 + Math.floor(next() * 14) }, word);
  return words.join(" ").replace(/^./, (c) => c.toUpperCase()) + pick([".", ".", ".", "?", "!"]);
}

function prose(chars: number): string {
  const paragraphs: string[] = [];
  for (let size = 0; size < chars;) {
    const paragraph = Array.from({ length: 1 + Math.floor(next() * 3) }, sentence).join(" ");
    paragraphs.push(paragraph);
    size += paragraph.length + 2;
  }
  return paragraphs.join("\n\n");
}

/**
 * What users ask again and again ("run the tests and fix what fails"): 50 prompts, drawn with
 * Zipfian weights, so that memory holds many run loops that match the same words.
 */
const RECURRING = Array.from(
  { length: 50 },
  () =>
    `${pick(["Run", "Fix", "Check", "Update", "Explain", "Review"])} the ${word()} ${
      pick(["tests", "build", "lint errors", "config", "docs", "release notes"])
    } ${pick(["and fix what fails", "in src", "before the release", "again", ""])}`.trimEnd(),
);

/** A prompt: one of the recurring ones a fifth of the time, else a new sentence. */
export function prompt(): string {
  return next() < 0.2 ? RECURRING[zipfIndex(RECURRING.length)] : sentence();
}

const path = () => `src/${word()}/${word()}_${word()}.ts`;

function code(chars: number): string {
  const lines: string[] = [];
  for (let n = 1, size = 0; size < chars; n++) {
    const line = `${String(n).padStart(5)}\t  const ${word()}${
      word().replace(/^./, (c) => c.toUpperCase())
    } = await ${word()}("${word()} ${word()}", ${Math.floor(next() * 1000)});`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n");
}

/** A number in [0, n). */
export function below(n: number): number {
  return Math.floor(next() * n);
}

/**
 * The index of one of `n` things, drawn with Zipfian weights (s = 1): the first is the most
 * often drawn, as the project a user works in most.
 */
export function zipfIndex(n: number): number {
  let sum = 0;
  for (let k = 1; k <= n; k++) sum += 1 / k;
  let x = next() * sum;
  for (let k = 1; k <= n; k++) {
    x -= 1 / k;
    if (x <= 0) return k - 1;
  }
  return n - 1;
}

/**
 * The messages of a saved session: a prompt, then assistant turns with a tool call and its
 * result, then an answer. Most sessions are short (a few KB); one in ten is longer.
 */
export function sessionMessages(): Message[] {
  const messages: Message[] = [{ role: "user", content: sentence() }];
  const turns = next() < 0.1 ? 3 + below(6) : below(2) + 1;
  for (let turn = 0; turn < turns; turn++) {
    const id = `call_${turn}_${below(1e9)}`;
    const name = pick(["read", "bash", "grep"]);
    messages.push({
      role: "assistant",
      content: [
        { type: "text", text: prose(40 + next() * 200) },
        { type: "tool_call", id, name, input: { path: path(), pattern: word() } },
      ],
    });
    messages.push({
      role: "tool",
      toolCallId: id,
      name,
      content: name === "bash" ? prose(100 + next() * 800) : code(200 + next() * 2500),
      isError: next() < 0.05,
    });
  }
  messages.push({ role: "assistant", content: [{ type: "text", text: prose(60 + next() * 400) }] });
  return messages;
}

/**
 * A completed run loop as a CLI run leaves it: a goal, one to three iterations of reasoning,
 * tool calls and their output, and an answer. `at` is when it started.
 */
export function archivedRunLoop(at: number): RunLoop {
  const id = crypto.randomUUID();
  const time = (seconds: number) => new Date(at + seconds * 1000).toISOString();
  const goal = prompt();
  const iterations = 1 + (next() < 0.3 ? 1 + below(2) : 0);
  return {
    id,
    goal,
    status: "completed",
    createdAt: time(0),
    completedAt: time(iterations * 30),
    iterations: Array.from({ length: iterations }, (_, index) => {
      const calls = Array.from({ length: below(3) }, (_, k) => ({
        id: `${id}-${index}-${k}`,
        name: pick(["read", "bash", "grep", "edit"]),
        input: { path: path(), pattern: word() },
      }));
      return {
        index,
        userMessage: index === 0 ? goal : next() < 0.4 ? sentence() : undefined,
        reasoning: next() < 0.7 ? [prose(80 + next() * 400)] : [],
        toolCalls: calls,
        toolResults: calls.map((call) => ({
          id: call.id,
          name: call.name,
          output: call.name === "bash" ? prose(100 + next() * 700) : code(200 + next() * 1200),
          isError: next() < 0.05,
        })),
        response: prose(60 + next() * 500),
        startedAt: time(index * 30),
        endedAt: time(index * 30 + 25),
      };
    }),
  };
}

/** What a scripted run's tool answers: a few hundred bytes of code-like output. */
export function toolOutput(): string {
  return code(200 + next() * 800);
}

/** What a scripted run's model answers. */
export function answer(): string {
  return prose(60 + next() * 300);
}
