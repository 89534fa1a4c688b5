/**
 * MCP server configuration in the shape other agents already use (`.mcp.json`,
 * `--mcp-config`): `{ "mcpServers": { "<name>": { "command": … } | { "type": "http", "url": … } } }`.
 * Files are checked with zod, merged by server name, and `${VAR}` / `${VAR:-default}` are
 * expanded from the environment.
 *
 * @module
 */

import { isAbsolute, join, resolve } from "node:path";
import { z } from "zod";
import { ConfigError } from "../errors.ts";
import { _expand, grantedEnv } from "./env.ts";

/** A server the agent starts as a child process and talks to over stdin and stdout. */
export interface McpStdioServerConfig {
  /** `stdio`, or absent. */
  type?: "stdio";
  /** The program to run, e.g. `npx`. */
  command: string;
  /** Its arguments. */
  args?: string[];
  /** Variables added to the few inherited ones (`HOME`, `PATH`, `USER`, …). */
  env?: Record<string, string>;
  /** The directory it runs in; relative to the agent's working directory. */
  cwd?: string;
  /**
   * Runs the server inside the bubblewrap sandbox: `true` for the workspace writable, the rest
   * read-only and no network; an object to give it the network or more writable directories
   * (relative to the agent's working directory). A server that asks for the sandbox where there
   * is none does not start.
   */
  sandbox?: boolean | McpSandboxConfig;
}

/** What a sandboxed stdio server may do besides writing the workspace. */
export interface McpSandboxConfig {
  /** Whether it keeps the network (default false). */
  net?: boolean;
  /** More directories it may write, e.g. a cache. */
  writable?: string[];
}

/** A server the agent reaches over HTTP: Streamable HTTP, or the older HTTP+SSE transport. */
export interface McpHttpServerConfig {
  /**
   * `http` (or its alias `streamable-http`) tries Streamable HTTP first and falls back to SSE
   * when the server does not speak it; `sse` uses the SSE transport only.
   */
  type: "http" | "streamable-http" | "sse";
  /** The server's endpoint, e.g. `https://example.com/mcp`. */
  url: string;
  /** Headers sent with every request, e.g. `Authorization`. */
  headers?: Record<string, string>;
  /** How it logs in over OAuth, when not by a client registered at login (see `oauth.ts`). */
  oauth?: McpOAuthConfig;
}

/** A server's OAuth client, registered ahead of time. */
export interface McpOAuthConfig {
  /** The client's id. */
  clientId: string;
  /** Its secret, if it has one (write it as `${VAR}`). */
  clientSecret?: string;
  /** The scopes to ask for. */
  scope?: string;
  /**
   * `authorization_code` (the default): a person logs in (`agent mcp login`);
   * `client_credentials`: a machine does, with the client's secret, at every start.
   */
  grant?: "authorization_code" | "client_credentials";
}

/** One server's configuration. */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

/** The MCP servers by name. */
export interface McpConfig {
  /** The servers, by name. */
  mcpServers: Record<string, McpServerConfig>;
}

/** What {@link loadMcpConfig} found. */
export interface LoadedMcpConfig {
  /** The merged configuration, with variables expanded. */
  config: McpConfig;
  /** The servers that come from the project's `.mcp.json` (not replaced by a `--mcp-config`). */
  projectServers: string[];
  /** The files read, in order. */
  files: string[];
  /** What was skipped or looks wrong, e.g. a variable that is not set. */
  warnings: string[];
}

/** Options of {@link loadMcpConfig}. */
export interface LoadMcpConfigOptions {
  /** The working directory: `.mcp.json` is read there, and relative paths are resolved from it. */
  cwd: string;
  /**
   * The `--mcp-config` values, in order: file paths, or JSON objects given inline. A later one
   * replaces an earlier server of the same name, and all of them replace `.mcp.json`.
   */
  files?: readonly string[];
  /**
   * Looks up variables for `${VAR}`; unset variables expand to their default or to "" (default:
   * `Deno.env.get` for the variables Deno already grants, without asking).
   */
  env?: (name: string) => string | undefined;
  /**
   * The project's `.mcp.json`: read from `cwd` (default), given as read already, or `false` to
   * leave the project's servers out (a project its user does not trust).
   */
  project?: { path: string; text: string } | false;
}

/** Options of {@link parseMcpConfig}. */
export interface ParseMcpConfigOptions {
  /** Where the value came from, for error messages (default `MCP config`). */
  source?: string;
  /** Looks up variables for `${VAR}`; without it, nothing is expanded. */
  env?: (name: string) => string | undefined;
}

const _strings = z.record(z.string(), z.string());

