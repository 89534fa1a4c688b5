/**
 * The `read` tool's "unchanged since you read it" note, through whole runs against the loopback
 * Chat Completions server (the real SDK, the real loop and compaction, real files): a file read
 * again comes back as a note only while the earlier result is still in the model's view and
 * the file is the same, byte for byte.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { Agent, type Message, type RunResult, type Tool } from "../mod.ts";
import { createEditTool, createReadTool } from "../tools/mod.ts";
import { type MockReply, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { tree } from "./tool_support.ts";
import { type WireMessage, wireMessages } from "./openai_support.ts";

/** 60 lines of 40 characters: about 2.8 KB as read shows it. */
const TEXT =
  Array.from({ length: 60 }, (_, i) => `line ${String(i + 1).padStart(2, "0")} ${"a".repeat(32)}`)
    .join("\n") + "\n";

const NOTE = /unchanged since you read (it|them)/;

/** One read call, with an id of its own. */
function readCall(id: string, input: Record<string, unknown>): MockReply {
  return { toolCalls: [{ id, name: "read", arguments: input }] };
}

/** The outputs of the tool results of a run, in order. */
function outputs(result: RunResult): string[] {
  return result.messages.flatMap((message) => message.role === "tool" ? [message.content] : []);
}

/** Runs `replies` with `tools` in `cwd`; `onRequest` runs as each request arrives. */
async function run(
  cwd: string,
  replies: readonly MockReply[],
  options: {
    tools?: Tool[];
    messages?: Message[];
    onRequest?: (index: number) => void | Promise<void>;
    agent?: Partial<ConstructorParameters<typeof Agent>[0]>;
  } = {},
): Promise<{ result: RunResult; requests: WireMessage[][] }> {
  const pending: Promise<void>[] = [];
  await using server = startMockOpenAIServer({
    replies: (_body, index) => {
      pending.push(Promise.resolve(options.onRequest?.(index)));
      return replies[index];
    },
  });
  const agent = new Agent({
    model: "openai/test-model",
    baseURL: server.url,
    apiKey: "sk-test",
    tools: options.tools ?? [createReadTool()],
    cwd,
    ...options.agent,
  });
  const result = await agent.run("Read the file.", { messages: options.messages });
  await Promise.all(pending);
  assert.equal(result.status, "success", result.error?.message);
  return { result, requests: server.requests.map(wireMessages) };
}

Deno.test("read: a file read again, unchanged, comes back as a note that points to the earlier result", async () => {
  const cwd = await tree({ "a.txt": TEXT });
  const { result, requests } = await run(cwd, [
    readCall("call_r1", { path: "a.txt" }),
    readCall("call_r2", { path: "a.txt" }),
    readCall("call_r3", { path: join(cwd, "a.txt"), offset: 1 }),
    { text: "Done." },
  ]);
  const [first, second, third] = outputs(result);
  assert.ok(first.startsWith("     1\tline 01 "), first.slice(0, 40));
  assert.match(second, NOTE);
  // Said by what the model sees, not by a call id a server may have been sent rewritten.
  assert.ok(second.includes("your earlier read of a.txt (lines 1-60)"), second);
  assert.ok(!second.includes("call_r1"), second);
  assert.ok(second.length < 300, second);
  // The same file by another path, the same lines by another spelling.
  assert.match(third, NOTE);
  assert.ok(third.includes("(lines 1-60) above"), third);
  // The last request carries the content once.
  const last = requests.at(-1)!;
  assert.equal(last.filter((message) => message.content?.includes("line 01 ")).length, 1);
  await Deno.remove(cwd, { recursive: true });
});

Deno.test("read: a file rewritten with the same size and modification time is read again", async () => {
  const cwd = await tree({ "a.txt": TEXT });
  const path = join(cwd, "a.txt");
  const { mtime } = await Deno.stat(path);
  const changed = TEXT.replace("line 30 ", "LINE 30 ");
  assert.equal(changed.length, TEXT.length);
  const { result } = await run(
    cwd,
    [readCall("call_r1", { path: "a.txt" }), readCall("call_r2", { path: "a.txt" }), {
      text: "Done.",
    }],
    {
      // Before the second read runs: new content, the same size, the old modification time.
      // Synchronous, so done before the answer that asks for the second read is sent.
      onRequest: (index) => {
        if (index !== 1) return;
        Deno.writeTextFileSync(path, changed);
        Deno.utimeSync(path, mtime!, mtime!);
      },
    },
  );
  assert.equal((await Deno.stat(path)).mtime?.getTime(), mtime?.getTime());
  const [, second] = outputs(result);
  assert.doesNotMatch(second, NOTE);
  assert.ok(second.includes("LINE 30 "), second.slice(0, 80));
  await Deno.remove(cwd, { recursive: true });
});

