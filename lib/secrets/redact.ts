/**
 * Keeps secrets out of what is written and sent: the values of the run's keys, and whatever
 * has the shape of a key (`sk-…`, `ghp_…`, `github_pat_…`, `xoxb-…`, `AKIA…`, JWTs, private key
 * blocks, the password of a URL), are replaced by `[redacted]` wherever they appear — a tool's
 * output that printed the environment included. One regular expression covers them all, so
 * redacting costs one scan of the text however many secrets there are.
 *
 * @module
 */

import { MIN_SECRET_LENGTH } from "./secret_names.ts";

export {
  isSecretEnvName,
  MIN_SECRET_LENGTH,
  SECRET_ENV_NAMES,
  secretsFromEnv,
} from "./secret_names.ts";

/** What a secret is replaced by. */
export const REDACTED = "[redacted]";

/** Replaces the secrets in a text by `[redacted]`. */
export interface Redactor {
  /** The text with its secrets replaced. */
  (text: string): string;
  /** The secret values it redacts (beside the secret-shaped ones), to hand to another thread. */
  readonly secrets: readonly string[];
}

/**
 * Where a secret-shaped value may start: not inside a word, or right after an escape such as
 * `\n` (a JSON-escaped line break before it).
 */
const _START = String.raw`(?:(?<![A-Za-z0-9_\-])|(?<=\\[nrt]))`;

/** The shapes of keys and tokens, found whether or not the run knows them. */
const _SHAPES: readonly string[] = [
  // OpenAI (sk-…, sk-proj-…), Anthropic (sk-ant-…), DeepSeek, OpenRouter (sk-or-…).
  String.raw`sk-[A-Za-z0-9_\-]{20,}`,
  // Stripe.
  String.raw`[sr]k_(?:live|test)_[A-Za-z0-9]{16,}`,
  // GitHub: classic tokens, fine-grained ones; GitLab.
  String.raw`gh[pousr]_[A-Za-z0-9]{20,}`,
  String.raw`github_pat_[A-Za-z0-9_]{20,}`,
  String.raw`glpat-[A-Za-z0-9_\-]{20,}`,
  // Slack.
  String.raw`xox[abposr]-[A-Za-z0-9\-]{10,}`,
  // AWS access key ids; Google API keys.
  String.raw`(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])`,
  String.raw`AIza[0-9A-Za-z_\-]{35}`,
  // Groq, xAI, Hugging Face, npm, Tavily, Perplexity.
  String.raw`(?:gsk_|hf_|npm_)[A-Za-z0-9]{30,}`,
  String.raw`(?:xai|tvly|pplx)-[A-Za-z0-9_\-]{20,}`,
  // JSON Web Tokens.
  String.raw`eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}`,
].map((shape) => _START + shape);

/** A private key block, to its end (or the text's, when it was cut off). */
const _PRIVATE_KEY = String.raw`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?` +
  String.raw`(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|$)`;

/** The password of a URL (`scheme://user:password@host`): the group `url` keeps the rest. */
const _URL_PASSWORD = String.raw`(?<url>://[^\s/:@"\\]{0,256}:)[^\s/@"\\]{3,256}(?=@)`;

/** Every shape in one pattern. */
const _SHAPE_SOURCE = [..._SHAPES, _PRIVATE_KEY, _URL_PASSWORD].join("|");

/** Whether a text holds something shaped like a key or token (a URL's password aside). */
const _SHAPED = new RegExp([..._SHAPES, _PRIVATE_KEY].join("|"));

/**
 * Whether a value holds something shaped like a key, a token or a private key (the password
 * of a URL is not counted).
 *
 * @example
 * ```ts
 * import { looksSecret } from "./redact.ts";
 * if (!looksSecret("sk-proj-0123456789abcdefghij") || looksSecret("/usr/bin")) throw new Error();
 * ```
 */
export function looksSecret(value: string): boolean {
  return _SHAPED.test(value);
}

/**
 * A {@link Redactor} of `secrets` (those of 8 characters or more) and of every secret-shaped
 * value: API keys and tokens of the usual services (`sk-…`, `ghp_…`, `github_pat_…`, `xox[bp]-…`,
 * `AKIA…`, …), JWTs, private key blocks, and the password of a URL (`postgres://ada:[redacted]@db`).
 * Secrets are also found in their JSON-escaped form, so redacting a JSON line works whatever
 * characters they hold. All of it is one regular expression: the cost is one scan of the text.
 *
 * @example
 * ```ts
 * import { secretRedactor } from "./redact.ts";
 * const redact = secretRedactor(["corp-secret-1", "short"]);
 * const text = redact("KEY=corp-secret-1 PIN=short TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ");
 * if (text !== "KEY=[redacted] PIN=short TOKEN=[redacted]") throw new Error(text);
 * ```
 */
