/**
 * The commands that parse their own arguments (`agent memory`, `agent sessions`) take the
 * options given before them as their own: `agent --cwd <dir> memory stats` is the memory of
 * `<dir>`, not a task; an option they do not take is refused by name. Through the real CLI.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseCliArgs } from "../lib/cli/args.ts";
import { memoryPath } from "../lib/cli/memory.ts";
import { openMemory } from "../lib/memory/mod.ts";
import { parseSessionsArgs } from "../lib/cli/sessions_command.ts";
import { fileSessionStore, pruneSessions } from "../lib/session/mod.ts";
import { runCli } from "./cli_run_support.ts";

const AT = "2026-01-01T00:00:00.000Z";

/** A project, and the CLI's data and configuration directories, each of its own. */
async function places() {
  const made = (prefix: string) => Deno.makeTempDir({ prefix });
  return {
    project: await Deno.realPath(await made("agent_cmdopts_project_")),
    elsewhere: await Deno.realPath(await made("agent_cmdopts_elsewhere_")),
    data: await made("agent_cmdopts_data_"),
    config: await made("agent_cmdopts_config_"),
  };
}

/** `agent …args`, run from `elsewhere` (never the project), with no model to reach. */
function agent(args: string[], where: Awaited<ReturnType<typeof places>>) {
  return runCli(args, { ...where, cwd: where.elsewhere });
}

Deno.test("agent --cwd <dir> memory …: the options before memory are its own", async () => {
  const where = await places();
  const none = await agent(["--cwd", where.project, "memory"], where);
  assert.equal(none.code, 0, none.stderr);
  assert.equal(
    none.stdout,
    `No memory for ${where.project} yet (it would be ${memoryPath(where.data, where.project)}).\n`,
  );
  await Deno.mkdir(join(where.data, "memory"), { recursive: true, mode: 0o700 });
  await Deno.chmod(where.data, 0o700);
  {
    await using memory = await openMemory({ path: memoryPath(where.data, where.project) });
    for (const n of [1, 2, 3]) {
      await memory.archive({
        id: `loop-${n}`,
        goal: `Goal ${n}`,
        status: "completed",
        createdAt: AT,
        completedAt: AT,
        iterations: [],
      });
    }
  }
  const stats = await agent(["--cwd", where.project, "--output", "json", "memory", "stats"], where);
  assert.equal(stats.code, 0, stats.stderr);
  assert.equal(JSON.parse(stats.stdout).runLoops, 3);
  const dry = await agent(
    ["--cwd", where.project, "memory", "prune", "--keep", "1", "--dry-run"],
    where,
  );
  assert.equal(dry.stdout, "Would drop 2 run loops (0 segments) of 3; nothing was dropped.\n");
  // An option of a run, not of agent memory: refused by name, and nothing runs.
  const model = await agent(["-m", "openai/test", "memory", "stats"], where);
  assert.equal(model.code, 2);
  assert.match(model.stderr, /Unknown option '-m' for agent memory/);
  assert.equal(model.stdout, "");
  // A task that starts with "memory", after options: how to run it is said.
  const task = await agent(
    ["--cwd", where.project, "memory", "leaks", "in", "the", "cache"],
    where,
  );
  assert.equal(task.code, 2);
  assert.match(
    task.stderr,
    /agent memory has no command "leaks": .* quote it: agent "memory leaks …"/,
  );
});

Deno.test("agent --cwd <dir> sessions …: the options before sessions are its own", async () => {
  const where = await places();
  for (
    const args of [["--cwd", where.project, "sessions"], [
      "--cwd",
      where.project,
      "sessions",
      "list",
    ]]
  ) {
    const listed = await agent(args, where);
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(listed.stdout, `No saved sessions in ${where.project}.\n`);
  }
  const model = await agent(["-m", "openai/test", "sessions"], where);
  assert.equal(model.code, 2);
  assert.match(model.stderr, /Unknown option '-m'.*\(see agent sessions --help\)/);
});

Deno.test("parseCliArgs() passes the options before memory or sessions to them, and nothing else", () => {
  assert.deepEqual(parseCliArgs(["--cwd", "x", "memory", "prune", "--keep", "5"]).memoryArgs, [
    "--cwd",
    "x",
    "prune",
    "--keep",
    "5",
  ]);
  assert.deepEqual(parseCliArgs(["--cwd=x", "sessions"]).sessionsArgs, ["--cwd=x"]);
  assert.deepEqual(parseCliArgs(["memory"]).memoryArgs, []);
  // A value that reads "memory", a task that starts with it (quoted), or one after `--`.
  assert.equal(parseCliArgs(["-m", "memory"]).command, undefined);
  assert.equal(
    parseCliArgs(["-m", "a/b", "memory leaks in the cache"]).prompt,
    "memory leaks in the cache",
  );
  assert.equal(parseCliArgs(["--", "memory", "stats"]).prompt, "memory stats");
  assert.equal(parseCliArgs(["-v", "why", "memory"]).prompt, "why memory");
});

// `--keep=` (what `--keep=$N` gives with N unset) once read as `--keep 0`, removing every session.
Deno.test({
  name: "agent sessions prune: an empty or non-decimal --keep is refused, not read as a number",
  fn() {
    for (const keep of ["", " ", "0x10", "1e3", "1.0"]) {
      assert.throws(
        () => parseSessionsArgs(["prune", `--keep=${keep}`]),
        /--keep/,
        `--keep=${JSON.stringify(keep)} was accepted`,
      );
    }
  },
});

Deno.test({
  name: "agent sessions prune --keep= removes no session",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "cli_keep_test_" });
    try {
      const store = fileSessionStore({ dir });
      for (const cwd of ["/p/a", "/p/b"]) {
        const writer = await store.create({ model: "openai/gpt-4.1-mini", cwd });
        await writer.append({
          type: "message",
          message: { role: "user", content: "task" },
          at: new Date().toISOString(),
        });
        await writer.close();
      }
      await store.close?.();
      let keep: number | undefined;
      try {
        keep = parseSessionsArgs(["prune", "--keep="]).keep;
      } catch {
        return; // refused: nothing removed
      }
      const { removed } = await pruneSessions(dir, { keep });
      assert.deepEqual(removed, [], "an empty --keep removed every session");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("deno run cli.ts runs the command line, as the package's main module does", async () => {
  const where = await places();
  const entry = fileURLToPath(new URL("../cli.ts", import.meta.url));
  const version = await runCli(["--version"], { ...where, entry });
  assert.equal(version.code, 0, version.stderr);
  assert.match(version.stdout, /^agent \d+\.\d+\.\d+\n$/);
  const memory = await runCli(["--cwd", where.project, "memory"], { ...where, entry });
  assert.equal(memory.code, 0, memory.stderr);
  assert.match(memory.stdout, /^No memory for /);
});
