/**
 * `agent acp`'s stdout: messages written in batches, in order, all of them out before the
 * process ends; a pipe that fails or stops taking bytes is said so.
 */

import assert from "node:assert/strict";
import { batchedOutput, type ByteWriter } from "../lib/cli/acp/batched_output.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A pipe that takes at most `max` bytes a write, after `delayMs`; records each write. */
function pipe(options: { max?: number; delayMs?: number; fail?: Error; never?: boolean } = {}) {
  const writes: string[] = [];
  const writer: ByteWriter = {
    async write(bytes) {
      if (options.never) return await new Promise<number>(() => {});
      await new Promise((done) => setTimeout(done, options.delayMs ?? 0));
      if (options.fail) throw options.fail;
      const taken = bytes.subarray(0, options.max ?? bytes.length);
      writes.push(decoder.decode(taken));
      return taken.length;
    },
  };
  return { writer, writes };
}

Deno.test("batchedOutput() sends messages written together in one write, in order", async () => {
  const { writer, writes } = pipe();
  const output = batchedOutput(writer);
  const lines = Array.from({ length: 20 }, (_, i) => `{"n":${i}}\n`);
  const stream = output.writable.getWriter();
  // As the SDK writes: each message on its own, awaited, within one turn of the event loop.
  for (const line of lines) await stream.write(encoder.encode(line));
  assert.equal(await output.drained(), true);
  assert.equal(writes.join(""), lines.join(""));
  assert.equal(writes.length, 1);

  await stream.write(encoder.encode("later\n"));
  await output.drained();
  assert.deepEqual(writes.slice(1), ["later\n"]);
});

Deno.test("batchedOutput() writes the rest of what a pipe took only part of", async () => {
  const { writer, writes } = pipe({ max: 3 });
  const output = batchedOutput(writer);
  const stream = output.writable.getWriter();
  await stream.write(encoder.encode("abcdefgh\n"));
  await stream.close();
  assert.deepEqual(writes, ["abc", "def", "gh\n"]);
});

Deno.test("batchedOutput() makes a writer wait past its high-water mark", async () => {
  const { writer, writes } = pipe({ delayMs: 20 });
  const output = batchedOutput(writer, 10);
  const stream = output.writable.getWriter();
  await stream.write(encoder.encode("small\n"));
  assert.equal(writes.length, 0, "under the mark, the write is taken at once");
  await stream.write(encoder.encode("past the mark\n"));
  assert.equal(writes.join(""), "small\npast the mark\n", "past it, it waits for its batch");
});

Deno.test("batchedOutput(): a failed write fails the writes after it and drained()", async () => {
  const broken = Object.assign(new Error("Broken pipe"), { name: "BrokenPipe" });
  const { writer } = pipe({ fail: broken });
  const output = batchedOutput(writer);
  const stream = output.writable.getWriter();
  await stream.write(encoder.encode("lost\n"));
  await assert.rejects(output.drained(), /Broken pipe/);
  await assert.rejects(stream.write(encoder.encode("after\n")), /Broken pipe/);
});

Deno.test("batchedOutput(): drained() gives up after its timeout on a pipe nobody reads", async () => {
  const { writer } = pipe({ never: true });
  const output = batchedOutput(writer);
  const stream = output.writable.getWriter();
  await stream.write(encoder.encode("stuck\n"));
  assert.equal(await output.drained(50), false);
});
