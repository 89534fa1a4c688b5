/**
 * `--no-session` writes nothing to disk: no session, no memory, no lock, no cache, no log. The
 * real CLI runs with HOME, every XDG directory and the project in temporary trees, and both
 * trees are compared file by file before and after.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type MockServer, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { denoDir, Terminal } from "./terminal_support.ts";

const MOD = fileURLToPath(new URL("../mod.ts", import.meta.url));

/** A user's HOME (with its XDG directories inside) and a project, each a tree of its own. */
interface Trees {
  home: string;
  project: string;
}

async function trees(): Promise<Trees> {
  const home = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_nosession_home_" }));
  const project = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_nosession_cwd_" }));
  await Deno.writeTextFile(join(project, "notes.md"), "The staging host is db-7.\n");
  return { home, project };
}

/** Every entry under `root`: its kind, size, mode and modification time. */
async function snapshot(root: string): Promise<Map<string, string>> {
  const seen = new Map<string, string>();
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      const info = await Deno.lstat(path);
      const kind = info.isDirectory ? "dir" : info.isSymlink ? "link" : "file";
      seen.set(
        path.slice(root.length),
        `${kind} ${info.isDirectory ? "" : info.size} ${info.mode?.toString(8)} ` +
          `${info.isDirectory ? "" : info.mtime?.getTime()}`,
      );
      if (info.isDirectory) await walk(path);
    }
  };
  await walk(root);
  return seen;
}

/** What changed between two snapshots, one line per path. */
function changes(before: Map<string, string>, after: Map<string, string>): string[] {
  const changed: string[] = [];
  for (const [path, now] of after) {
    const was = before.get(path);
    if (was === undefined) changed.push(`created ${path}`);
    else if (was !== now) changed.push(`modified ${path} (${was} → ${now})`);
  }
  for (const path of before.keys()) if (!after.has(path)) changed.push(`removed ${path}`);
  return changed;
}

/** Nothing of the environment but `home` (its XDG directories inside) and the model's server. */
async function environment(server: MockServer, home: string): Promise<Record<string, string>> {
  return {
    HOME: home,
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    DENO_DIR: await denoDir(),
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local/share"),
    XDG_STATE_HOME: join(home, ".local/state"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_RUNTIME_DIR: join(home, ".run"),
    OPENAI_API_KEY: "sk-test-nosession-3b8e",
    OPENAI_BASE_URL: server.url,
    NO_COLOR: "1",
  };
}

/** Runs the CLI in the project with nothing of the environment but the trees. */
async function cli(server: MockServer, where: Trees, args: string[]) {
  const { home } = where;
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "-m", "openai/test", ...args],
    cwd: where.project,
    clearEnv: true,
    env: await environment(server, home),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, stderr);
  return { stdout, stderr };
}

/** A model that reads the notes (a tool call), then answers. */
function model(): MockServer {
  return startMockOpenAIServer({
    replies: (body) =>
      (body.messages as Array<{ role: string }>).some((message) => message.role === "tool")
        ? { text: "The staging host is db-7." }
        : { toolCalls: [{ name: "read", arguments: { path: "notes.md" } }] },
  });
}

Deno.test("cli --no-session: a run on a fresh HOME creates nothing, in HOME or in the project", async () => {
  await using server = model();
  const where = await trees();
  const home = await snapshot(where.home);
  const project = await snapshot(where.project);
  const run = await cli(server, where, ["--no-session", "Where is staging?"]);
  assert.equal(run.stdout, "The staging host is db-7.\n");
  assert.deepEqual(changes(home, await snapshot(where.home)), []);
  assert.deepEqual(changes(project, await snapshot(where.project)), []);
  assert.doesNotMatch(run.stderr, /session [0-9a-f]{8}/, "no session to go on with is offered");
});

Deno.test("cli --no-session: after runs that kept a session, memory and caches, nothing is touched", async () => {
  await using server = model();
  const where = await trees();
  // A user who has run the agent before: sessions, memory, caches and all.
  await cli(server, where, ["Where is staging?"]);
  const kept = await snapshot(where.home);
  assert.ok([...kept.keys()].some((path) => path.endsWith(".db")), "the memory was kept");
  assert.ok([...kept.keys()].some((path) => path.endsWith(".jsonl")), "the session was kept");
  const project = await snapshot(where.project);
  const run = await cli(server, where, ["--no-session", "Where is staging again?"]);
  assert.equal(run.stdout, "The staging host is db-7.\n");
  assert.deepEqual(changes(kept, await snapshot(where.home)), []);
  assert.deepEqual(changes(project, await snapshot(where.project)), []);
});

Deno.test("cli --no-session: the interactive session keeps no input history either", async () => {
  await using server = model();
  const where = await trees();
  const { home } = where;
  const home0 = await snapshot(home);
  const project0 = await snapshot(where.project);
  {
    await using terminal = await Terminal.start(
      [Deno.execPath(), "run", "-A", MOD, "-m", "openai/test", "--no-session"],
      await environment(server, home),
      where.project,
    );
    await terminal.waitFor(/\/help for commands/, 60_000);
    await terminal.type("remember my prompt");
    await terminal.keys("Enter");
    await terminal.waitFor(/db-7[\s\S]*out tokens/);
    await terminal.type("/exit");
    await terminal.keys("Enter");
  }
  assert.deepEqual(changes(home0, await snapshot(home)), []);
  assert.deepEqual(changes(project0, await snapshot(where.project)), []);
});
