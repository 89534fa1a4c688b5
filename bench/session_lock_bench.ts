/**
 * What one writer per session costs: `deno bench -A bench/session_lock_bench.ts`. The lock is
 * taken when a session is opened or created (one `flock`), never on an append; `bench/session.ts`
 * shows appends at the same few µs as before. Only a refused process looks up who holds the
 * session (`/proc/locks`).
 */

import { fileSessionStore, resumeSession } from "../lib/session/mod.ts";

const dir = await Deno.makeTempDir({ prefix: "session_lock_bench_" });
const store = fileSessionStore({ dir: `${dir}/one` });
// New sessions go elsewhere: finding the one above stays a look at one folder of one file.
const fresh = fileSessionStore({ dir: `${dir}/many` });
const seeded = await store.create({ cwd: "/bench/lock", model: "a/b" });
for (let i = 0; i < 100; i++) {
  await seeded.append({
    type: "message",
    message: { role: "user", content: `message ${i} `.repeat(20) },
    at: new Date().toISOString(),
  });
}
await seeded.close();
const id = seeded.id;

const file = await Deno.open(`${dir}/raw`, { create: true, append: true });
globalThis.addEventListener("unload", () => {
  file.close();
  Deno.removeSync(dir, { recursive: true });
});

Deno.bench("flock alone: tryLockSync + unlockSync", { group: "lock" }, () => {
  if (!file.tryLockSync(true)) throw new Error("not locked");
  file.unlockSync();
});

Deno.bench(
  "open() + close() of a 100-message session (with its lock)",
  { group: "lock" },
  async () => {
    await (await store.open(id)).close();
  },
);

Deno.bench("create() + close() of a new session (lock, header)", async () => {
  await (await fresh.create({ cwd: "/bench/lock/new", model: "a/b" })).close();
});

Deno.bench("resumeSession() of a 100-message session: lock, then load", async () => {
  await (await resumeSession(store, id)).writer.close();
});

Deno.bench("a second writer refused (busy, holder looked up)", async (bench) => {
  const holder = await store.open(id);
  bench.start();
  await store.open(id).then(() => {
    throw new Error("not refused");
  }, () => {});
  bench.end();
  await holder.close();
});
