/**
 * What the sandbox does not show a command: the host's unix sockets when the network is cut, and
 * the credentials and shell histories of the home directory (and what the settings add). Through
 * the real CLI, a scripted model, and real bubblewrap.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { detectSandbox } from "../lib/sandbox/detect.ts";
import {
  commands,
  outputs,
  runSandboxed,
  Scratch,
  startMockOpenAIServer,
} from "./cli_sandbox_support.ts";

const found = await detectSandbox();
const ignore = !found.available;
if (ignore) console.warn(`sandbox hidden tests skipped: ${found.reason}`);

const hasCurl = await new Deno.Command("curl", { args: ["--version"], stdout: "null" }).output()
  .then((output) => output.success, () => false);

/** A unix socket at `path` that answers HTTP with `hello from <name>`. */
async function listen(path: string, name: string): Promise<Deno.HttpServer> {
  await Deno.mkdir(dirname(path), { recursive: true });
  return Deno.serve(
    { path, transport: "unix", onListen() {} },
    () => new Response(`hello from ${name}`),
  );
}

/** A directory under `/run` this test may make, as services keep theirs there; else none. */
async function runDirectory(): Promise<string | undefined> {
  try {
    return await Deno.makeTempDir({ dir: "/run", prefix: "agent_test_" });
  } catch {
    return undefined; // Not root: the same mechanism is shown on the other paths.
  }
}

/** The command that tries each socket: what answered, or `refused <path>`. */
function probe(sockets: string[]): string {
  return sockets.map((path) =>
    `curl -s --max-time 3 --unix-socket '${path}' http://localhost/ || echo "refused ${path}"; echo`
  ).join("; ");
}

Deno.test({
  name: "cli sandbox hidden: without net no unix socket of the host answers, wherever it is; " +
    "with net those of services do, the user's runtime directory's do not",
  ignore: ignore || !hasCurl,
  async fn() {
    await using scratch = new Scratch();
    const home = await scratch.visible("agent_hidden_home_");
    const ws = await scratch.temp("agent_hidden_ws_");
    const outside = await scratch.visible("agent_hidden_sockets_");
    const run = await runDirectory();
    const runtime = await scratch.visible("agent_hidden_runtime_");
    const sockets = {
      // Outside the workspace, where a command can read.
      outside: join(outside, "service.sock"),
      // Where a database keeps it: under /run when the test may make it, else a path like it.
      run: join(run ?? join(outside, "run"), "postgresql", ".s.PGSQL.5432"),
      // In the home directory, and in the workspace itself.
      home: join(home, ".cache", "app", "app.sock"),
      workspace: join(ws, ".devenv", "db.sock"),
    };
    const servers = await Promise.all(
      Object.entries(sockets).map(([name, path]) => listen(path, name)),
    );
    const agent = await listen(join(runtime, "bus"), "runtime");
    try {
      const list = Object.values(sockets);
      // Deno lets the agent reach 127.0.0.1 only: commands get no network at all.
      await using cut = startMockOpenAIServer({ replies: commands(probe(list)) });
      const offline = await runSandboxed(scratch, cut, ["--cwd", ws, "go"], {
        home,
        permissions: [
          "--allow-read",
          "--allow-write",
          "--allow-run",
          "--allow-env",
          "--allow-net=127.0.0.1",
        ],
      });
      assert.equal(offline.code, 0, offline.stderr);
      assert.equal(offline.events[0].sandbox.net, false);
      const [cutOff] = outputs(offline);
      assert.doesNotMatch(cutOff, /hello from/, cutOff);
      for (const path of list) assert.ok(cutOff.includes(`refused ${path}`), cutOff);

      // With the whole network, a service's socket answers as its port would; the runtime
      // directory (agents, buses, the display) stays hidden.
      await using wide = startMockOpenAIServer({
        replies: commands(probe([...list, join(runtime, "bus")])),
      });
      const online = await runSandboxed(scratch, wide, ["--cwd", ws, "go"], {
        home,
        env: { XDG_RUNTIME_DIR: runtime },
      });
      assert.equal(online.code, 0, online.stderr);
      assert.equal(online.events[0].sandbox.net, true);
      const [reached] = outputs(online);
      for (const name of Object.keys(sockets)) {
        assert.match(reached, new RegExp(`hello from ${name}`));
      }
      assert.ok(reached.includes(`refused ${join(runtime, "bus")}`), reached);
    } finally {
      for (const server of [...servers, agent]) await server.shutdown();
      if (run) await Deno.remove(run, { recursive: true });
    }
  },
});

/** Credentials and histories a command must not read, by their place in the home directory. */
const SECRETS = [
  ".git-credentials",
  ".config/gh/hosts.yml",
  ".npmrc",
  ".pgpass",
  ".cargo/credentials.toml",
  ".cargo/credentials",
  ".vault-token",
  ".docker/config.json",
  ".kube/config",
  ".aws/credentials",
  ".netrc",
  ".config/gcloud/credentials.db",
  ".ssh/id_ed25519",
  ".bash_history",
  ".zsh_history",
  ".local/share/fish/fish_history",
  ".python_history",
  ".psql_history",
  ".mysql_history",
];

Deno.test({
  name: "cli sandbox hidden: credentials and shell histories are unreadable inside, and so " +
    "are the paths the user's and the project's settings add",
  ignore,
  async fn() {
    await using scratch = new Scratch();
    const home = await scratch.visible("agent_hidden_home_");
    const ws = await scratch.temp("agent_hidden_ws_");
    const config = await scratch.temp("agent_hidden_config_");
    const added = ["notes/private.txt", "project-secret.txt"];
    for (const path of [...SECRETS, ...added]) {
      await Deno.mkdir(dirname(join(home, path)), { recursive: true });
      await Deno.writeTextFile(join(home, path), `SECRET ${path}\n`);
    }
    await Deno.writeTextFile(join(home, "visible.txt"), "VISIBLE\n");
    await Deno.writeTextFile(
      join(config, "settings.json"),
      JSON.stringify({ sandbox: { hide: ["~/notes/private.txt"] } }),
    );
    // A project's settings may hide more (and nothing else of its "sandbox" applies).
    await Deno.mkdir(join(ws, ".agent"));
    await Deno.writeTextFile(
      join(ws, ".agent", "settings.json"),
      JSON.stringify({ sandbox: { hide: ["~/project-secret.txt"] } }),
    );
    const read = [...SECRETS, ...added, "visible.txt"]
      .map((path) => `cat "$HOME/${path}" 2>/dev/null || echo "unreadable ${path}"`)
      .join("; ");
    await using server = startMockOpenAIServer({ replies: commands(read) });
    const run = await runSandboxed(scratch, server, ["--cwd", ws, "--sandbox", "required", "go"], {
      home,
      config,
    });
    assert.equal(run.code, 0, run.stderr);
    const [output] = outputs(run);
    assert.doesNotMatch(output, /SECRET/, output);
    assert.doesNotMatch(run.stderr, /"sandbox" ignored/);
    for (const path of [...SECRETS, ...added]) {
      assert.ok(output.includes(`unreadable ${path}`), `${path}: ${output}`);
    }
    assert.match(output, /VISIBLE/, "the rest of HOME shows");
  },
});
