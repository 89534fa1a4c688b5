/**
 * The environment of sandboxed commands: the agent's own, without API keys, tokens, passwords
 * and the sockets of credential agents.
 *
 * @module
 */

import { isSecretEnvName, SECRET_ENV_NAMES } from "../session/redact.ts";

/**
 * Names stripped whatever their form: the providers' keys ({@link SECRET_ENV_NAMES}, which
 * session redaction uses too), the usual tokens, and variables that hand out credentials
 * without looking like them (cloud metadata endpoints, agent sockets).
 */
export const SANDBOX_STRIPPED_ENV: readonly string[] = [
  ...SECRET_ENV_NAMES,
  "GOOGLE_API_KEY",
  "GITHUB_TOKEN",
  "GH_TOKEN",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_SECURITY_TOKEN",
  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
  "AWS_CONTAINER_CREDENTIALS_FULL_URI",
  "AWS_CONTAINER_AUTHORIZATION_TOKEN",
  "DOCKER_AUTH_CONFIG",
  "SSH_AUTH_SOCK",
  "GPG_AGENT_INFO",
];

/**
 * A name that holds a secret: one ending in `_KEY`, `_KEYS`, `_KEY_ID`, `_APIKEY`, `_TOKEN`,
 * `_TOKENS`, `_SECRET`, `_SECRETS`, `_CREDENTIALS`, `_PAT` or `_AUTH` (or equal to one of these
 * without the `_`), or containing `PASSWORD`, `PASSWD` or `PASSPHRASE`; case is ignored.
 */
const _SECRET_NAME =
  /(^|_)(KEYS?|KEY_ID|APIKEY|TOKENS?|SECRETS?|CREDENTIALS|PAT|AUTH)$|PASSWORD|PASSWD|PASSPHRASE/i;

const _STRIPPED = new Set(SANDBOX_STRIPPED_ENV);

/**
 * The environment without its secrets, for a sandboxed command. Stripped: every name in
 * {@link SANDBOX_STRIPPED_ENV}, and every name that ends in `_KEY`, `_KEYS`, `_KEY_ID`,
 * `_APIKEY`, `_TOKEN`, `_TOKENS`, `_SECRET`, `_SECRETS`, `_CREDENTIALS`, `_PAT` or `_AUTH` (or is
 * one of these words alone), or that contains `PASSWORD`, `PASSWD` or `PASSPHRASE`, in any case.
 * Kept: everything else, unchanged — `PATH`, `HOME`, `USER`, `LANG`, `TERM`, `SHELL`, `EDITOR`,
 * `GIT_AUTHOR_NAME`, `AWS_REGION`, `AWS_PROFILE`, proxy settings and the like. (A value is never
 * looked at: a URL with a password in it, such as `DATABASE_URL`, is kept.)
 *
 * @example
 * ```ts
 * import { sandboxEnv } from "./env.ts";
 * const env = sandboxEnv({
 *   PATH: "/usr/bin",
 *   OPENAI_API_KEY: "sk-1",
 *   GH_TOKEN: "ghp_1",
 *   PGPASSWORD: "hunter2",
 *   AWS_REGION: "eu-west-1",
 * });
 * if (Object.keys(env).join() !== "PATH,AWS_REGION") throw new Error(Object.keys(env).join());
 * ```
 */
export function sandboxEnv(env: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    const secret = _STRIPPED.has(name.toUpperCase()) || _SECRET_NAME.test(name) ||
      isSecretEnvName(name);
    if (secret) continue;
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
