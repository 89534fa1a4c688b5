/**
 * Turns a `provider/model` string into a {@link Model}, with the key and base URL from the
 * options or the provider's environment variables.
 *
 * @module
 */

import { ConfigError } from "../errors.ts";
import type { Model } from "../model.ts";
import { openaiModel } from "./openai.ts";

/** Where a model's connection settings come from. */
export interface ResolveModelOptions {
  /** The API root; for `openai/…` it includes `/v1` (like `OPENAI_BASE_URL`). */
  baseURL?: string;
  /** The API key (default from the provider's env var). */
  apiKey?: string;
  /** Reads an environment variable (default `Deno.env.get`, or nothing without `--allow-env`). */
  env?: (name: string) => string | undefined;
}

interface _Provider {
  keyEnv: string;
  baseURLEnv?: string;
  create(model: string, apiKey: string | undefined, baseURL: string | undefined): Model;
}

const PROVIDERS: Record<string, _Provider> = {
  openai: {
    keyEnv: "OPENAI_API_KEY",
    baseURLEnv: "OPENAI_BASE_URL",
    create: (model, apiKey, baseURL) => openaiModel({ model, apiKey, baseURL }),
  },
};

/** The names of the providers `resolveModel` knows. */
export const PROVIDER_NAMES: readonly string[] = Object.keys(PROVIDERS);

/**
 * The model named by `spec` (`provider/model`), or `spec` itself when it is already a model.
 *
 * @example
 * ```ts
 * import { resolveModel } from "./resolve.ts";
 * const model = resolveModel("openai/gpt-4.1-mini", { apiKey: "sk-test" });
 * if (model.provider !== "openai" || model.id !== "gpt-4.1-mini") throw new Error("unexpected");
 * ```
 */
export function resolveModel(spec: string | Model, options: ResolveModelOptions = {}): Model {
  if (typeof spec !== "string") return spec;
  const { provider: name, model } = parseModelSpec(spec);
  const provider = PROVIDERS[name];
  const env = options.env ?? readEnv;
  const apiKey = options.apiKey ?? env(provider.keyEnv);
  const baseURL = options.baseURL ?? (provider.baseURLEnv ? env(provider.baseURLEnv) : undefined);
  return provider.create(model, apiKey || undefined, baseURL || undefined);
}

/**
 * Splits `provider/model`, refusing a spec without a provider or with an unknown one.
 *
 * @example
 * ```ts
 * import { parseModelSpec } from "./resolve.ts";
 * const { provider, model } = parseModelSpec("openai/gpt-4.1-mini");
 * if (provider !== "openai" || model !== "gpt-4.1-mini") throw new Error("unexpected");
 * ```
 */
export function parseModelSpec(spec: string): { provider: string; model: string } {
  const slash = spec.indexOf("/");
  if (slash <= 0 || slash === spec.length - 1) {
    throw new ConfigError(
      `Model "${spec}" names no provider: write provider/model, e.g. openai/gpt-4.1-mini`,
    );
  }
  const provider = spec.slice(0, slash);
  if (!Object.hasOwn(PROVIDERS, provider)) {
    throw new ConfigError(
      `Unknown provider "${provider}" in "${spec}". Known providers: ${PROVIDER_NAMES.join(", ")}`,
    );
  }
  return { provider, model: spec.slice(slash + 1) };
}

/**
 * Reads an environment variable, or gives `undefined` when Deno does not grant access to it.
 *
 * @example
 * ```ts
 * import { readEnv } from "./resolve.ts";
 * const home = readEnv("HOME");
 * if (home !== undefined && typeof home !== "string") throw new Error("unexpected");
 * ```
 */
export function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}
