/**
 * Settings files: the user's (`~/.config/agent/settings.json`, or under `$XDG_CONFIG_HOME` or
 * `$AGENT_CONFIG_DIR`) and the project's (`.agent/settings.json`, found from the working
 * directory up to the repository root). The project's file is read with care: it comes with
 * whatever repository was cloned, so it may not define providers (a provider decides where API
 * keys are sent).
 *
 * @module
 */

import { dirname, join } from "node:path";
import { z } from "zod";
import { ConfigError } from "./errors.ts";
import type { ShellHook, ShellHooksConfig } from "./cli/shell_hooks.ts";
import type { MemorySettings } from "./cli/memory.ts";
import type { SandboxMode, SandboxSettings } from "./cli/sandbox.ts";
import type { ModelOverride, ProviderConfig } from "./providers/resolve.ts";

const pricing = z.object({
  input: z.number().nonnegative(),
  output: z.number().nonnegative(),
  cacheRead: z.number().nonnegative().optional(),
  cacheWrite: z.number().nonnegative().optional(),
}).strict();

const provider = z.object({
  api: z.enum(["openai", "anthropic"]).optional(),
  baseURL: z.url(),
  apiKeyEnv: z.string().optional(),
  headers: z.record(z.string(), z.string()).optional(),
  local: z.boolean().optional(),
  systemRole: z.enum(["system", "developer"]).optional(),
  maxTokensParam: z.enum(["max_tokens", "max_completion_tokens"]).optional(),
  includeUsage: z.boolean().optional(),
  toolCallIds: z.literal("alnum9").optional(),
  extraBody: z.record(z.string(), z.unknown()).optional(),
}).strict();

const model = z.object({
  contextWindow: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  pricing: pricing.optional(),
}).strict();

const hook = z.object({
  matcher: z.string().optional(),
  command: z.string().min(1),
  timeout: z.number().positive().optional(),
}).strict();

const hookEvents = [
  "beforeModelCall",
  "afterModelCall",
  "beforeToolCall",
  "afterToolCall",
  "onEvent",
] as const;

const sandboxMode = z.enum(["auto", "required", "off"]);

const settingsSchema = z.looseObject({
  sandbox: z.union([
    sandboxMode,
    z.object({
      mode: sandboxMode.optional(),
      writable: z.array(z.string().min(1)).optional(),
      hide: z.array(z.string().min(1)).optional(),
    }).strict(),
  ]).optional(),
  model: z.string().optional(),
  permissions: z.object({
    allow: z.array(z.string()).optional(),
    ask: z.array(z.string()).optional(),
    deny: z.array(z.string()).optional(),
    defaultMode: z.enum(["plan", "default", "accept-edits"]).optional(),
  }).strict().optional(),
  hooks: z.partialRecord(z.enum(hookEvents), z.array(hook)).optional(),
  memory: z.object({
    enabled: z.boolean().optional(),
    embeddings: z.object({
      baseURL: z.url(),
      model: z.string().min(1),
      apiKeyEnv: z.string().optional(),
      dimensions: z.number().int().positive().optional(),
    }).strict().optional(),
  }).strict().optional(),
  thinkingBudget: z.number().int().nonnegative().optional(),
  providers: z.record(z.string(), provider).optional(),
  models: z.record(z.string(), model).optional(),
});

/** What the settings files hold. Keys this version does not know are kept. */
export interface Settings {
  /** The default model, `provider/model`. */
  model?: string;
  /** Extended thinking budget in tokens for models that have it (0: off). */
  thinkingBudget?: number;
  /** The user's own providers (user settings only). */
  providers?: Record<string, ProviderConfig>;
  /** Model metadata overrides, by `provider/model`. */
  models?: Record<string, ModelOverride>;
  /** Permission rules and the default permission mode. */
  permissions?: {
    allow?: string[];
    ask?: string[];
    deny?: string[];
    defaultMode?: "plan" | "default" | "accept-edits";
  };
  /** Shell commands run around model and tool calls. */
  hooks?: ShellHooksConfig;
  /** Long-term memory. */
  memory?: MemorySettings;
  /**
   * The sandbox of shell commands: a mode, or the mode with more writable and hidden paths
   * (user settings; a project may only make it `required`).
   */
  sandbox?: SandboxMode | SandboxSettings;
  /** Further keys, for other parts of the agent. */
  [key: string]: unknown;
}

/** The merged settings and where they came from. */
export interface LoadedSettings {
  /** The user's settings with the project's laid over them. */
  settings: Settings;
  /** The files read. */
  files: string[];
  /** What was ignored, and why. */
  warnings: string[];
}

/**
 * The user's settings file path.
 *
 * @example
 * ```ts
 * import { userSettingsPath } from "./settings.ts";
 * const path = userSettingsPath((name) => name === "HOME" ? "/home/ada" : undefined);
 * if (path !== "/home/ada/.config/agent/settings.json") throw new Error(path);
 * ```
 */