const _stdioSchema = z.looseObject({
  type: z.literal("stdio").optional(),
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  env: _strings.optional(),
  cwd: z.string().min(1).optional(),
  sandbox: z.union([
    z.boolean(),
    z.looseObject({
      net: z.boolean().optional(),
      writable: z.array(z.string().min(1)).optional(),
    }),
  ]).optional(),
});

const _httpSchema = z.looseObject({
  type: z.enum(["http", "streamable-http", "sse"]),
  url: z.string().min(1),
  headers: _strings.optional(),
  oauth: z.object({
    clientId: z.string().min(1),
    clientSecret: z.string().optional(),
    scope: z.string().optional(),
    grant: z.enum(["authorization_code", "client_credentials"]).optional(),
  }).optional(),
});

const _fileSchema = z.looseObject({
  mcpServers: z.record(z.string(), z.unknown()),
});

const _TYPES = ["stdio", "http", "streamable-http", "sse"];

/**
 * Checks an MCP configuration value (a parsed `.mcp.json`) and expands `${VAR}` and
 * `${VAR:-default}` in `command`, `args`, `env`, `cwd`, `sandbox.writable`, `url` and `headers`. A server with a
 * `url` and no `type` is taken as `http`. Keys this version does not know are ignored. Throws a
 * {@link ConfigError} naming the source and the field when the value does not fit.
 *
 * @example
 * ```ts
 * import { parseMcpConfig } from "./config.ts";
 * const { config } = parseMcpConfig(
 *   { mcpServers: { docs: { type: "http", url: "${DOCS_URL:-http://127.0.0.1:3001/mcp}" } } },
 *   { env: () => undefined },
 * );
 * const docs = config.mcpServers.docs;
 * if (!("url" in docs) || docs.url !== "http://127.0.0.1:3001/mcp") throw new Error("unexpected");
 * ```
 */
export function parseMcpConfig(
  value: unknown,
  options: ParseMcpConfigOptions = {},
): { config: McpConfig; warnings: string[] } {
  const source = options.source ?? "MCP config";
  const file = _fileSchema.safeParse(value);
  if (!file.success) throw new ConfigError(`Bad MCP config in ${source}: ${_issues(file.error)}`);
  const warnings: string[] = [];
  const mcpServers: Record<string, McpServerConfig> = {};
  for (const [name, raw] of Object.entries(file.data.mcpServers)) {
    const at = `mcpServers.${name}`;
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw new ConfigError(`Bad MCP config in ${source}: ${at}: expected an object`);
    }
    const entry = raw as Record<string, unknown>;
    const type = entry.type ??
      (entry.url !== undefined && entry.command === undefined ? "http" : undefined);
    if (type !== undefined && !_TYPES.includes(type as string)) {
      throw new ConfigError(
        `Bad MCP config in ${source}: ${at}.type: expected one of ${
          _TYPES.map((t) => `"${t}"`).join(", ")
        }, got ${JSON.stringify(type)}`,
      );
    }
    const expand = (text: string, field: string) =>
      options.env
        ? _expand(text, options.env, (variable) =>
          warnings.push(
            `${source}: ${at}.${field} uses \${${variable}}, which is not set; it expands to ""`,
          ))
        : text;
    if (type === undefined || type === "stdio") {
      const checked = _stdioSchema.safeParse(entry);
      if (!checked.success) {
        throw new ConfigError(`Bad MCP config in ${source}: ${_issues(checked.error, at)}`);
      }
      const { command, args, env, cwd, sandbox } = checked.data;
      const server: McpStdioServerConfig = { command: expand(command, "command") };
      if (type === "stdio") server.type = "stdio";
      if (args) server.args = args.map((arg, i) => expand(arg, `args[${i}]`));
      if (env) server.env = _mapValues(env, (v, k) => expand(v, `env.${k}`));
      if (cwd) server.cwd = expand(cwd, "cwd");
      if (sandbox === true) server.sandbox = true;
      else if (typeof sandbox === "object") {
        server.sandbox = {};
        if (sandbox.net !== undefined) server.sandbox.net = sandbox.net;
        if (sandbox.writable) {
          server.sandbox.writable = sandbox.writable.map((path, i) =>
            expand(path, `sandbox.writable[${i}]`)
          );
        }
      }
      mcpServers[name] = server;
    } else {
      const checked = _httpSchema.safeParse({ ...entry, type });
      if (!checked.success) {
        throw new ConfigError(`Bad MCP config in ${source}: ${_issues(checked.error, at)}`);
      }
      const url = expand(checked.data.url, "url");
      if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
        throw new ConfigError(
          `Bad MCP config in ${source}: ${at}.url: expected an http:// or https:// URL, got ${
            JSON.stringify(url)
          }`,
        );
      }
      const server: McpHttpServerConfig = { type: checked.data.type, url };
      const headers = checked.data.headers;
      if (headers) server.headers = _mapValues(headers, (v, k) => expand(v, `headers.${k}`));
      const oauth = checked.data.oauth;
      if (oauth) {
        server.oauth = { clientId: expand(oauth.clientId, "oauth.clientId") };
        if (oauth.clientSecret !== undefined) {
          server.oauth.clientSecret = expand(oauth.clientSecret, "oauth.clientSecret");
        }
        if (oauth.scope !== undefined) server.oauth.scope = oauth.scope;
        if (oauth.grant === "client_credentials" && !server.oauth.clientSecret) {
          throw new ConfigError(
            `Bad MCP config in ${source}: ${at}.oauth: the client_credentials grant needs ` +
              `clientSecret`,
          );
        }
        if (oauth.grant) server.oauth.grant = oauth.grant;
      }
      mcpServers[name] = server;
    }
  }
  return { config: { mcpServers }, warnings };
}

