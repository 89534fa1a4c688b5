/**
 * The MCP reference server the tests start, pinned, and its download: done once, by the tests'
 * own Deno and environment (TLS, proxy, cache), before any test's startup deadline runs.
 *
 * @module
 */

import "./isolated_env.ts";

/** The MCP reference server, pinned. */
export const EVERYTHING = "npm:@modelcontextprotocol/server-everything@2026.8.31";

/**
 * The arguments of `deno` that run it. `--no-config --no-lock` keep it away from this project's
 * deno.json and lockfile, which it has nothing to do with.
 */
export const EVERYTHING_RUN: readonly string[] = [
  "run",
  "-A",
  "--no-config",
  "--no-lock",
  EVERYTHING,
];

const cached = await new Deno.Command(Deno.execPath(), {
  args: ["cache", "--no-config", "--no-lock", EVERYTHING],
  stdin: "null",
  stdout: "null",
  stderr: "piped",
}).output();
if (!cached.success) {
  throw new Error(
    `cannot download ${EVERYTHING}: ${new TextDecoder().decode(cached.stderr).slice(-2000)}`,
  );
}
