/**
 * What the service keeps of a run once it ended: the conversations of its run loops are
 * closed (their sessions released), whichever run loops the run went through.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { createAgentService } from "../lib/service/mod.ts";
import type { Model } from "../mod.ts";
import { memorySessionStore, type SessionStore } from "../lib/session/mod.ts";
import { resolveModel } from "../lib/providers/mod.ts";
import { type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { openMemory } from "../lib/memory/sqlite.ts";

function openaiModel(server: MockServer): Model {
  return resolveModel("openai/test", {
    baseURL: server.url,
    env: (name) => name === "OPENAI_API_KEY" ? "sk-test" : undefined,
  });
}

/** A session store that tells which of the sessions it opened are still held by a writer. */
function watchedStore(): { store: SessionStore; held: Set<string> } {
  const inner = memorySessionStore();
  const held = new Set<string>();
  const watch = async (
    writer: ReturnType<SessionStore["create"]>,
  ): ReturnType<SessionStore["create"]> => {
    const opened = await writer;
    held.add(opened.id);
    return {
      id: opened.id,
      append: (entry) => opened.append(entry),
      async close() {
        held.delete(opened.id);
        await opened.close();
      },
    };
  };
  return {
    held,
    store: {
      ...inner,
      create: (init) => watch(inner.create(init)),
      open: (id) => watch(inner.open(id)),
    },
  };
}

Deno.test("service: a run that went on into a new run loop releases the session of the one it completed", async () => {
  await using model = startMockOpenAIServer({
    replies: (body) => ({
      text: `heard: ${
        (body.messages as { role: string; content: string }[])
          .filter((message) => message.role === "user").at(-1)?.content
      }`,
    }),
  });
  const memory = await openMemory({ path: ":memory:" });
  // Archiving the completed run loop waits for the test, so that a message arrives meanwhile.
  const archiving = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const archive = memory.archive.bind(memory);
  let archives = 0;
  memory.archive = async (loop) => {
    if (archives++ === 0) {
      archiving.resolve();
      await release.promise;
    }
    return await archive(loop);
  };
  const { store, held } = watchedStore();
  const service = createAgentService({ model: openaiModel(model), memory, sessions: store });
  try {
    const run = await service.start({ message: "Write the notes", complete: true });
    const first = run.runLoopId;
    await archiving.promise;
    const delivery = await service.send({ message: "Add dates", runLoopId: first });
    assert.equal(delivery.delivery, "queued");
    release.resolve();
    const info = await run.done;
    assert.equal(info.status, "success");
    assert.equal(info.result?.text, "heard: Add dates");
    assert.notEqual(info.runLoopId, first, "the message went on in a new run loop");
    // Both run loops are completed: nothing of them is held once the run ended.
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual([...held], []);
    assert.deepEqual(service.runLoops(), []);
  } finally {
    await service.close();
    await memory.close();
  }
});
