/**
 * The mock model of `bench/service.ts`, in a process of its own so that its work does not count
 * against the agent's. Prints its URL, then serves until killed.
 *
 * A run whose first message starts with "hold" pauses `HOLD_MS` before its last answer, so that
 * runs stay active long enough to be measured; any other run calls `read` for `TURNS - 1`
 * turns, then answers. Every answer comes after `DELAY_MS`.
 */

import { startMockOpenAIServer } from "../lib/testing/mod.ts";

const TURNS = Number(Deno.args[0] ?? 10);
const DELAY_MS = Number(Deno.args[1] ?? 50);
const HOLD_MS = 4_000;

type Message = { role: string; content?: unknown };

const server = startMockOpenAIServer({
  replies: (body) => {
    const messages = body.messages as Message[];
    const done = messages.filter((message) => message.role === "tool").length;
    const first = String(messages.findLast((message) => message.role === "user")?.content ?? "");
    const last = done + 1 >= TURNS;
    const delayMs = last && first.startsWith("hold") ? HOLD_MS : DELAY_MS;
    return last ? { text: `finished ${first}`, delayMs } : {
      toolCalls: [{ name: "read", arguments: { path: "notes.txt", limit: done + 1 } }],
      delayMs,
    };
  },
});
console.log(server.url);
await new Promise(() => {});
