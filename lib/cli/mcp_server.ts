/**
 * `agent mcp`: the agent as an MCP server.
 *
 * @module
 */

import type { CliArgs } from "./args.ts";
import { ConfigError } from "../errors.ts";
import type { HeadlessIo } from "./headless.ts";

/** Serves MCP until the client goes away; resolves to the exit code. */
export function runMcpServer(
  _options: CliArgs,
  _io: HeadlessIo & { env(name: string): string | undefined },
): Promise<number> {
  return Promise.reject(new ConfigError("agent mcp is not available in this build"));
}
