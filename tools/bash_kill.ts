/**
 * Ending the process group of a command the `bash` tool started with `Deno.Command`: SIGTERM,
 * then SIGKILL after a grace, through what Deno already grants.
 *
 * @module
 */

import { sleep } from "../lib/async.ts";

/** Sends a signal to the command's process group; false when the group no longer exists. */
export type _Signaller = (signal: Deno.Signal) => Promise<boolean>;

/**
 * How to signal the command's process group with what Deno already grants, so that a command
 * Deno was allowed to run never makes it ask again (`Deno.kill` needs all of `run`): with all of
 * `run` granted, `Deno.kill`; else, when Deno grants the shell (it ran the command, or the
 * sandbox's commands), the shell's own `kill`; else the group's leader through its handle,
 * which in the sandbox is bwrap, whose death ends everything inside.
 */
export function _groupSignaller(child: Deno.ChildProcess, shell: string): _Signaller {
  const granted = (descriptor: Deno.RunPermissionDescriptor) =>
    Deno.permissions.querySync(descriptor).state === "granted";
  if (granted({ name: "run" })) {
    return (signal) => Promise.resolve(_attempt(() => Deno.kill(-child.pid, signal)));
  }
  const leader = (signal: Deno.Signal) => _attempt(() => child.kill(signal));
  if (granted({ name: "run", command: shell })) {
    return async (signal) => {
      try {
        const { success } = await new Deno.Command(shell, {
          args: ["-c", 'kill -s "$0" -- "-$1" 2>/dev/null', signal.slice(3), String(child.pid)],
          clearEnv: true,
          stdin: "null",
          stdout: "null",
          stderr: "null",
        }).output();
        return success;
      } catch {
        // No process can start (the user's process limit is reached): the leader, at least.
        return leader(signal);
      }
    };
  }
  return (signal) => Promise.resolve(leader(signal));
}

/** SIGTERM to the group, then SIGKILL once the grace is over if anything may still be alive. */
export async function _killGroup(
  signal: _Signaller,
  exited: () => boolean,
  graceMs: number,
): Promise<void> {
  if (!await signal("SIGTERM")) return;
  // SIGCONT wakes stopped processes so they can handle SIGTERM, and probes whether any is left.
  const deadline = performance.now() + graceMs;
  while (performance.now() < deadline) {
    if (exited() && !await signal("SIGCONT")) return;
    await sleep(20);
  }
  await signal("SIGKILL");
}

/** Whether `send` went through (it throws when no process is left to signal). */
function _attempt(send: () => void): boolean {
  try {
    send();
    return true;
  } catch {
    return false;
  }
}