/**
 * Reads the project's `.mcp.json` (in `cwd`) and the `--mcp-config` files, checks them, and
 * merges them by server name, later ones winning. Files Deno does not already let the agent read
 * are skipped with a warning (Deno is never asked); a project without `.mcp.json` is fine; a
 * `--mcp-config` file that does not exist, or any file that is not valid JSON or does not fit,
 * is a {@link ConfigError} naming the file and the field.
 *
 * @example
 * ```ts
 * import { loadMcpConfig } from "./config.ts";
 * const { config, files } = await loadMcpConfig({
 *   cwd: "/nonexistent",
 *   files: ['{"mcpServers":{"fs":{"command":"npx","args":["-y","server-fs","${HOME}"]}}}'],
 *   env: (name) => name === "HOME" ? "/home/ada" : undefined,
 * });
 * const fs = config.mcpServers.fs;
 * if (!("command" in fs) || fs.args?.[2] !== "/home/ada" || files.length !== 0) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export async function loadMcpConfig(options: LoadMcpConfigOptions): Promise<LoadedMcpConfig> {
  const files: string[] = [];
  const warnings: string[] = [];
  const mcpServers: Record<string, McpServerConfig> = {};
  // The servers of the project's file, as long as no later file replaces them.
  const fromProject = new Set<string>();
  const add = (value: unknown, source: string, isProject = false) => {
    const parsed = parseMcpConfig(value, { source, env: options.env ?? grantedEnv });
    Object.assign(mcpServers, parsed.config.mcpServers);
    for (const name of Object.keys(parsed.config.mcpServers)) {
      if (isProject) fromProject.add(name);
      else fromProject.delete(name);
    }
    warnings.push(...parsed.warnings);
  };

  let project = options.project;
  if (project === undefined) {
    const path = join(options.cwd, ".mcp.json");
    const text = await _read(path, false, warnings);
    project = text === undefined ? false : { path, text };
  }
  if (project) {
    add(_json(project.text, project.path), project.path, true);
    files.push(project.path);
  }
  for (const given of options.files ?? []) {
    if (given.trimStart().startsWith("{")) {
      add(_json(given, "the --mcp-config argument"), "the --mcp-config argument");
      continue;
    }
    const path = isAbsolute(given) ? given : resolve(options.cwd, given);
    const text = await _read(path, true, warnings);
    if (text === undefined) continue;
    add(_json(text, path), path);
    files.push(path);
  }
  return { config: { mcpServers }, projectServers: [...fromProject], files, warnings };
}

/** The file's text; undefined when it is absent (and optional) or not readable without asking. */
async function _read(
  path: string,
  required: boolean,
  warnings: string[],
): Promise<string | undefined> {
  if (Deno.permissions.querySync({ name: "read", path }).state !== "granted") {
    warnings.push(`${path} not read: Deno does not grant read access; allow it with --allow-read`);
    return undefined;
  }
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound && !required) return undefined;
    const reason = error instanceof Deno.errors.NotFound
      ? "no such file"
      : (error as Error).message;
    throw new ConfigError(`Cannot read the MCP config ${path}: ${reason}`);
  }
}

function _json(text: string, source: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError(
      `Bad MCP config in ${source}: not valid JSON (${(error as Error).message})`,
    );
  }
}

function _mapValues(
  record: Record<string, string>,
  map: (value: string, key: string) => string,
): Record<string, string> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, map(v, k)]));
}

/** `mcpServers.x.args[0]: Invalid input: expected string, received number; …` */
function _issues(error: z.ZodError, prefix?: string): string {
  return error.issues.map((issue) => {
    const path = issue.path.reduce<string>(
      (at, key) =>
        typeof key === "number" ? `${at}[${key}]` : at ? `${at}.${String(key)}` : String(key),
      prefix ?? "",
    );
    return path ? `${path}: ${issue.message}` : issue.message;
  }).join("; ");
}
