/**
 * Everything a CLI run needs, worked out from the flags, the settings, Deno's permissions and
 * the saved sessions, before anything runs.
 *
 * @module
 */

import { dirname, join, resolve } from "node:path";
import { ConfigError } from "../errors.ts";
import type { Model } from "../model.ts";
import { parseModelSpec, resolveModel, thinkingBudgetNote } from "../providers/resolve.ts";
import { checkPrivateDir, ensurePrivateDir } from "../files/private_files.ts";
import { forkNotice } from "../session/resume.ts";
import {
  defaultSessionsDir,
  fileSessionStore,
  type LoadedSession,
  type Redactor,
  type ResumedSession,
  resumeSession,
  SessionError,
  type SessionStore,
  sessionsWritable,
} from "../session/mod.ts";
import { loadSettings, type Settings, userSettingsPath, withProjectGrants } from "./settings.ts";
import type { ProjectReport } from "../events.ts";
import { readProjectFiles } from "./project.ts";
import {
  decideTrust,
  type TrustAnswer,
  trustedDirectories,
  type TrustRequest,
  trustRequest,
  trustStore,
  untrustedNotice,
} from "./trust.ts";
import { type CliArgs, DEFAULT_MODEL, UsageError } from "./args.ts";
import { openWorkspace, systemPromptFor, type Workspace, workspaceRoots } from "./workspace.ts";
import { withMcpInstructions } from "./system_prompt.ts";
import { type CliSandbox, resolveCliSandbox } from "./sandbox.ts";
import type { SandboxReport } from "../sandbox/policy.ts";
import { rulesOf, runHooks } from "./control.ts";
import type { ConnectMcpOptions, McpConnection } from "../mcp/client.ts";
import type { McpServerConfig } from "../mcp/config.ts";
import type { BashToolOptions } from "../../tools/bash.ts";
import type { ToolFs } from "../../tools/fs.ts";
import { runSecrets, secretEnvNames } from "./secrets.ts";
import { loadMcpConfig } from "../mcp/config.ts";
import type { MemoryStore } from "../memory/mod.ts";
import { defaultProbeCacheFile } from "../sandbox/probe_cache.ts";
import type { Hooks } from "../hooks.ts";
import type { DriverRunOptions } from "../conversation/driver.ts";
import type { PermissionMode, PolicyOptions } from "../permissions/policy.ts";
import type { PermissionRule } from "../permissions/rules.ts";
import { verboseModel } from "./verbose.ts";
import { againWith, shellWord, thisInvocation } from "./invocation.ts";

export { DEFAULT_MODEL };

/** What the CLI reads of its environment. */
export interface CliEnvironment {
  /** Reads an environment variable. */
  env(name: string): string | undefined;
  /** Writes a warning line to stderr. */
  warn(text: string): void;
  /** Writes a line of `--verbose` output to stderr. */
  log(text: string): void;
  /** Whether stdin is a terminal (no prompt then means an interactive session). */
  interactive: boolean;
  /** Asks the user whether to trust the project (the terminal session); else nobody is asked. */
  askTrust?: (request: TrustRequest) => Promise<TrustAnswer>;
  /** Given the run's redactor as soon as it is built, for what is written from then on. */
  onRedactor?: (redact: Redactor) => void;
  /**
   * MCP servers the program hosting the agent gives it (an editor, through ACP): the user's own
   * configuration there, started as those of `--mcp-config` are; a name taken twice is theirs.
   */
  mcpServers?: Record<string, McpServerConfig>;
  /**
   * Where the file tools read and write (an editor's buffers, through ACP), instead of Deno's
   * file system; paths are still checked on the files Deno opens.
   */
  fs?: ToolFs;
  /**
   * More options of the `bash` tool (a terminal the editor shows); the sandbox is the run's
   * own, whatever these say.
   */
  bash?: BashToolOptions;
  /**
   * `--resume` names one session by its whole id, and one that another process writes is
   * refused (a `busy` `SessionError`) instead of going on in a copy: the caller keeps calling it
   * by that id (an editor through ACP).
   */
  resumeExact?: boolean;
  /**
   * Asks the user what an MCP server asks for (the terminal session); absent, nobody can answer
   * and such requests are declined.
   */
  onElicitation?: ConnectMcpOptions["onElicitation"];
}

