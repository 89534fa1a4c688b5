/**
 * Keeps secrets out of saved sessions: API keys and the like are replaced by `[redacted]`
 * before anything is written, wherever they appear (a tool's output that printed the
 * environment included).
 *
 * @module
 */

/** The env vars holding the providers' and search tools' keys, always treated as secrets. */
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
  "TAVILY_API_KEY",
  "BRAVE_API_KEY",
];

/** Values shorter than this are not redacted: they would match too much ordinary text. */
const MIN_SECRET_LENGTH = 8;

/**
 * Whether an env var's name says it holds a secret: `*_KEY` (`*_API_KEY` too), `*_TOKEN`,
 * `*_SECRET`, `*PASSWORD*`, `*PASSWD*`, or one of {@link SECRET_ENV_NAMES}.
 *
 * @example
 * ```ts
 * import { isSecretEnvName } from "./redact.ts";
 * if (!isSecretEnvName("GITHUB_TOKEN") || isSecretEnvName("HOME")) throw new Error("unexpected");
 * ```
 */
export function isSecretEnvName(name: string): boolean {
  return /(?:_KEY|_TOKEN|_SECRET)$|PASSWORD|PASSWD/i.test(name) || SECRET_ENV_NAMES.includes(name);
}

/**
 * The values of the env vars that hold secrets, to give to {@link secretRedactor}: those of
 * {@link SECRET_ENV_NAMES}, of every variable whose name {@link isSecretEnvName} (when Deno
 * already grants reading the whole environment; it is asked without prompting), and of `names`
 * whatever they are called (e.g. the `apiKeyEnv` of each provider in the settings). Values
 * shorter than 8 characters are left out.
 *
 * @example
 * ```ts
 * import { secretsFromEnv } from "./redact.ts";
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
    const value = env(name);
    if (!value) continue;
    for (const form of [value, value.trim()]) {
      if (form.length >= MIN_SECRET_LENGTH) values.add(form);
    }
  }
  return [...values];
}

/**
 * A function that replaces each secret (of 8 characters or more) in a text with `[redacted]`.
 * Secrets are also found in their JSON-escaped form, so redacting a JSON line works whatever
 * characters they hold.
 *
 * @example
 * ```ts
 * import { secretRedactor } from "./redact.ts";
 * const redact = secretRedactor(["sk-test-123456789", "short"]);
 * const text = redact("OPENAI_API_KEY=sk-test-123456789 PIN=short");
 * if (text !== "OPENAI_API_KEY=[redacted] PIN=short") throw new Error(text);
 * ```
 */
export function secretRedactor(secrets: readonly string[]): (text: string) => string {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (typeof secret !== "string" || secret.length < MIN_SECRET_LENGTH) continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
  }
  if (forms.size === 0) return (text) => text;
  const alternatives = [...forms].sort((a, b) => b.length - a.length)
    .map((form) => form.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&"));
  const pattern = new RegExp(alternatives.join("|"), "g");
  return (text) => text.replace(pattern, "[redacted]");
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
