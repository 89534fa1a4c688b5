/**
 * What the service's guards cost a request: the bearer token's check, finding a session among
 * those of the service's own working directory (against loading it by id from the whole store,
 * as before), and a body of 1 MB read as it arrives, counted against the limit.
 */

import { createAgentHandler, newServiceToken } from "../lib/service/mod.ts";
import { fileSessionStore } from "../lib/session/mod.ts";
import { checkAccess } from "../lib/service/auth.ts";
import { listedSession } from "../lib/service/session_lookup.ts";
import { scriptedModel } from "../lib/testing/scripted_model.ts";
import type { SessionInfo } from "../lib/session/mod.ts";

const token = newServiceToken();
const authorization = `Bearer ${token}`;
const signed = new Request("http://127.0.0.1:8787/v1/runs", { headers: { authorization } });

Deno.bench("service: the bearer token's check of a request", { group: "token" }, () => {
  if (checkAccess(signed, token) !== undefined) throw new Error("refused");
});

const at = "2025-01-01T00:00:00Z";
const listed: SessionInfo[] = Array.from({ length: 1_000 }, () => ({
  id: crypto.randomUUID(),
  cwd: "/w",
  model: "a/b",
  created: at,
  updated: at,
  messages: 2,
  title: "",
}));
const wanted = listed[617].id.slice(0, 8);
Deno.bench("service: a session found by prefix among 1,000 listed", { group: "lookup" }, () => {
  listedSession(listed, wanted);
});

// A data directory with 200 sessions of the service's project and 200 of another one.
const dir = await Deno.makeTempDir({ prefix: "bench_service_guard_" });
const here = `${dir}/here`;
const store = fileSessionStore({ dir: `${dir}/sessions` });
const ids: string[] = [];
for (const cwd of [here, `${dir}/elsewhere`]) {
  for (let i = 0; i < 200; i++) {
    const writer = await store.create({ cwd, model: "openai/bench" });
    const message = { role: "user" as const, content: `task ${i}: ${"words ".repeat(40)}` };
    await writer.append({ type: "message", message, at });
    await writer.close();
    if (cwd === here) ids.push(writer.id);
  }
}
const handler = createAgentHandler({
  model: scriptedModel([]),
  sessions: store,
  cwd: here,
  token,
});
let next = 0;
const get = async (id: string) => {
  const response = await handler(
    new Request(`http://127.0.0.1/v1/sessions/${id}`, { headers: { authorization } }),
  );
  if (response.status !== 200) throw new Error(await response.text());
  await response.body?.cancel();
};
Deno.bench(
  "service: GET /v1/sessions/{whole id}, among 200 of its own and 200 others",
  { group: "session" },
  async () => await get(ids[next++ % ids.length]),
);
Deno.bench(
  "service: GET /v1/sessions/{8-character prefix}, among 200 of its own and 200 others",
  { group: "session" },
  async () => await get(ids[next++ % ids.length].slice(0, 8)),
);
Deno.bench(
  "service: the same session loaded by id from the whole store (no scoping)",
  { group: "session", baseline: true },
  async () => {
    await store.load(ids[next++ % ids.length]);
  },
);

const body = JSON.stringify({ message: "x".repeat(999_000) }); // the longest message taken
Deno.bench(
  "service: a body of 1 MB read as it arrives and checked (to a run loop that is not there)",
  { group: "body" },
  async () => {
    const response = await handler(
      new Request("http://127.0.0.1/v1/run-loops/nope/messages", {
        method: "POST",
        headers: { authorization },
        body,
      }),
    );
    if (response.status !== 404) throw new Error(await response.text());
    await response.body?.cancel();
  },
);

globalThis.addEventListener("unload", () => {
  Deno.removeSync(dir, { recursive: true });
});
