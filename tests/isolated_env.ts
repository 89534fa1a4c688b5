/**
 * The environment the tests run in, whatever the machine's: a HOME of their own (so no user's
 * settings, sessions or memory are read or written, and no test depends on where the real HOME
 * is), and the Deno cache the tests themselves run from (so the processes they start find their
 * modules even with HOME elsewhere, and an empty cache is filled once, by the tests' own Deno).
 *
 * Imported for its effect by every test file that starts processes or reads HOME. Test files may
 * share one process (`--parallel`): the first import sets the environment and the others keep it.
 *
 * @module
 */

const MARK = "AGENT_TEST_HOME";

if (Deno.env.get(MARK) !== Deno.env.get("HOME")) {
  const info = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  const { denoDir } = JSON.parse(new TextDecoder().decode(info.stdout)) as { denoDir: string };
  const home = await Deno.realPath(await Deno.makeTempDir({ prefix: "agent_test_home_" }));
  const vars: Record<string, string> = {
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

/** The tests' HOME: a temporary directory of their own. */
export const TEST_HOME: string = Deno.env.get("HOME")!;