Deno.test("read: after the agent's own edit, the file is read again", async () => {
  const cwd = await tree({ "a.txt": TEXT });
  const tools = [createReadTool(), createEditTool({ roots: [cwd] })];
  const { result } = await run(cwd, [
    readCall("call_r1", { path: "a.txt" }),
    {
      toolCalls: [{
        id: "call_e1",
        name: "edit",
        arguments: { path: "a.txt", old_string: "line 07 ", new_string: "line 7b " },
      }],
    },
    readCall("call_r2", { path: "a.txt" }),
    { text: "Done." },
  ], { tools });
  const [, edited, again] = outputs(result);
  assert.doesNotMatch(edited, /^Error/, edited);
  assert.doesNotMatch(again, NOTE);
  assert.ok(again.includes("line 7b "), again.slice(0, 400));
  await Deno.remove(cwd, { recursive: true });
});

Deno.test("read: lines not all shown before are read; lines inside an earlier read get the note", async () => {
  const cwd = await tree({ "a.txt": TEXT });
  const { result } = await run(cwd, [
    readCall("call_r1", { path: "a.txt", offset: 1, limit: 20 }),
    readCall("call_r2", { path: "a.txt", offset: 15, limit: 10 }),
    readCall("call_r3", { path: "a.txt", offset: 3, limit: 5 }),
    readCall("call_r4", { path: "a.txt" }),
    readCall("call_r5", { path: "a.txt", offset: 40, limit: 10 }),
    { text: "Done." },
  ]);
  const [first, overlapping, inside, whole, afterWhole] = outputs(result);
  assert.ok(first.includes("shown 1-20"), first.slice(-80));
  assert.doesNotMatch(overlapping, NOTE);
  assert.ok(overlapping.startsWith("    15\tline 15 "), overlapping.slice(0, 40));
  assert.match(inside, /^Lines 3-7 of a\.txt are unchanged since you read them/);
  assert.ok(inside.includes("your earlier read of a.txt (lines 1-20)"), inside);
  assert.doesNotMatch(whole, NOTE);
  assert.match(afterWhole, /^Lines 40-49 of a\.txt are unchanged/);
  assert.ok(afterWhole.includes("your earlier read of a.txt (lines 1-60)"), afterWhole);
  await Deno.remove(cwd, { recursive: true });
});

Deno.test("read: a result compaction left out of the request is read again", async () => {
  // Three files of about 1,600 tokens each in a 5,000-token window: by the fourth request the
  // older outputs are left out.
  const big = (name: string) =>
    Array.from({ length: 80 }, (_, i) => `${name} ${i} ${"word ".repeat(12)}`).join("\n") + "\n";
  const cwd = await tree({ "a.txt": big("alpha"), "b.txt": big("beta"), "c.txt": big("gamma") });
  const { result, requests } = await run(cwd, [
    readCall("call_r1", { path: "a.txt" }),
    readCall("call_r2", { path: "b.txt" }),
    readCall("call_r3", { path: "c.txt" }),
    readCall("call_r4", { path: "a.txt" }),
    { text: "Done." },
  ], { agent: { compaction: { contextWindow: 5_000 } } });
  // The request that asked for the fourth read no longer showed the first one's output.
  const fourth = requests[3].find((message) => message.tool_call_id === "call_r1");
  assert.ok(fourth && !fourth.content?.includes("alpha 0 "), fourth?.content ?? "");
  const again = outputs(result)[3];
  assert.doesNotMatch(again, NOTE);
  assert.ok(again.includes("alpha 0 "), again.slice(0, 80));
  await Deno.remove(cwd, { recursive: true });
});

