/**
 * Settings files: the user's (`~/.config/agent/settings.json`, or under `$XDG_CONFIG_HOME` or
 * `$AGENT_CONFIG_DIR`) and the project's (`.agent/settings.json`, found from the working
 * directory up to the repository root). The project's file is read with care: it comes with
 * whatever repository was cloned, so it may not define providers (a provider decides where API
 * keys are sent), and what in it could run code or widen a permission waits for the user's
 * trust.
 *
 * @module
 */

import { join } from "node:path";
import { z } from "zod";
import { ConfigError } from "../errors.ts";
import type { ShellHook, ShellHooksConfig } from "./shell_hooks.ts";
import type { MemorySettings } from "./memory.ts";
import type { SandboxMode, SandboxSettings } from "./sandbox.ts";
import type { ModelOverride, ProviderConfig } from "../providers/resolve.ts";
import { type ProjectFile, readProjectFiles } from "./project.ts";

/** The settings files' schema, made when a first file is read: a run without one never needs it. */
let _schema: ReturnType<typeof _makeSchema> | undefined;

function _makeSchema() {
  const prices = {
    input: z.number().nonnegative(),
    output: z.number().nonnegative(),
    cacheRead: z.number().nonnegative().optional(),
    cacheWrite: z.number().nonnegative().optional(),
  };

  /** Prices past a request size: `above` is the input tokens of one request. */
  const tier = z.object({ above: z.number().int().nonnegative(), ...prices }).strict();

  const pricing = z.object({
    ...prices,
    tiers: z.array(tier).refine(
      (tiers) => new Set(tiers.map((each) => each.above)).size === tiers.length,
      "two tiers have the same threshold (above): give each its own",
    ).optional(),
  }).strict();

  const api = z.enum(["openai", "openai-responses", "anthropic"]);

  const reasoning = z.object({
    effort: z.string().min(1).optional(),
    summary: z.enum(["auto", "concise", "detailed"]).optional(),
  }).strict();

  const provider = z.object({
    api: api.optional(),
    reasoning: reasoning.optional(),
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
    api: api.optional(),
    reasoning: reasoning.optional(),
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

  return z.looseObject({
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
      retention: z.union([
        z.literal(false),
        z.object({
          maxAgeDays: z.number().positive().nullable().optional(),
          maxRunLoops: z.number().int().positive().nullable().optional(),
          maxBytes: z.number().int().positive().nullable().optional(),
          detailDays: z.number().positive().nullable().optional(),
        }).strict(),
      ]).optional(),
    }).strict().optional(),
    thinkingBudget: z.number().int().nonnegative().optional(),
    trustedDirectories: z.array(z.string().min(1)).optional(),
    providers: z.record(z.string(), provider).optional(),
    models: z.record(z.string(), model).optional(),
  });
}

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
   * (user settings; a project may only make it `required` and hide more).
   */
  sandbox?: SandboxMode | SandboxSettings;
  /**
   * Directories whose projects (and those below them) are trusted without asking: their hooks,
   * MCP servers, allow rules and default mode apply (user settings only; `~/` for the home
   * directory).
   */
  trustedDirectories?: string[];
  /** Further keys, for other parts of the agent. */
  [key: string]: unknown;
}

/**
 * What a project's settings ask for that could run code or widen a permission: applied only
 * once the user trusts the project ({@link withProjectGrants}).
 */
export interface ProjectGrants {
  /** The project's settings file. */
  path: string;
  /** Its hook commands. */
  hooks?: ShellHooksConfig;
  /** Its allow rules. */
  allow?: string[];
  /** Its default permission mode. */
  defaultMode?: "plan" | "default" | "accept-edits";
}

