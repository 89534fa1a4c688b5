/**
 * The answer streamed to a terminal is written a tick at a time, not a delta at a time: the
 * deltas of one tick go out in one write, anything else printed (stdout or stderr) writes what
 * is held first, and nothing is lost or reordered, on an error or a closed stdout either.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { main } from "../cli.ts";
import { textRenderer } from "../lib/cli/render.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";

/** A tick later: timers set before this one have run. */
const nextTick = () => new Promise((resolve) => setTimeout(resolve, 1));

Deno.test("textRenderer() writes the deltas of one tick in one write at its end", async () => {
  const writes: string[] = [];
  const render = textRenderer({ out: (text) => writes.push(text), err: () => {} }, {
    color: false,
    stream: true,
  });
  render({ type: "turn_start", turn: 1 });
  for (const text of ["Hel", "lo", ", ", "world"]) render({ type: "text_delta", text });
  assert.deepEqual(writes, []);
  await nextTick();
  assert.deepEqual(writes, ["Hello, world"]);
  render({ type: "text_delta", text: "!" });
  await nextTick();
  assert.deepEqual(writes, ["Hello, world", "!"]);
});

Deno.test("textRenderer() writes what it holds before anything else it prints, on stdout or stderr", () => {
  const writes: string[] = [];
  const render = textRenderer({
    out: (text) => writes.push(`out:${text}`),
    err: (text) => writes.push(`err:${text}`),
  }, { color: false, stream: true });
  render({ type: "text_delta", text: "Let me look." });
  render({ type: "tool_call", id: "1", name: "ls", input: {} });
  render({ type: "text_delta", text: "Done." });
  render({
    type: "result",
    status: "success",
    text: "Done.",
    turns: 2,
    toolCalls: 1,
    usage: { inputTokens: 1, outputTokens: 1 },
    durationMs: 1,
    sessionId: "s",
  });
  assert.deepEqual(writes.slice(0, 4), [
    "out:Let me look.",
    "out:\n",
    "err:→ ls {}\n",
    "out:Done.",
  ]);
  assert.equal(writes[4], "out:\n");
  assert.match(writes[5], /^err:2 turns · 1 tool call/);
});

Deno.test("textRenderer() throws a write that failed at the end of a tick at its next print, and flush() writes at once", async () => {
  const writes: string[] = [];
  let fail = true;
  const render = textRenderer({
    out: (text) => {
      if (fail) throw new Error("disk on fire");
      writes.push(text);
    },
    err: () => {},
  }, { color: false, stream: true });
  render({ type: "text_delta", text: "lost?" });
  await nextTick();
  // Thrown once, by the print that follows, as if that print had failed.
  assert.throws(() => render({ type: "text_delta", text: "next" }), /disk on fire/);
  fail = false;
  render({ type: "text_delta", text: "again" });
  render.flush();
  assert.deepEqual(writes, ["again"]);
  render.flush();
  assert.deepEqual(writes, ["again"], "nothing held: nothing written");
});

Deno.test("agent on a terminal streams a long answer whole and in order, in fewer writes than deltas", async () => {
  const deltas = Array.from({ length: 3_000 }, (_, i) => `w${i} `);
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string }>;
      return messages.at(-1)!.role === "tool"
        ? { text: deltas }
        : { text: ["Looking. "], toolCalls: [{ name: "ls", arguments: { path: "." } }] };
    },
  });
  const cwd = await Deno.makeTempDir({ prefix: "agent_stream_" });
  const writes: Array<{ to: "out" | "err"; text: string }> = [];
  const env: Record<string, string> = {
    OPENAI_API_KEY: "sk-test",
    OPENAI_BASE_URL: server.url,
    NO_COLOR: "1",
  };
  const code = await main(["-m", "openai/test", "--cwd", cwd, "--no-session", "list it"], {
    out: (text) => writes.push({ to: "out", text }),
    err: (text) => writes.push({ to: "err", text }),
    readStdin: () => Promise.resolve(undefined),
    env: (name) => env[name],
    color: false,
    outIsTerminal: true,
    onInterrupt: () => () => {},
  });
  assert.equal(code, 0);
  const out = writes.filter((write) => write.to === "out");
  assert.equal(out.map((write) => write.text).join(""), `Looking. \n${deltas.join("")}\n`);
  assert.ok(out.length < deltas.length, `${out.length} writes for ${deltas.length} deltas`);
  // The tool call is told after the text before it, and before the text after it.
  const call = writes.findIndex((write) => write.to === "err" && write.text.includes("→ ls"));
  const before = writes.slice(0, call).filter((write) => write.to === "out").map((w) => w.text);
  assert.equal(before.join(""), "Looking. \n");
});