/** A CLI run, ready to go. */
export interface Prepared {
  /** The working directory. */
  cwd: string;
  /** The command that started the agent, for hints ("go on with: <command> -c"), if known. */
  command?: string;
  /** Whether the project is trusted, and what of it was left out if not. */
  project: ProjectReport;
  /** The agent's own settings and data directories, which its file tools never change. */
  ownPaths: string[];
  /** The merged settings. */
  settings: Settings;
  /** The model's name, `provider/model`. */
  modelSpec: string;
  /** The model. */
  model: Model;
  /** Resolves another model with the same settings (for `/model`). */
  resolveModel(spec: string): Model;
  /** Tools and capabilities. */
  setup: Workspace;
  /** The sandbox shell commands run in. */
  sandbox: SandboxReport;
  /** The system prompt. */
  systemPrompt: string;
  /** Where sessions are saved; none with `--no-session` or when Deno does not grant writing. */
  store?: SessionStore;
  /** The session to go on with (`-c`, `-r`). */
  resumed?: LoadedSession;
  /** The user's data directory, when Deno grants writing there (history and memory live there). */
  dataDir?: string;
  /** The permission rules (an "always" answer adds to them). */
  rules: PermissionRule[];
  /** The permission mode; the interactive session can switch it. */
  mode: { current: PermissionMode };
  /**
   * The permission policy of the run: the rules, the mode, the workspace roots and the agent's
   * own directories. Without an `ask` added (headless, the service), a rule that asks refuses.
   */
  policy: PolicyOptions;
  /** What every run of this program reports and is hooked with. */
  runOptions: DriverRunOptions;
  /** The hooks: the settings' commands, and the plan-mode note. */
  hooks: Hooks;
  /** The project's long-term memory, when it is kept. */
  memory?: MemoryStore;
  /** The run's redactor: what it writes or sends goes through it (sessions, memory, service). */
  redact: Redactor;
  /** Stops what the run started (MCP servers, the memory database). */
  close(): Promise<void>;
}

/**
 * Prepares a run. Throws a `UsageError` for bad flags and a `ConfigError` for a bad
 * configuration (missing key, no session to continue).
 */
