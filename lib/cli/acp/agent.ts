/**
 * `agent acp`: an Agent Client Protocol agent on stdio, for editors.
 *
 * @module
 */

import type { CliArgs } from "../args.ts";
import { ConfigError } from "../../errors.ts";
import type { HeadlessIo } from "../headless.ts";

/** Speaks ACP on stdio until the client goes away; resolves to the exit code. */
export function runAcp(
  _options: CliArgs,
  _io: HeadlessIo & { env(name: string): string | undefined },
): Promise<number> {
  return Promise.reject(new ConfigError("agent acp is not available in this build"));
}