export function secretRedactor(secrets: readonly string[]): Redactor {
  const kept = [
    ...new Set(
      secrets.filter((secret) => typeof secret === "string" && secret.length >= MIN_SECRET_LENGTH),
    ),
  ];
  const forms = new Set<string>();
  for (const secret of kept) {
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
  }
  const literals = [...forms].sort((a, b) => b.length - a.length)
    .map((form) => form.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&"));
  const pattern = new RegExp([...literals, _SHAPE_SOURCE].join("|"), "g");
  const replace = (match: string, ...rest: unknown[]) => {
    const groups = rest.at(-1) as { url?: string } | undefined;
    return groups?.url && match.startsWith(groups.url) ? groups.url + REDACTED : REDACTED;
  };
  const redact = (text: string) => text.replace(pattern, replace);
  return Object.assign(redact, { secrets: Object.freeze(kept) });
}

/** How deep {@link redactValue} walks a value; what lies deeper is redacted as its JSON text. */
const _MAX_DEPTH = 64;

/**
 * A copy of a JSON-like value with every string in it (object keys included) redacted, however
 * deep; the value itself when nothing changed, so that redacting what holds no secret costs no
 * copy. What lies deeper than 64 levels is redacted as its JSON text and read back (what cannot
 * be written as JSON there, or read back once redacted, is replaced by `[redacted]` whole): a
 * secret is never let through for being deep.
 *
 * @example
 * ```ts
 * import { redactValue, secretRedactor } from "./redact.ts";
 * const redact = secretRedactor(["corp-secret-1"]);
 * const value = { command: "echo corp-secret-1", n: 1, tags: ["a"] };
 * const clean = redactValue(value, redact);
 * if (clean.command !== "echo [redacted]" || clean.tags !== value.tags) throw new Error();
 * ```
 */
export function redactValue<T>(value: T, redact: (text: string) => string): T {
  return _redact(value, redact, 0) as T;
}

function _redact(value: unknown, redact: (text: string) => string, depth: number): unknown {
  if (typeof value === "string") return redact(value);
  if (value === null || typeof value !== "object") return value;
  if (depth > _MAX_DEPTH) return _redactJson(value, redact);
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = _redact(value[i], redact, depth + 1);
      if (item !== value[i]) (copy ??= value.slice())[i] = item;
    }
    return copy ?? value;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) {
    return value; // typed arrays, dates and the like hold no text to redact
  }
  let copy: Record<string, unknown> | undefined;
  const entries = Object.entries(value);
  for (const [key, item] of entries) {
    const cleanKey = redact(key);
    const clean = _redact(item, redact, depth + 1);
    if (clean !== item || cleanKey !== key) {
      copy ??= Object.fromEntries(entries.map(([k, v]) => [redact(k), v]));
      copy[cleanKey] = clean;
    }
  }
  return copy ?? value;
}

/** A deep value redacted as its JSON text: itself when that holds no secret. */
function _redactJson(value: object, redact: (text: string) => string): unknown {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    return REDACTED; // a cycle, a bigint, or too deep even for JSON: nothing of it is let out
  }
  if (json === undefined) return value; // nothing of it would be written either
  const clean = redact(json);
  if (clean === json) return value;
  try {
    return JSON.parse(clean);
  } catch {
    return REDACTED; // a secret matched across the JSON syntax
  }
}

/**
 * A JSON line (a session entry, an event) with its secrets redacted, still JSON: redacted as
 * text, or, should a secret have matched JSON syntax, string by string. A line that is not JSON
 * is redacted as text.
 *
 * @example
 * ```ts
 * import { redactJsonLine, secretRedactor } from "./redact.ts";
 * const line = redactJsonLine('{"text":"key sk-12345678"}\n', secretRedactor(["sk-12345678"]));
 * if (line !== '{"text":"key [redacted]"}\n') throw new Error(line);
 * ```
 */
export function redactJsonLine(line: string, redact: (text: string) => string): string {
  const redacted = redact(line);
  if (redacted === line) return line;
  try {
    JSON.parse(redacted);
    return redacted;
  } catch {
    // Redacted as text, it is no longer JSON: redact its strings instead.
  }
  try {
    const value = redactValue(JSON.parse(line), redact);
    return `${JSON.stringify(value)}${line.endsWith("\n") ? "\n" : ""}`;
  } catch {
    return redacted; // it was not JSON either
  }
}
