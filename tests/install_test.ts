/**
 * Installing the agent as a command, as the README says, on a machine like any user's: it works
 * and prints no warning.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

Deno.test("install: no npm dependency has an install script, so no first run warns of one", async () => {
  const lock = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.lock"))) as {
    npm: Record<string, { scripts?: boolean }>;
  };
  const scripted = Object.entries(lock.npm).filter(([, entry]) => entry.scripts);
  assert.deepEqual(scripted.map(([name]) => name), []);
});

Deno.test("install: the README's install from a checkout gives a working agent command, quietly", async () => {
  const readme = await Deno.readTextFile(join(ROOT, "README.md"));
  const command = "deno install -g -A --config deno.json -n agent ./mod.ts";
  assert.ok(readme.includes(command), "the README shows the install from a checkout");
  const root = await Deno.makeTempDir({ prefix: "agent_install_" });
  try {
    const [, ...args] = command.split(" ");
    const installed = await new Deno.Command(Deno.execPath(), {
      args: [...args.slice(0, -1), "--root", root, args.at(-1)!],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const said = new TextDecoder().decode(installed.stdout) +
      new TextDecoder().decode(installed.stderr);
    assert.equal(installed.code, 0, said);
    assert.doesNotMatch(said, /Warning|Ignored build scripts|^error/im);

    const run = await new Deno.Command(join(root, "bin", "agent"), {
      args: ["--version"],
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(run.stderr);
    assert.equal(run.code, 0, stderr);
    assert.match(new TextDecoder().decode(run.stdout), /^agent \d+\.\d+\.\d+\n$/);
    assert.doesNotMatch(stderr, /Warning|Ignored build scripts/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
