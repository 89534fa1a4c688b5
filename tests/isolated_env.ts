/**
 * The environment the tests run in, whatever the machine's: a HOME of their own (so no user's
 * settings, sessions or memory are read or written, and no test depends on where the real HOME
 * is), and the Deno cache the tests themselves run from (so the processes they start find their
 * modules even with HOME elsewhere, and an empty cache is filled once, by the tests' own Deno).
 *
 * The temporary directories the tests make are made in one of the test process's own
 * (`TMPDIR`, `agent_tests_<pid>_…` under the system's): what an earlier test process left there
 * is removed once that process is gone, so that runs of the suite do not pile up in `/tmp`.
 *
 * Imported for its effect by every test file that starts processes or reads HOME. Test files may
 * share one process (`--parallel`): the first import sets the environment and the others keep it.
 *
 * @module
 */

import { basename } from "node:path";

const MARK = "AGENT_TEST_HOME";

if (Deno.env.get(MARK) !== Deno.env.get("HOME")) {
  const info = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  const { denoDir } = JSON.parse(new TextDecoder().decode(info.stdout)) as { denoDir: string };
  const temp = await _ownTempDir();
  const home = await Deno.realPath(await Deno.makeTempDir({ dir: temp, prefix: "home_" }));
  const vars: Record<string, string> = {
    TMPDIR: temp,
    HOME: home,
    [MARK]: home,
    DENO_DIR: denoDir,
    XDG_CONFIG_HOME: `${home}/.config`,
    XDG_DATA_HOME: `${home}/.local/share`,
    XDG_STATE_HOME: `${home}/.local/state`,
    AGENT_CONFIG_DIR: `${home}/.config/agent`,
    AGENT_DATA_DIR: `${home}/.local/share/agent`,
  };
  for (const [name, value] of Object.entries(vars)) Deno.env.set(name, value);
}

/**
 * A temporary directory for this test process, under the system's; those of earlier test
 * processes that are gone are removed first.
 */
async function _ownTempDir(): Promise<string> {
  const current = await Deno.realPath(Deno.env.get("TMPDIR") || "/tmp");
  // Made already by this process (a test changed HOME since): not one in another, whose paths
  // would be too long for a socket's.
  if (basename(current).startsWith(`agent_tests_${Deno.pid}_`)) return current;
  const system = current;
  for await (const entry of Deno.readDir(system)) {
    const pid = /^agent_tests_(\d+)_/.exec(entry.name)?.[1];
    if (!entry.isDirectory || pid === undefined || _alive(Number(pid))) continue;
    await Deno.remove(`${system}/${entry.name}`, { recursive: true }).catch(() => {});
  }
  return await Deno.makeTempDir({ dir: system, prefix: `agent_tests_${Deno.pid}_` });
}

/** Whether process `pid` is running (on a system without `/proc`, it is taken to be). */
function _alive(pid: number): boolean {
  try {
    Deno.statSync("/proc/self");
  } catch {
    return true;
  }
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

/** The tests' HOME: a temporary directory of their own. */
export const TEST_HOME: string = Deno.env.get("HOME")!;