Deno.test("read: a result cut short by the output limit is read again", async () => {
  const cwd = await tree({ "a.txt": TEXT });
  const { result } = await run(cwd, [
    readCall("call_r1", { path: "a.txt" }),
    readCall("call_r2", { path: "a.txt", offset: 2 }),
    { text: "Done." },
  ], { agent: { maxToolOutputChars: 1_000 } });
  const [first, second] = outputs(result);
  assert.ok(first.includes("characters cut"), first);
  assert.doesNotMatch(second, NOTE);
  await Deno.remove(cwd, { recursive: true });
});

Deno.test("read: only the conversation the model has counts, not another run's", async () => {
  const cwd = await tree({ "a.txt": TEXT });
  // One tool, so one memory of what it showed, across the runs.
  const tools = [createReadTool()];
  const script = [readCall("call_r1", { path: "a.txt" }), { text: "Done." }];
  const first = await run(cwd, script, { tools });
  assert.doesNotMatch(outputs(first.result)[0], NOTE);

  // A new conversation: the file was never shown in it.
  const fresh = await run(cwd, script, { tools });
  assert.doesNotMatch(outputs(fresh.result)[0], NOTE);

  // Another conversation whose read had the same id but showed something else.
  const other = fresh.result.messages.map((message): Message =>
    message.role === "tool"
      ? { ...message, content: "     1\tsomething else\n".repeat(40) }
      : message
  );
  const elsewhere = await run(cwd, [readCall("call_r1", { path: "a.txt" }), { text: "Done." }], {
    tools,
    messages: other,
  });
  assert.doesNotMatch(outputs(elsewhere.result).at(-1)!, NOTE);

  // The same conversation continued: the read is in it, and the note points to it.
  const continued = await run(cwd, [readCall("call_r9", { path: "a.txt" }), { text: "Done." }], {
    tools,
    messages: fresh.result.messages,
  });
  const note = outputs(continued.result).at(-1)!;
  assert.match(note, NOTE);
  assert.ok(note.includes("your earlier read of a.txt (lines 1-60)"), note);

  // The same conversation, its read result trimmed in place by the caller: read again.
  const trimmed = fresh.result.messages;
  for (const message of trimmed) {
    if (message.role === "tool") message.content = "(output trimmed by the app)";
  }
  const after = await run(cwd, [readCall("call_r10", { path: "a.txt" }), { text: "Done." }], {
    tools,
    messages: trimmed,
  });
  const again = outputs(after.result).at(-1)!;
  assert.doesNotMatch(again, NOTE);
  assert.ok(again.startsWith("     1\tline 01 "), again.slice(0, 40));
  await Deno.remove(cwd, { recursive: true });
});

Deno.test("read: servers that give every call the same id still get the note right", async () => {
  const cwd = await tree({ "a.txt": TEXT, "b.txt": TEXT.replaceAll("line", "LINE") });
  const { result } = await run(cwd, [
    readCall("call_1", { path: "a.txt" }),
    readCall("call_1", { path: "b.txt" }),
    readCall("call_1", { path: "a.txt" }),
    readCall("call_1", { path: "b.txt", offset: 1 }),
    { text: "Done." },
  ]);
  const [, , a, b] = outputs(result);
  assert.match(a, /^a\.txt is unchanged/);
  assert.match(b, /^b\.txt is unchanged/);
  await Deno.remove(cwd, { recursive: true });
});

Deno.test("read: a result a beforeModelCall hook kept from the model is read again", async () => {
  const cwd = await tree({ "a.txt": TEXT });
  const { result, requests } = await run(cwd, [
    readCall("call_r1", { path: "a.txt" }),
    readCall("call_r2", { path: "a.txt" }),
    { text: "Done." },
  ], {
    agent: {
      hooks: {
        // The hook's own compaction: tool outputs are sent shortened.
        beforeModelCall: ({ messages }) =>
          messages.map((message) =>
            message.role === "tool" ? { ...message, content: "[elided]" } : message
          ),
      },
    },
  });
  assert.equal(requests[1].find((message) => message.role === "tool")?.content, "[elided]");
  const again = outputs(result)[1];
  assert.doesNotMatch(again, NOTE);
  assert.ok(again.startsWith("     1\tline 01 "), again.slice(0, 40));
  await Deno.remove(cwd, { recursive: true });
});
