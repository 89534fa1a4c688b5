/**
 * Session store figures: `deno run -A bench/session.ts`. Prints (a) the time to load a
 * 2,000-message session (median of several runs; target ≤ 100 ms), (b) the cost of one append
 * at sessions of 100 to 50,000 messages (median µs in a window at each size; it should stay
 * flat), (c) the file size per message, and (d) the time to list many sessions.
 *
 * Messages are realistic: user prompts, assistant text with reasoning and tool calls, tool
 * results of a few hundred bytes to a few KB.
 */

import { join } from "node:path";
import type { Message } from "../lib/messages.ts";
import { fileSessionStore, projectSessionsDir, type SessionWriter } from "../lib/session/mod.ts";
import { median, random } from "./stats.ts";

const RUNS = 9;

const WORDS = "the file test build error function return value import module config path line"
  .split(" ");

function prose(next: () => number, bytes: number): string {
  let text = "";
  while (text.length < bytes) text += WORDS[Math.floor(next() * WORDS.length)] + " ";
  return text.trimEnd();
}

function source(next: () => number, bytes: number): string {
  const lines: string[] = [];
  for (let n = 1, size = 0; size < bytes; n++) {
    const line = `${String(n).padStart(6)}\t  const ${prose(next, 20)} = "${prose(next, 30)}";`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n");
}

/** The `i`th message of a realistic session: user, then assistant and tool turns. */
function message(next: () => number, i: number): Message {
  if (i % 50 === 0) return { role: "user", content: prose(next, 80 + next() * 400) };
  if (i % 2 === 1) {
    return {
      role: "assistant",
      content: [
        { type: "reasoning", text: prose(next, 100 + next() * 300), signature: "s".repeat(120) },
        { type: "text", text: prose(next, 50 + next() * 300) },
        {
          type: "tool_call",
          id: `call_${i}`,
          name: "read",
          input: { path: `src/${prose(next, 10).replaceAll(" ", "_")}.ts`, offset: 1, limit: 200 },
        },
      ],
    };
  }
  return {
    role: "tool",
    toolCallId: `call_${i - 1}`,
    name: "read",
    content: source(next, 300 + next() * 3500),
    isError: false,
  };
}

async function append(writer: SessionWriter, next: () => number, i: number): Promise<void> {
  await writer.append({ type: "message", message: message(next, i), at: new Date().toISOString() });
}

const dir = await Deno.makeTempDir({ prefix: "session_bench_" });
try {
  // (a) Loading a 2,000-message session.
  const store = fileSessionStore({ dir });
  const next = random(1);
  const small = await store.create({ cwd: "/bench/load", model: "openai/gpt-4.1-mini" });
  for (let i = 0; i < 2000; i++) await append(small, next, i);
  await small.close();
  const loads: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const start = performance.now();
    const session = await store.load(small.id);
    loads.push(performance.now() - start);
    if (session.messages.length !== 2000) throw new Error("lost messages");
  }
  const [info] = await store.list("/bench/load");
  const { size } = await Deno.stat(
    join(projectSessionsDir(dir, "/bench/load"), `${small.id}.jsonl`),
  );
  console.log(
    `load 2,000 messages (${(size / 1e6).toFixed(1)} MB): median ${median(loads).toFixed(1)} ms ` +
      `over ${RUNS} runs (min ${Math.min(...loads).toFixed(1)}, max ${
        Math.max(...loads).toFixed(1)
      }); target ≤ 100 ms`,
  );
  console.log(`file size per message: ${(size / info.messages / 1024).toFixed(2)} KB`);

  // (b) Append cost as the session grows. One session is grown to each size, then they are
  // appended to in turns (the same message to each), so that noise on the machine and JIT
  // warming fall on every size alike.
  for (const sync of [false, true]) {
    const sizes = sync ? [100, 1000] : [100, 1000, 10_000, 50_000];
    const store = fileSessionStore({ dir, sync });
    const gen = random(2);
    const writers: SessionWriter[] = [];
    for (const size of sizes) {
      const writer = await store.create({ cwd: `/bench/append/${sync}`, model: "a/b" });
      for (let i = 0; i < size; i++) await append(writer, gen, i);
      writers.push(writer);
    }
    const times: number[][] = sizes.map(() => []);
    for (let round = 0; round < (sync ? 50 : 300); round++) {
      const entry = {
        type: "message",
        message: message(gen, round),
        at: new Date().toISOString(),
      } as const;
      for (const [k, writer] of writers.entries()) {
        const start = performance.now();
        await writer.append(entry);
        times[k].push(performance.now() - start);
      }
    }
    for (const writer of writers) await writer.close();
    const figures = sizes.map((size, k) =>
      `${size.toLocaleString("en")}: ${(median(times[k]) * 1000).toFixed(0)} µs`
    );
    console.log(
      `append, median per message${sync ? " with sync: true" : ""} at ${figures.join(", ")}`,
    );
  }

  // (d) Listing many sessions.
  const many = fileSessionStore({ dir });
  const gen = random(3);
  for (let s = 0; s < 300; s++) {
    const writer = await many.create({ cwd: "/bench/list", model: "a/b" });
    for (let i = 0; i < 100; i++) await append(writer, gen, i);
    await writer.close();
  }
  const lists: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const start = performance.now();
    const infos = await many.list("/bench/list");
    lists.push(performance.now() - start);
    if (infos.length !== 300 || infos.some((info) => info.messages !== 100 || !info.title)) {
      throw new Error("bad listing");
    }
  }
  console.log(`list 300 sessions of 100 messages: median ${median(lists).toFixed(1)} ms`);
} finally {
  await Deno.remove(dir, { recursive: true });
}
