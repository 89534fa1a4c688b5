/**
 * The environment the tests run in, whatever the machine's: a HOME of their own (so no user's
 * settings, sessions or memory are read or written, and no test depends on where the real HOME
 * is), and the Deno cache the tests themselves run from (so the processes they start find their
 * modules even with HOME elsewhere, and an empty cache is filled once, by the tests' own Deno).
 *
 * The temporary directories the tests make are made in one of the test process's own
 * (`TMPDIR`, `agent_tests_<pid>_…` under the system's): what an earlier test process left there
 * is removed an hour after that process is gone, so that runs of the suite do not pile up in
 * `/tmp`.
 *
 * Imported for its effect by every test file that starts processes or reads HOME. Test files may
 * share one process (`--parallel`): the first import sets the environment and the others keep it.
 *
 * @module
 */

import { basename } from "node:path";

const MARK = "AGENT_TEST_HOME";

/** The name of a test process's temporary directory, with the process's id. */
const _OWN = /^agent_tests_(\d+)_/;
const _HOUR = 3_600_000;

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
 * processes of this user that are left over (see below) are removed first.
 */
async function _ownTempDir(): Promise<string> {
  const current = await Deno.realPath(Deno.env.get("TMPDIR") || "/tmp");
  // Made already, by this process (a test changed HOME since) or by the test process that
  // started this one: not one in another, whose paths would be too long for a socket's.
  if (_OWN.test(basename(current))) return current;
  const now = Date.now();
  for await (const entry of Deno.readDir(current)) {
    const pid = _OWN.exec(entry.name)?.[1];
    if (!entry.isDirectory || pid === undefined) continue;
    const path = `${current}/${entry.name}`;
    // A running suite makes and removes directories in it all the time: one untouched for an
    // hour whose process is gone, or for a day (a process id used again, another system's), is
    // a leftover.
    const info = await Deno.lstat(path).catch(() => undefined);
    if (!info || info.uid !== Deno.uid()) continue; // another user's, or gone
    const idle = now - (info.mtime?.getTime() ?? now);
    if (idle < _HOUR || (idle < 24 * _HOUR && _alive(Number(pid)))) continue;
    await Deno.remove(path, { recursive: true }).catch(() => {});
  }
  const made = await Deno.makeTempDir({ dir: current, prefix: `agent_tests_${Deno.pid}_` });
  // Others may pass through, as through the system's: a test that another user cannot read a
  // file tests the file's own mode, not this directory's.
  await Deno.chmod(made, 0o711);
  return made;
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