export function userSettingsPath(env: (name: string) => string | undefined): string | undefined {
  const dir = env("AGENT_CONFIG_DIR") ??
    (env("XDG_CONFIG_HOME") ? join(env("XDG_CONFIG_HOME")!, "agent") : undefined) ??
    (env("HOME") ? join(env("HOME")!, ".config", "agent") : undefined);
  return dir === undefined ? undefined : join(dir, "settings.json");
}

/**
 * Reads and merges the user's and the project's settings. Files that do not exist, or that
 * Deno does not already let the agent read, are skipped; a file that is not valid JSON or
 * does not fit the schema is a {@link ConfigError} naming the file and the problem.
 *
 * @example
 * ```ts
 * import { loadSettings } from "./settings.ts";
 * const { settings, files } = await loadSettings({ cwd: Deno.cwd(), env: () => undefined });
 * if (typeof settings !== "object" || !Array.isArray(files)) throw new Error("unexpected");
 * ```
 */
export async function loadSettings(
  options: { cwd: string; env: (name: string) => string | undefined },
): Promise<LoadedSettings> {
  const files: string[] = [];
  const warnings: string[] = [];
  const userPath = userSettingsPath(options.env);
  const user = userPath ? await _read(userPath) : undefined;
  if (user) files.push(userPath!);
  const projectPath = await _findProjectSettings(options.cwd);
  const project = projectPath ? await _read(projectPath) : undefined;
  if (project) files.push(projectPath!);

  const settings: Settings = { ...user };
  if (project) {
    const { providers, model, models, ...rest } = project;
    if (providers) {
      warnings.push(
        `${projectPath}: "providers" ignored; providers decide where API keys go, so only the ` +
          `user settings (${userPath ?? "~/.config/agent/settings.json"}) may define them`,
      );
    }
    // The project may pick a model, but only among the presets and the user's providers.
    const { permissions, hooks, memory, sandbox, ...others } = rest;
    Object.assign(settings, others);
    if (sandbox) {
      // A cloned repository may tighten the sandbox, never loosen it.
      const { mode, ...paths } = typeof sandbox === "string" ? { mode: sandbox } : sandbox;
      if (mode === "required") {
        const mine = user?.sandbox;
        settings.sandbox = { ...(typeof mine === "object" ? mine : {}), mode };
      }
      if ((mode !== undefined && mode !== "required") || Object.keys(paths).length > 0) {
        warnings.push(
          `${projectPath}: "sandbox" ignored but for "required"; only the user settings may ` +
            `loosen the sandbox`,
        );
      }
    }
    if (memory) {
      // An embeddings endpoint would receive a key and the memory's text: the user's to choose.
      if (memory.embeddings) {
        warnings.push(
          `${projectPath}: "memory.embeddings" ignored; only the user settings may set it`,
        );
      }
      settings.memory = {
        ...user?.memory,
        ...(memory.enabled === undefined ? {} : { enabled: memory.enabled }),
      };
    }
    if (model) settings.model = model;
    if (models) settings.models = { ...user?.models, ...models };
    // Rules and hooks of both files apply.
    if (permissions) {
      const mine = user?.permissions ?? {};
      settings.permissions = {
        allow: [...(mine.allow ?? []), ...(permissions.allow ?? [])],
        ask: [...(mine.ask ?? []), ...(permissions.ask ?? [])],
        deny: [...(mine.deny ?? []), ...(permissions.deny ?? [])],
        defaultMode: permissions.defaultMode ?? mine.defaultMode,
      };
    }
    if (hooks) {
      const merged: ShellHooksConfig = { ...user?.hooks };
      for (
        const [event, list] of Object.entries(hooks) as [keyof ShellHooksConfig, ShellHook[]][]
      ) {
        merged[event] = [...(merged[event] ?? []), ...list];
      }
      settings.hooks = merged;
    }
  }
  return { settings, files, warnings };
}

async function _read(path: string): Promise<Settings | undefined> {
  if (Deno.permissions.querySync({ name: "read", path }).state !== "granted") return undefined;
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch {
    return undefined;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`Bad settings in ${path}: not valid JSON (${(error as Error).message})`);
  }
  const checked = settingsSchema.safeParse(json);
  if (!checked.success) {
    throw new ConfigError(`Bad settings in ${path}:\n${z.prettifyError(checked.error)}`);
  }
  return checked.data as Settings;
}

/** `.agent/settings.json` in the working directory or the nearest ancestor up to the repository root. */
async function _findProjectSettings(cwd: string): Promise<string | undefined> {
  for (let dir = cwd;; dir = dirname(dir)) {
    const path = join(dir, ".agent", "settings.json");
    if (Deno.permissions.querySync({ name: "read", path: dir }).state !== "granted") {
      return undefined;
    }
    if (await _exists(path)) return path;
    if (await _exists(join(dir, ".git")) || dirname(dir) === dir) return undefined;
  }
}

async function _exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}