export async function prepare(options: CliArgs, environment: CliEnvironment): Promise<Prepared> {
  const { env, warn } = environment;
  const cwd = resolve(options.cwd ?? Deno.cwd());
  const command = thisInvocation(Deno.cwd());
  // What the project supplies applies once its user trusts it; what only narrows, at once.
  const files = await readProjectFiles(cwd);
  const loaded = await loadSettings({ cwd, env, project: files.settings ?? null });
  for (const warning of [...files.warnings, ...loaded.warnings]) warn(warning);
  // The data directory is used only if it is the user's alone: trust is read there, sessions kept.
  const dataRefused = _dataRefused(defaultSessionsDir(env));
  if (dataRefused) warn(dataRefused);
  const sessionsDir = dataRefused ? undefined : defaultSessionsDir(env);
  const trust = await decideTrust(trustRequest(files, loaded.grants), {
    flag: options.trustProject,
    directories: trustedDirectories(loaded.settings.trustedDirectories, env("HOME")),
    store: sessionsDir ? trustStore(dirname(sessionsDir), { warn }) : undefined,
    ask: environment.askTrust,
  });
  const settings = trust.trusted
    ? withProjectGrants(loaded.settings, loaded.grants)
    : loaded.settings;
  const project: ProjectReport = { dir: files.root, ...trust };
  if (!trust.trusted) warn(untrustedNotice(project, userSettingsPath(env)));

  // The MCP servers' configuration is read now: the credentials it gives them are secrets too.
  const mcpConfig = await loadMcpConfig({
    cwd,
    files: options.mcpConfig,
    env,
    project: trust.trusted ? files.mcp ?? false : false,
  });
  if (environment.mcpServers) {
    Object.assign(mcpConfig.config.mcpServers, environment.mcpServers);
  }
  const redact = runSecrets(env, settings, mcpConfig.config);
  environment.onRedactor?.(redact);
  const store = options.noSession || dataRefused
    ? undefined
    : _store(env, warn, options.continue || !!options.resume, command, redact);
  // The memory opens (its modules load, its database opens) while the rest is set up. With
  // --no-session nothing is written: no memory either.
  const dataDir = sessionsDir && sessionsWritable(dirname(sessionsDir))
    ? dirname(sessionsDir)
    : undefined;
  const opening = dataDir && !options.noMemory && !options.noSession
    ? import("./memory.ts").then(({ openProjectMemory }) =>
      openProjectMemory({
        dataDir,
        cwd,
        settings,
        env,
        warn,
        redact,
        // A service's runs go on beside the memory's work, not behind it.
        inWorker: options.command === "serve",
      })
    )
    : undefined;
  // Whatever fails from here on closes what was opened.
  let memory: MemoryStore | undefined;
  try {
    let resumed: ResumedSession | undefined;
    if (options.continue || options.resume) {
      if (!store) {
        throw new ConfigError("Sessions are not available in this run (see the warning above)");
      }
      const id = options.resume ?? (await store.latest(cwd))?.id;
      if (!id) throw new ConfigError(`No saved session in ${cwd} to continue; start one first`);
      // This process becomes the session's one writer; when another writes it, a copy goes on.
      resumed = await resumeSession(store, id, { fork: !environment.resumeExact });
      if (environment.resumeExact && resumed.header.id !== id) {
        await resumed.writer.close();
        throw new SessionError(`No session ${id}: give a whole session id`, {
          reason: "not_found",
        });
      }
      for (const warning of resumed.warnings) warn(warning);
      if (resumed.forkedFrom) warn(forkNotice(resumed));
    }

    const modelSpec = options.model ?? resumed?.model ?? env("AGENT_MODEL") ?? settings.model ??
      DEFAULT_MODEL;
    let provider: string;
    try {
      provider = parseModelSpec(modelSpec, settings.providers).provider;
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const resolveWith = (spec: string) => {
      const resolving = {
        // --base-url and --api are those of the provider they were given for; another has its own.
        ...(parseModelSpec(spec, settings.providers).provider === provider
          ? { baseURL: options.baseURL, api: options.api }
          : {}),
        env,
        providers: settings.providers,
        models: settings.models,
        thinkingBudget: options.thinking ?? settings.thinkingBudget,
      };
      const model = resolveModel(spec, resolving);
      const unused = options.thinking ? thinkingBudgetNote(spec, resolving) : undefined;
      if (unused) warn(`--thinking ${options.thinking} is ignored: ${unused}`);
      return options.verbose ? verboseModel(model, environment.log) : model;
    };
    const model = resolveWith(modelSpec);
    const rules = rulesOf(options, settings);
    const mode = {
      current: options.permissionMode ?? settings.permissions?.defaultMode ?? "default",
    };
    const sessionMode = environment.interactive ? "interactive" : "headless";
    // The data directory holds sessions, input history and memory; each needs writing there.
    const sandbox = await _sandbox(options, settings, env, sessionMode, sessionsDir);
    if (sandbox.notice) warn(sandbox.notice);
    // When a server's tools change, the run's tools follow: the loop reads them before each request.
    let followMcp = () => {};
    // The MCP client is loaded only when there is a server to start (or a warning to say).
    const mcpModule = Object.keys(mcpConfig.config.mcpServers).length > 0 ||
        mcpConfig.warnings.length > 0
      ? await import("./mcp.ts")
      : undefined;
    const mcp: McpConnection | undefined = await mcpModule?.startMcp({
      cwd,
      loaded: mcpConfig,
      env,
      warn,
      mode: sessionMode,
      sandbox: sandbox.mcp,
      sandboxAll: sandbox.mcpAll,
      oauthDir: dataDir ? join(dataDir, "mcp-oauth") : undefined,
      // The terminal session logs its user in to a server that asks, in the browser.
      login: environment.interactive
        ? {
          open: async (url) =>
            (await import("./mcp_login.ts")).openInBrowser(
              url,
              env,
              (text) => environment.log(text.trimEnd()),
            ),
        }
        : undefined,
      onToolsChanged: () => followMcp(),
      roots: workspaceRoots(options),
      onElicitation: environment.onElicitation,
      // A run's own progress lines, in text output only; a front end for a program shows none.
      onProgress: options.output === "text" && !options.command
        ? mcpModule.mcpProgressLines(warn)
        : undefined,
    });
    let setup: Workspace;
    try {
      setup = await openWorkspace(options, env, sessionMode, mcp?.tools, {
        ...environment.bash,
        sandbox: sandbox.bash,
      }, environment.fs);
    } catch (error) {
      await mcp?.close();
      throw error;
    }
    if (mcp && mcpModule) followMcp = mcpModule.followMcpTools(setup.tools, mcp, options.tools);
    // What each MCP server that started says about how to use it, with the run's secrets out.
    const systemPrompt = withMcpInstructions(
      await systemPromptFor(options, setup, warn),
      mcp?.servers() ?? [],
      redact,
    );
    // Hook commands run through sh: granted, or (interactive) Deno may ask.
    const shell = Deno.permissions.querySync({ name: "run", command: "sh" }).state;
    const canRunShell = shell === "granted" || (shell === "prompt" && environment.interactive);
    const hooks = runHooks(settings, {
      cwd,
      mode: () => mode.current,
      warn,
      canRunShell,
      sandbox,
      secretNames: secretEnvNames(settings),
    });
    memory = await opening;
    const settingsFile = userSettingsPath(env);
    const ownPaths = [
      ...(settingsFile ? [dirname(settingsFile)] : []),
      ...(sessionsDir ? [dirname(sessionsDir)] : []),
    ];
    return {
      cwd,
      // A session keeps its model, not how it was reached: hints to go on say that too.
      command: command && [
        command,
        ...(options.baseURL ? ["--base-url", shellWord(options.baseURL)] : []),
        ...(options.api ? ["--api", options.api] : []),
      ].join(" "),
      project,
      ownPaths,
      settings,
      modelSpec,
      model,
      resolveModel: resolveWith,
      setup,
      sandbox: sandbox.report,
      systemPrompt,
      store,
      resumed,
      dataDir,
      memory,
      redact,
      rules,
      mode,
      policy: { rules, mode: () => mode.current, roots: setup.roots, protected: ownPaths },
      runOptions: {
        capabilities: setup.capabilities,
        sandbox: sandbox.report,
        project,
        hooks,
      },
      hooks,
      close: async () => {
        await mcp?.close();
        await memory?.close();
        await resumed?.writer.close();
      },
    };
  } catch (error) {
    // Nothing is left open by a run that could not be prepared.
    await (memory ?? await opening?.catch(() => undefined))?.close().catch(() => {});
    throw error;
  }
}

/** The run's sandbox: the roots Deno lets the agent write, the network if Deno grants it all. */
function _sandbox(
  options: CliArgs,
  settings: Settings,
  env: (name: string) => string | undefined,
  mode: "interactive" | "headless",
  sessionsDir: string | undefined,
): Promise<CliSandbox> {
  const granted = (descriptor: Deno.PermissionDescriptor) =>
    Deno.permissions.querySync(descriptor).state;
  const roots = workspaceRoots(options);
  const run = granted({ name: "run", command: "bash" });
  const probeCache = defaultProbeCacheFile(env);
  return resolveCliSandbox({
    flag: options.sandbox,
    settings: settings.sandbox,
    cwd: roots[0],
    roots: roots.filter((path) => granted({ name: "write", path }) === "granted"),
    net: granted({ name: "net" }) === "granted",
    hide: sessionsDir ? [dirname(sessionsDir)] : [],
    env,
    runs: run === "granted" || (run === "prompt" && mode === "interactive"),
    secretNames: secretEnvNames(settings),
    // What the probe found is kept per binary and kernel; --no-session writes nothing.
    probeCache: probeCache ? { file: probeCache, write: !options.noSession } : undefined,
  });
}

/** Whether Deno lets the program read env var `name` (asked without prompting). */
function _envGranted(name: string): boolean {
  try {
    return Deno.permissions.querySync({ name: "env", variable: name }).state === "granted";
  } catch {
    return false;
  }
}

/** Why the data directory is not used, when it cannot be the user's alone. */
function _dataRefused(sessionsDir: string | undefined): string | undefined {
  const why = sessionsDir && checkPrivateDir(dirname(sessionsDir));
  return why
    ? `the data directory ${dirname(sessionsDir!)} is not used: ${why}. No trust is read from it ` +
      "and no session, memory or input history is kept there; set AGENT_DATA_DIR to a directory " +
      "of your own"
    : undefined;
}

function _store(
  env: (name: string) => string | undefined,
  warn: (text: string) => void,
  needed: boolean,
  command: string | undefined,
  redact: Redactor,
): SessionStore | undefined {
  const dir = defaultSessionsDir(env);
  if (!dir) {
    // HOME may well be set, only not readable: Deno then gives nothing for it.
    const ungranted = "Deno does not grant reading HOME: add --allow-env=HOME (or --allow-env), " +
      "or set AGENT_DATA_DIR and grant it (--allow-env=AGENT_DATA_DIR)";
    const granted = _envGranted("HOME");
    if (needed) {
      throw new ConfigError(
        `No data directory for sessions: ${granted ? "set HOME or AGENT_DATA_DIR" : ungranted}`,
      );
    }
    warn(
      `sessions are not saved: ${
        granted ? "no data directory (set HOME or AGENT_DATA_DIR)" : ungranted
      }`,
    );
    return undefined;
  }
  if (!sessionsWritable(dir)) {
    warn(
      `sessions are not saved: Deno does not grant writing to ${dir} (add --allow-write=${dir})`,
    );
    return undefined;
  }
  // The data directory is the user's alone, even when an earlier version left it open.
  ensurePrivateDir(dirname(dir));
  return fileSessionStore({
    dir,
    redact,
    listHint: `List them with: ${againWith(command, "--sessions")}`,
  });
}
