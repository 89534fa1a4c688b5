/**
 * The secrets a CLI run knows, gathered in one place into the one redactor that everything the
 * run writes or sends goes through: sessions, memory, the service's answers.
 *
 * @module
 */

import type { McpConfig } from "../mcp/mod.ts";
import { PRESETS } from "../providers/presets.ts";
import { type Redactor, secretRedactor } from "../secrets/redact.ts";
import { isSecretEnvName, MIN_SECRET_LENGTH, secretsFromEnv } from "../secrets/secret_names.ts";
import type { Settings } from "./settings.ts";
import type { MemorySettings } from "./memory.ts";

/** Header names whose values are credentials. */
const _SECRET_HEADER = /authorization|cookie|key|token|secret|auth|password|signature/i;

/**
 * The run's redactor: it redacts the values of every env var that holds a key — the presets'
 * (`OPENAI_API_KEY`, …), the `apiKeyEnv` of the user's providers and of the memory's embeddings,
 * every variable whose name says it holds a secret (`*_TOKEN`, `*_PAT`, `*_PWD`, `*_DSN`,
 * `SECRET_*`, …; all of them when Deno grants reading the whole environment) —, the
 * credentials in the providers' and the MCP servers' headers, the secret-named variables the MCP
 * servers are given, and whatever has the shape of a key or token.
 *
 * @example
 * ```ts
 * import { runSecrets } from "./secrets.ts";
 * const env: Record<string, string> = { CORP_LLM: "corp-secret-value-1" };
 * const redact = runSecrets((name) => env[name], {
 *   providers: { corp: { baseURL: "https://llm.corp.example/v1", apiKeyEnv: "CORP_LLM" } },
 * }, {
 *   mcpServers: {
 *     docs: {
 *       type: "http",
 *       url: "https://mcp.example/mcp",
 *       headers: { Authorization: "Bearer mcp-token-42" },
 *     },
 *   },
 * });
 * const text = redact("corp-secret-value-1 mcp-token-42");
 * if (text !== "[redacted] [redacted]") throw new Error(text);
 * ```
 */
export function runSecrets(
  env: (name: string) => string | undefined,
  settings: Settings,
  mcpConfig?: McpConfig,
): Redactor {
  const names = new Set<string>(secretEnvNames(settings));
  for (const preset of Object.values(PRESETS)) if (preset.keyEnv) names.add(preset.keyEnv);
  const secrets = secretsFromEnv(env, [...names]);
  for (const provider of Object.values(settings.providers ?? {})) {
    secrets.push(...headerSecrets(provider.headers));
  }
  for (const server of Object.values(mcpConfig?.mcpServers ?? {})) {
    if ("url" in server) {
      secrets.push(...headerSecrets(server.headers));
      if (server.oauth?.clientSecret) secrets.push(server.oauth.clientSecret);
    } else {
      for (const [name, value] of Object.entries(server.env ?? {})) {
        if (isSecretEnvName(name)) secrets.push(value);
      }
    }
  }
  return secretRedactor(secrets);
}

/**
 * The variables the user's settings name as holding keys, whatever they are called: each
 * provider's `apiKeyEnv` and the memory embeddings'. Kept out of sandboxed commands and hooks,
 * and redacted.
 *
 * @example
 * ```ts
 * import { secretEnvNames } from "./secrets.ts";
 * const names = secretEnvNames({
 *   providers: { corp: { baseURL: "https://llm.corp.example/v1", apiKeyEnv: "CORP_LLM" } },
 * });
 * if (names.join() !== "CORP_LLM") throw new Error(names.join());
 * ```
 */
export function secretEnvNames(settings: Settings): string[] {
  const names = new Set<string>();
  for (const provider of Object.values(settings.providers ?? {})) {
    if (provider.apiKeyEnv) names.add(provider.apiKeyEnv);
  }
  const embeddings = (settings.memory as MemorySettings | undefined)?.embeddings;
  if (embeddings?.apiKeyEnv) names.add(embeddings.apiKeyEnv);
  return [...names];
}

/**
 * The credentials in HTTP headers: the values of `Authorization`, `Cookie` and the headers
 * whose names speak of a key, a token, a secret or a password, and the credential alone of an
 * `Authorization: Bearer …` (or any other scheme).
 *
 * @example
 * ```ts
 * import { headerSecrets } from "./secrets.ts";
 * const found = headerSecrets({ Authorization: "Bearer abc123def456", Accept: "text/plain" });
 * if (found.join() !== "Bearer abc123def456,abc123def456") throw new Error(found.join());
 * ```
 */
export function headerSecrets(headers: Record<string, string> | undefined): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!_SECRET_HEADER.test(name) || typeof value !== "string") continue;
    found.push(value);
    const credential = /^\s*[A-Za-z-]+\s+(\S+)\s*$/.exec(value)?.[1];
    if (credential && credential.length >= MIN_SECRET_LENGTH) found.push(credential);
  }
  return found;
}
