/**
 * The bubblewrap probe is kept per binary and kernel in the user's cache: a later process takes
 * the answer without spawning `bwrap`; a changed binary, another kernel, a corrupt file or a
 * file others may write means probing again. A stand-in `bwrap` logs each time it is run.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const CHILD = fileURLToPath(new URL("./sandbox_probe_child.ts", import.meta.url));
const ignore = Deno.build.os === "windows";

/** A `bwrap` that says its version, makes every "sandbox" it is asked for, and logs each run. */
async function fakeBwrap(): Promise<{ path: string; runs(): Promise<number>; cache: string }> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_probe_cache_" }));
  const path = join(dir, "bin", "bwrap");
  const log = join(dir, "runs.log");
  await Deno.mkdir(join(dir, "bin"));
  await Deno.writeTextFile(
    path,
    `#!/bin/sh\necho run >> '${log}'\n[ "$1" = --version ] && echo 'bubblewrap 9.8.7'\nexit 0\n`,
  );
  await Deno.chmod(path, 0o755);
  return {
    path,
    cache: join(dir, "cache", "agent", "sandbox.json"),
    runs: async () => (await Deno.readTextFile(log).catch(() => "")).split("\n").length - 1,
  };
}

/** What a new process finds. */
async function detect(bwrap: string, cache: string, mode = ""): Promise<Record<string, unknown>> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CHILD, bwrap, cache, ...(mode ? [mode] : [])],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

const FOUND = (path: string) => ({ available: true, version: "9.8.7", path });

Deno.test({
  name: "detectSandbox() with a cache: a later process takes the answer without running bwrap",
  ignore,
  fn: async () => {
    const bwrap = await fakeBwrap();
    assert.deepEqual(await detect(bwrap.path, bwrap.cache), FOUND(bwrap.path));
    assert.equal(await bwrap.runs(), 2, "--version and the probe");
    assert.equal((await Deno.stat(bwrap.cache)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(join(bwrap.cache, ".."))).mode! & 0o777, 0o700);
    assert.deepEqual(await detect(bwrap.path, bwrap.cache), FOUND(bwrap.path));
    assert.equal(await bwrap.runs(), 2, "the cache answered");
    const files = [...Deno.readDirSync(join(bwrap.cache, ".."))].map((entry) => entry.name);
    assert.deepEqual(files, ["sandbox.json"], "no temporary file is left");
  },
});

Deno.test({
  name: "detectSandbox() with a cache: another binary, kernel or namespace setting probes again",
  ignore,
  fn: async () => {
    const bwrap = await fakeBwrap();
    await detect(bwrap.path, bwrap.cache);
    // The binary changes (an upgrade): its size and time are not those kept.
    await Deno.writeTextFile(bwrap.path, "# upgraded\n", { append: true });
    assert.deepEqual(await detect(bwrap.path, bwrap.cache), FOUND(bwrap.path));
    assert.equal(await bwrap.runs(), 4);
    assert.deepEqual(await detect(bwrap.path, bwrap.cache), FOUND(bwrap.path));
    assert.equal(await bwrap.runs(), 4, "the new binary's answer is kept");
    // The same binary under another kernel: the kept entry says another release.
    const kept = JSON.parse(await Deno.readTextFile(bwrap.cache));
    assert.equal(kept.entries[0].kernel, Deno.osRelease());
    kept.entries[0].kernel = "0.0.1-another-kernel";
    await Deno.writeTextFile(bwrap.cache, JSON.stringify(kept));
    assert.deepEqual(await detect(bwrap.path, bwrap.cache), FOUND(bwrap.path));
    assert.equal(await bwrap.runs(), 6);
    // The same binary and kernel where user namespaces were set otherwise, or in another
    // container: the kept entry says other namespaces.
    const now = JSON.parse(await Deno.readTextFile(bwrap.cache));
    assert.match(now.entries[0].namespaces, /user:\[\d+\] mnt:\[\d+\]$/);
    now.entries[0].namespaces = now.entries[0].namespaces.replace(/user:\[\d+\]/, "user:[1]");
    await Deno.writeTextFile(bwrap.cache, JSON.stringify(now));
    assert.deepEqual(await detect(bwrap.path, bwrap.cache), FOUND(bwrap.path));
    assert.equal(await bwrap.runs(), 8);
    assert.deepEqual(await detect(bwrap.path, bwrap.cache), FOUND(bwrap.path));
    assert.equal(await bwrap.runs(), 8, "kept again");
  },
});

Deno.test({
  name:
    "detectSandbox() with a cache: a corrupt file, or one others may write, means probing again",
  ignore,
  fn: async () => {
    const bwrap = await fakeBwrap();
    await detect(bwrap.path, bwrap.cache);
    await Deno.writeTextFile(bwrap.cache, "{not json");
    assert.deepEqual(await detect(bwrap.path, bwrap.cache), FOUND(bwrap.path));
    assert.equal(await bwrap.runs(), 4, "probed again");
    assert.equal(JSON.parse(await Deno.readTextFile(bwrap.cache)).entries.length, 1, "rewritten");
    // An entry of the right shape for a binary that does not work, in a file others may write.
    const hostile = JSON.parse(await Deno.readTextFile(bwrap.cache));
    hostile.entries[0].version = "planted";
    await Deno.writeTextFile(bwrap.cache, JSON.stringify(hostile));
    await Deno.chmod(bwrap.cache, 0o666);
    assert.deepEqual(await detect(bwrap.path, bwrap.cache), FOUND(bwrap.path));
    assert.equal(await bwrap.runs(), 6, "the planted answer was not taken");
  },
});

Deno.test({
  name: "detectSandbox() with a read-only cache: the answer is not written",
  ignore,
  fn: async () => {
    const bwrap = await fakeBwrap();
    assert.deepEqual(await detect(bwrap.path, bwrap.cache, "read-only"), FOUND(bwrap.path));
    await assert.rejects(Deno.stat(join(bwrap.cache, "..")), Deno.errors.NotFound);
  },
});

Deno.test({
  name: "detectSandbox() with a cache: a failed probe is not kept",
  ignore,
  fn: async () => {
    const bwrap = await fakeBwrap();
    await Deno.writeTextFile(bwrap.path, "#!/bin/sh\necho 'bwrap: No permissions' >&2\nexit 1\n");
    const found = await detect(bwrap.path, bwrap.cache);
    assert.equal(found.available, false);
    assert.match(String(found.reason), /cannot make a sandbox here \(bwrap: No permissions\)/);
    await assert.rejects(Deno.stat(bwrap.cache), Deno.errors.NotFound);
  },
});