/** The merged settings and where they came from. */
export interface LoadedSettings {
  /**
   * The user's settings with what the project's may set at once laid over them: what only
   * narrows, and a model among the user's providers.
   */
  settings: Settings;
  /** What the project's settings ask for that needs the user's trust, if anything. */
  grants?: ProjectGrants;
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
 * Reads and merges the user's and the project's settings. The project's file is found as
 * {@link readProjectFiles} says (or given, read already); what in it could run code or widen a
 * permission (hooks, allow rules, the default mode) is set apart in `grants`, for the caller to
 * apply once the project is trusted. Files that do not exist, or that Deno does not already let
 * the agent read, are skipped; a file that is not valid JSON or does not fit the schema is a
 * {@link ConfigError} naming the file and the problem.
 *
 * @example
 * ```ts
 * import { loadSettings } from "./settings.ts";
 * const { settings, files } = await loadSettings({ cwd: Deno.cwd(), env: () => undefined });
 * if (typeof settings !== "object" || !Array.isArray(files)) throw new Error("unexpected");
 * ```
 */
export async function loadSettings(
  options: {
    cwd: string;
    env: (name: string) => string | undefined;
    /** The project's settings file, read already; `null`: none. */
    project?: ProjectFile | null;
  },
): Promise<LoadedSettings> {
  const files: string[] = [];
  const warnings: string[] = [];
  const userPath = userSettingsPath(options.env);
  const user = userPath ? await _read(userPath) : undefined;
  if (user) files.push(userPath!);
  let found = options.project;
  if (found === undefined) {
    const read = await readProjectFiles(options.cwd);
    warnings.push(...read.warnings);
    found = read.settings ?? null;
  }
  const projectPath = found?.path;
  const project = found ? _parse(found.text, found.path) : undefined;
  if (project) files.push(projectPath!);

  const settings: Settings = { ...user };
  let grants: ProjectGrants | undefined;
  if (project) {
    const { providers, model, models, trustedDirectories, ...rest } = project;
    if (providers) {
      warnings.push(
        `${projectPath}: "providers" ignored; providers decide where API keys go, so only the ` +
          `user settings (${userPath ?? "~/.config/agent/settings.json"}) may define them`,
      );
    }
    if (trustedDirectories) {
      warnings.push(
        `${projectPath}: "trustedDirectories" ignored; only the user settings may trust`,
      );
    }
    // The project may pick a model, but only among the presets and the user's providers.
    const { permissions, hooks, memory, sandbox, ...others } = rest;
    Object.assign(settings, others);
    if (sandbox) {
      // A cloned repository may tighten the sandbox (require it, hide more), never loosen it.
      const { mode, hide, ...paths } = typeof sandbox === "string" ? { mode: sandbox } : sandbox;
      const mine = user?.sandbox;
      const base: SandboxSettings = typeof mine === "string" ? { mode: mine } : { ...mine };
      if (mode === "required") base.mode = mode;
      if (hide?.length) base.hide = [...(base.hide ?? []), ...hide];
      if (mode === "required" || hide?.length) settings.sandbox = base;
      if ((mode !== undefined && mode !== "required") || Object.keys(paths).length > 0) {
        warnings.push(
          `${projectPath}: "sandbox" ignored but for "required" and "hide"; only the user ` +
            `settings may loosen the sandbox`,
        );
      }
    }
    if (memory) {
      // An embeddings endpoint would receive a key and the memory's text: the user's to choose.
      // How much of the user's past is kept, and forgotten, is the user's to choose too.
      for (const key of ["embeddings", "retention"] as const) {
        if (memory[key] === undefined) continue;
        warnings.push(`${projectPath}: "memory.${key}" ignored; only the user settings may set it`);
      }
      settings.memory = {
        ...user?.memory,
        ...(memory.enabled === undefined ? {} : { enabled: memory.enabled }),
      };
    }
    if (model) settings.model = model;
    if (models) {
      // How a model is reached and what it costs are the user's: a protocol decides which
      // credentials and headers go out, and prices decide the cost the user is shown.
      const own: Record<string, ModelOverride> = {};
      for (const [spec, entry] of Object.entries(models)) {
        const { api, pricing, ...rest } = entry;
        for (const [name, value] of [["api", api], ["pricing", pricing]] as const) {
          if (value === undefined) continue;
          warnings.push(
            `${projectPath}: "models.${spec}.${name}" ignored; only the user settings may set it`,
          );
        }
        own[spec] = { ...user?.models?.[spec], ...rest };
      }
      settings.models = { ...user?.models, ...own };
    }
    // Deny and ask rules only narrow: they apply at once. The rest waits for trust.
    if (permissions?.ask?.length || permissions?.deny?.length) {
      const mine = user?.permissions ?? {};
      settings.permissions = {
        ...mine,
        ask: [...(mine.ask ?? []), ...(permissions.ask ?? [])],
        deny: [...(mine.deny ?? []), ...(permissions.deny ?? [])],
      };
    }
    const hasHooks = hooks && Object.values(hooks).some((list) => list?.length);
    if (hasHooks || permissions?.allow?.length || permissions?.defaultMode) {
      grants = {
        path: projectPath!,
        ...(hasHooks ? { hooks } : {}),
        ...(permissions?.allow?.length ? { allow: permissions.allow } : {}),
        ...(permissions?.defaultMode ? { defaultMode: permissions.defaultMode } : {}),
      };
    }
  }
  return { settings, grants, files, warnings };
}

/**
 * The settings with a trusted project's grants laid over them: its allow rules after the
 * user's, its hooks after the user's, its default mode over the user's.
 *
 * @example
 * ```ts
 * import { withProjectGrants } from "./settings.ts";
 * const settings = withProjectGrants(
 *   { permissions: { allow: ["read"] } },
 *   { path: "/p/.agent/settings.json", allow: ["bash(npm test)"], defaultMode: "accept-edits" },
 * );
 * if (settings.permissions?.allow?.join() !== "read,bash(npm test)") throw new Error("unexpected");
 * ```
 */
export function withProjectGrants(settings: Settings, grants: ProjectGrants | undefined): Settings {
  if (!grants) return settings;
  const mine = settings.permissions ?? {};
  const merged: Settings = {
    ...settings,
    permissions: {
      ...mine,
      allow: [...(mine.allow ?? []), ...(grants.allow ?? [])],
      defaultMode: grants.defaultMode ?? mine.defaultMode,
    },
  };
  if (grants.hooks) {
    const hooks: ShellHooksConfig = { ...settings.hooks };
    for (
      const [event, list] of Object.entries(grants.hooks) as [
        keyof ShellHooksConfig,
        ShellHook[],
      ][]
    ) {
      hooks[event] = [...(hooks[event] ?? []), ...list];
    }
    merged.hooks = hooks;
  }
  return merged;
}

async function _read(path: string): Promise<Settings | undefined> {
  if (Deno.permissions.querySync({ name: "read", path }).state !== "granted") return undefined;
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch {
    return undefined;
  }
  return _parse(text, path);
}

function _parse(text: string, path: string): Settings {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`Bad settings in ${path}: not valid JSON (${(error as Error).message})`);
  }
  const checked = (_schema ??= _makeSchema()).safeParse(json);
  if (!checked.success) {
    throw new ConfigError(`Bad settings in ${path}:\n${z.prettifyError(checked.error)}`);
  }
  return checked.data as Settings;
}
