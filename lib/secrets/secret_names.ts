/**
 * Which environment variables hold secrets: one list of names and one rule, shared by the
 * redaction that keeps secrets out of what is written and sent, and by the sandbox that keeps
 * them from the commands it runs.
 *
 * @module
 */

/**
 * The variables that hold secrets whatever their name looks like: the providers' and search
 * tools' keys, the usual cloud and forge tokens, and variables that hand out credentials
 * without looking like them (container credential endpoints, agent sockets).
 */
export const SECRET_ENV_NAMES: readonly string[] = [
  "OPENAI_API_KEY",
  "ANTHROPIC_API_KEY",
  "DEEPSEEK_API_KEY",
  "OPENROUTER_API_KEY",
  "GROQ_API_KEY",
  "MISTRAL_API_KEY",
  "TOGETHER_API_KEY",
  "XAI_API_KEY",
  "GEMINI_API_KEY",
  "OLLAMA_API_KEY",
  "LMSTUDIO_API_KEY",
  "VLLM_API_KEY",
  "LLAMACPP_API_KEY",
  "TAVILY_API_KEY",
  "BRAVE_API_KEY",
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
 * A name that says it holds a secret, case ignored: one ending in `_KEY`, `_KEYS`, `_KEY_ID`,
 * `_KEY_BASE`, `_APIKEY`, `_TOKEN`, `_TOKENS`, `_SECRET`, `_SECRETS`, `_CREDENTIAL`,
 * `_CREDENTIALS`, `_PAT`, `_AUTH`, `_DSN`, `_PASS`, `_PWD`, `_COOKIE`, `_WEBHOOK`,
 * `_WEBHOOK_URL` or `_CONNECTION_STRING` (or equal to one of these without the `_`, except
 * `PWD`, the working directory); one starting with `SECRET_` or holding `_SECRET_` or
 * `_CREDENTIALS_`; one holding `PASSWORD`, `PASSWD` or `PASSPHRASE`.
 */
const _SECRET_NAME = new RegExp(
  "(?:^|_)(?:KEYS?|KEY_ID|KEY_BASE|APIKEY|TOKENS?|SECRETS?|CREDENTIALS?|PAT|AUTH|DSN|PASS|" +
    "COOKIES?|WEBHOOK(?:_URL)?|CONNECTION_STRING)$|_PWD$|(?:^|_)SECRET_|_CREDENTIALS_|" +
    "PASSWORD|PASSWD|PASSPHRASE",
  "i",
);

const _NAMED = new Set(SECRET_ENV_NAMES);

/**
 * Whether an env var holds a secret: it is one of {@link SECRET_ENV_NAMES}, or its name says so
 * (`*_KEY`, `*_TOKEN`, `*_SECRET`, `*_PAT`, `*_PWD`, `*_DSN`, `*_CREDENTIALS`, `*_KEY_BASE`,
 * `SECRET_*`, `*PASSWORD*` and the like; case ignored). `PWD`, `PATH`, `KEYBOARD` or
 * `TOKENIZERS_PARALLELISM` do not.
 *
 * @example
 * ```ts
 * import { isSecretEnvName } from "./secret_names.ts";
 * for (const name of ["GITHUB_PAT", "SECRET_KEY_BASE", "MYSQL_PWD", "SENTRY_DSN"]) {
 *   if (!isSecretEnvName(name)) throw new Error(name);
 * }
 * for (const name of ["HOME", "PWD", "OLDPWD", "PATH", "KEYBOARD"]) {
 *   if (isSecretEnvName(name)) throw new Error(name);
 * }
 * ```
 */
export function isSecretEnvName(name: string): boolean {
  return _NAMED.has(name.toUpperCase()) || _SECRET_NAME.test(name);
}

/** Values shorter than this are not secrets to redact: they would match too much ordinary text. */
export const MIN_SECRET_LENGTH = 8;

/**
 * The values of the env vars that hold secrets, to give to `secretRedactor`: those of
 * {@link SECRET_ENV_NAMES}, of every variable {@link isSecretEnvName} says holds one (when Deno
 * already grants reading the whole environment; it is asked without prompting), and of `names`
 * whatever they are called (e.g. the `apiKeyEnv` of each provider in the settings). Values
 * shorter than {@link MIN_SECRET_LENGTH} characters are left out.
 *
 * @example
 * ```ts
 * import { secretsFromEnv } from "./secret_names.ts";
 * const env: Record<string, string> = { OPENAI_API_KEY: "sk-test-123456789", CORP_LLM: "corp-secret-1" };
 * const secrets = secretsFromEnv((name) => env[name], ["CORP_LLM"]);
 * if (!secrets.includes("sk-test-123456789") || !secrets.includes("corp-secret-1")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function secretsFromEnv(
  env: (name: string) => string | undefined,
  names: readonly string[] = [],
): string[] {
  const candidates = new Set([
    ...SECRET_ENV_NAMES,
    ..._envNames().filter(isSecretEnvName),
    ...names,
  ]);
  const values = new Set<string>();
  for (const name of candidates) {
    let value: string | undefined;
    try {
      value = env(name);
    } catch {
      continue; // not granted
    }
    if (!value) continue;
    for (const form of [value, value.trim()]) {
      if (form.length >= MIN_SECRET_LENGTH) values.add(form);
    }
  }
  return [...values];
}

/** The names of all env vars, when Deno grants reading them all; none otherwise. */
function _envNames(): string[] {
  try {
    if (Deno.permissions.querySync({ name: "env" }).state !== "granted") return [];
    return Object.keys(Deno.env.toObject());
  } catch {
    return [];
  }
}
