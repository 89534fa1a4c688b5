/**
 * The environment of sandboxed commands: the agent's own, without API keys, tokens, passwords
 * and the sockets of credential agents.
 *
 * @module
 */

import { isSecretEnvName, looksSecret, SECRET_ENV_NAMES } from "../secrets/redact.ts";

/**
 * Names stripped whatever their form: the one list of secret names that redaction uses too
 * ({@link SECRET_ENV_NAMES}): the providers' keys, the usual tokens, and variables that hand out
 * credentials without looking like them (cloud metadata endpoints, agent sockets).
 */
export const SANDBOX_STRIPPED_ENV: readonly string[] = SECRET_ENV_NAMES;

/**
 * The environment without its secrets, for a sandboxed command. Stripped: every variable that
 * redaction counts as a secret (`isSecretEnvName`: the names in {@link SANDBOX_STRIPPED_ENV},
 * and names ending in `_KEY`, `_KEYS`, `_KEY_ID`, `_KEY_BASE`, `_APIKEY`, `_TOKEN`, `_SECRET`,
 * `_CREDENTIALS`, `_PAT`, `_AUTH`, `_DSN`, `_PASS`, `_PWD`, …, starting with `SECRET_`, or
 * holding `PASSWORD`, `PASSWD` or `PASSPHRASE`, in any case); every name in `also` (e.g. the
 * `apiKeyEnv` of the user's providers); and every variable whose value has the shape of a key
 * or token (`sk-…`, `ghp_…`, a private key block, …) whatever its name. Kept: everything else,
 * unchanged — `PATH`, `HOME`, `PWD`, `USER`, `LANG`, `TERM`, `SHELL`, `EDITOR`,
 * `GIT_AUTHOR_NAME`, `AWS_REGION`, `AWS_PROFILE`, proxy settings and the like. (A URL with a
 * password in it, such as `DATABASE_URL`, is kept.)
 *
 * @example
 * ```ts
 * import { sandboxEnv } from "./env.ts";
 * const env = sandboxEnv({
 *   PATH: "/usr/bin",
 *   OPENAI_API_KEY: "sk-1",
 *   GH_TOKEN: "ghp_1",
 *   PGPASSWORD: "hunter2",
 *   MYSQL_PWD: "hunter3",
 *   CORP_LLM: "corp-1",
 *   AWS_REGION: "eu-west-1",
 * }, ["CORP_LLM"]);
 * if (Object.keys(env).join() !== "PATH,AWS_REGION") throw new Error(Object.keys(env).join());
 * ```
 */
export function sandboxEnv(
  env: Record<string, string>,
  also: readonly string[] = [],
): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (isSecretEnvName(name) || also.includes(name) || looksSecret(value)) continue;
    kept[name] = value;
  }
  return kept;
}

/** Variables worth passing on when Deno does not grant reading the whole environment. */
const _BASIC_ENV = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TZ"];

/** The `PATH` of a sandboxed command when the agent's own cannot be read. */
const _DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The agent's environment as far as Deno lets it be read without asking: all of it with
 * `--allow-env`, else the few basic variables that are granted one by one, with a default
 * `PATH`. A sandboxed child gets this (filtered) instead of inheriting everything unseen.
 */
export function _hostEnv(): Record<string, string> {
  if (Deno.permissions.querySync({ name: "env" }).state === "granted") return Deno.env.toObject();
  const env: Record<string, string> = {};
  for (const name of _BASIC_ENV) {
    if (Deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") continue;
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  env.PATH ??= _DEFAULT_PATH;
  return env;
}
