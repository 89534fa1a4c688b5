/**
 * Trust in a project: what a cloned repository supplies that could run code, receive a secret or
 * widen a permission (its hooks, MCP servers, allow rules and default mode) applies only once the
 * user trusts the project. The decision is the user's, kept in the user's data directory (never
 * in the project), and tied to the project files as they were: a changed file asks again.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { isAbsolute, join, relative, resolve } from "node:path";
import type { ProjectReport } from "../events.ts";
import type { ProjectGrants } from "./settings.ts";
import { ensurePrivateDir } from "../files/private_files.ts";
import { readOwnFileSync } from "../files/own_files.ts";
import { type McpConfig, parseMcpConfig } from "../mcp/config.ts";
import type { ProjectFile, ProjectFiles } from "./project.ts";
import { terminalText } from "./terminal_text.ts";

/** What a project asks for that needs trust, as the user is shown it. */
export interface TrustRequest {
  /** The project's directory. */
  root: string;
  /** A digest of the project files it comes from: a changed file is a new request. */
  hash: string;
  /** Each thing it would run or widen, in words: each hook command, each MCP server, … */
  items: string[];
}

/** How the user answered: trust from now on, for this session only, or go on without. */
export type TrustAnswer = "trust" | "session" | "no";

/** How a run stands with its project. */
export interface TrustDecision {
  /** Whether the project's hooks, MCP servers, allow rules and default mode apply. */
  trusted: boolean;
  /** What was left out because it was not trusted (empty when trusted or nothing was asked). */
  withheld: string[];
}

/**
 * What the project asks for that needs trust, or `undefined` when it asks for nothing of the
 * kind. MCP servers are shown as configured, before any `${VAR}` is filled in.
 *
 * @example
 * ```ts
 * import { trustRequest } from "./trust.ts";
 * const request = trustRequest(
 *   { root: "/p", warnings: [], mcp: { path: "/p/.mcp.json", text: '{"mcpServers":{"x":{"command":"node","args":["s.js"]}}}' } },
 *   { path: "/p/.agent/settings.json", allow: ["bash(*)"] },
 * );
 * if (request?.items.join("|") !== 'MCP server "x": node s.js|allow rule: bash(*)') {
 *   throw new Error(JSON.stringify(request));
 * }
 * ```
 */
export function trustRequest(
  files: ProjectFiles,
  grants: ProjectGrants | undefined,
): TrustRequest | undefined {
  const items: string[] = [];
  for (const [event, hooks] of Object.entries(grants?.hooks ?? {})) {
    for (const hook of hooks ?? []) {
      const matcher = hook.matcher ? ` (${_shown(hook.matcher)})` : "";
      items.push(`hook ${event}${matcher}: ${_shown(hook.command)}`);
    }
  }
  if (files.mcp) items.push(..._mcpItems(files.mcp));
  for (const rule of grants?.allow ?? []) items.push(`allow rule: ${_shown(rule)}`);
  if (grants?.defaultMode) items.push(`default permission mode: ${grants.defaultMode}`);
  if (items.length === 0) return undefined;
  const digest = createHash("sha256");
  for (const file of [files.settings, files.mcp]) {
    digest.update(file ? `${file.path}\0${file.text}\0` : "\0\0");
  }
  return { root: files.root, hash: digest.digest("hex"), items };
}

/**
 * Decides whether the project is trusted: by `--trust-project`, by the user settings'
 * `trustedDirectories`, by an earlier "trust" for the same files, or (in an interactive session)
 * by asking. A "trust" answer is remembered.
 *
 * @example
 * ```ts
 * import { decideTrust } from "./trust.ts";
 * const request = { root: "/p", hash: "h", items: ["allow rule: bash(*)"] };
 * const decision = await decideTrust(request, { flag: false, directories: [] });
 * if (decision.trusted || decision.withheld[0] !== "allow rule: bash(*)") throw new Error("unexpected");
 * ```
 */
export async function decideTrust(
  request: TrustRequest | undefined,
  options: {
    /** `--trust-project`. */
    flag: boolean;
    /** The user settings' `trustedDirectories`, absolute. */
    directories: readonly string[];
    /** Where "trust" answers are kept. */
    store?: TrustStore;
    /** Asks the user; without it (headless, the service), nobody is asked. */
    ask?: (request: TrustRequest) => Promise<TrustAnswer>;
  },
): Promise<TrustDecision> {
  if (!request) return { trusted: true, withheld: [] };
  const listed = options.directories.some((dir) => {
    const path = relative(dir, request.root);
    return path === "" || (!path.startsWith("..") && !isAbsolute(path));
  });
  if (options.flag || listed || options.store?.isTrusted(request.root, request.hash)) {
    return { trusted: true, withheld: [] };
  }
  const answer = options.ask ? await options.ask(request) : "no";
  if (answer === "trust") options.store?.remember(request.root, request.hash);
  return answer === "no"
    ? { trusted: false, withheld: request.items }
    : { trusted: true, withheld: [] };
}

/** The user's trust decisions, by project directory. */
export interface TrustStore {
  /** Whether the user trusted this project with these files. */
  isTrusted(root: string, hash: string): boolean;
  /** Records that the user trusts this project with these files. */
  remember(root: string, hash: string): void;
}

/**
 * The trust decisions kept in `<dataDir>/trusted-projects.json` (mode 0600), read fresh each time.
 * Only the user's own store counts: one another user owns or others may write (see
 * `readOwnFileSync`) trusts nothing, and `warn` says so, once.
 *
 * @example
 * ```ts
 * import { trustStore } from "./trust.ts";
 * const store = trustStore(await Deno.makeTempDir());
 * store.remember("/p", "h1");
 * if (!store.isTrusted("/p", "h1") || store.isTrusted("/p", "h2")) throw new Error("unexpected");
 * ```
 */
export function trustStore(
  dataDir: string,
  options: {
    /** Says why the store was found but not read. */
    warn?: (text: string) => void;
  } = {},
): TrustStore {
  const path = join(dataDir, "trusted-projects.json");
  let warned = false;
  const warn = (text: string) => {
    if (!warned) options.warn?.(text);
    warned = true;
  };
  const read = (): Record<string, { hash: string; at: string }> => {
    try {
      const bytes = readOwnFileSync(path, { upTo: dataDir, warn });
      const value = bytes && JSON.parse(new TextDecoder().decode(bytes));
      return typeof value === "object" && value !== null ? value : {};
    } catch {
      return {};
    }
  };
  return {
    isTrusted: (root, hash) => read()[root]?.hash === hash,
    remember(root, hash) {
      const all = { ...read(), [root]: { hash, at: new Date().toISOString() } };
      ensurePrivateDir(dataDir);
      const temp = `${path}.${crypto.randomUUID()}.tmp`;
      Deno.writeTextFileSync(temp, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
      Deno.renameSync(temp, path);
    },
  };
}

/**
 * What a run that does not trust its project says of it: what was left out, and how to trust it.
 *
 * @example
 * ```ts
 * import { untrustedNotice } from "./trust.ts";
 * const text = untrustedNotice({ dir: "/p", trusted: false, withheld: ["allow rule: bash(*)"] });
 * if (!text.includes("--trust-project")) throw new Error(text);
 * ```
 */
export function untrustedNotice(project: ProjectReport, settingsFile?: string): string {
  return `the project ${project.dir} is not trusted, so what it asks for is off: ` +
    `${project.withheld.join("; ")}. Trust it with --trust-project, or add it to ` +
    `"trustedDirectories" in ${settingsFile ?? "the user settings"}`;
}

/**
 * The `trustedDirectories` of the user settings as absolute paths (`~/` is the home directory;
 * relative paths are left out: they would depend on where the agent starts).
 *
 * @example
 * ```ts
 * import { trustedDirectories } from "./trust.ts";
 * const dirs = trustedDirectories(["~/src", "/work", "rel"], "/home/ada");
 * if (dirs.join() !== "/home/ada/src,/work") throw new Error(dirs.join());
 * ```
 */
export function trustedDirectories(given: readonly string[] = [], home?: string): string[] {
  return given.flatMap((dir) => {
    if (dir === "~" || dir.startsWith("~/")) return home ? [resolve(home, `.${dir.slice(1)}`)] : [];
    return isAbsolute(dir) ? [resolve(dir)] : [];
  });
}

/**
 * The question of the terminal session, in words.
 *
 * @example
 * ```ts
 * import { trustQuestion } from "./trust.ts";
 * const text = trustQuestion({ root: "/p", hash: "h", items: ["hook onEvent: echo hi"] });
 * if (!text.includes("  • hook onEvent: echo hi\n")) throw new Error(text);
 * ```
 */
export function trustQuestion(request: TrustRequest): string {
  return `This project (${request.root}) asks for what only a project you trust may have:\n` +
    request.items.map((item) => `  • ${item}\n`).join("") +
    "Trust it? [t]rust / trust for this [s]ession / [n]o, go on without them ›";
}

/**
 * The answer a line gives to {@link trustQuestion}: `t`/`trust`, `s`/`session`, `n`/`no`; anything
 * else is no answer.
 *
 * @example
 * ```ts
 * import { trustAnswerOf } from "./trust.ts";
 * if (trustAnswerOf(" T ") !== "trust" || trustAnswerOf("yes") !== undefined) throw new Error();
 * ```
 */
export function trustAnswerOf(line: string): TrustAnswer | undefined {
  const word = line.trim().toLowerCase();
  if (word === "t" || word === "trust") return "trust";
  if (word === "s" || word === "session") return "session";
  if (word === "n" || word === "no") return "no";
  return undefined;
}

/**
 * Asks {@link trustQuestion} on the terminal until a line answers it; the end of input is "no".
 * What the project asks for is shown without the control characters a hostile file could hide
 * in it.
 */
export function askTrustOnTerminal(request: TrustRequest): TrustAnswer {
  const question = terminalText(trustQuestion(request));
  for (;;) {
    const line = prompt(question);
    if (line === null) return "no";
    const answer = trustAnswerOf(line);
    if (answer) return answer;
  }
}

/**
 * What the project's `.mcp.json` would start, read by the parser that starts them (so that what
 * is shown is what runs), before any `${VAR}` is filled in.
 */
function _mcpItems(file: ProjectFile): string[] {
  let config: McpConfig;
  try {
    config = parseMcpConfig(JSON.parse(file.text), { source: file.path }).config;
  } catch (error) {
    return [`the MCP servers of ${file.path}, which do not load: ${(error as Error).message}`];
  }
  return Object.entries(config.mcpServers).map(([name, server]) => {
    const parts: string[] = [];
    if ("url" in server) {
      parts.push(`${server.type} ${_shown(server.url)}`);
      if (server.headers) parts.push(`headers ${_pairs(server.headers, ": ")}`);
    } else {
      parts.push(_shown([server.command, ...(server.args ?? [])].join(" ")));
      if (server.env) parts.push(`env ${_pairs(server.env, "=")}`);
      if (server.cwd) parts.push(`in ${_shown(server.cwd)}`);
      if (server.sandbox) parts.push("in the sandbox");
    }
    return `MCP server ${_shown(JSON.stringify(name))}: ${parts.join("; ")}`;
  });
}

/** `k=v, …` as shown. */
function _pairs(record: Record<string, string>, join: string): string {
  return Object.entries(record).map(([key, value]) => `${_shown(key)}${join}${_shown(value)}`)
    .join(", ");
}

/** The most characters of one thing shown in the question. */
const _MAX_SHOWN = 400;

/**
 * Text from a project file as the trust question shows it: every character that could hide
 * another (line breaks, tabs, control, format, bidi and zero-width characters) written as an
 * escape, and a long text cut with how much was left out, so that what is read is what runs.
 */
function _shown(text: string): string {
  const escaped = text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (char) => {
    if (char === "\n") return "\\n";
    if (char === "\t") return "\\t";
    return `\\u{${char.codePointAt(0)!.toString(16)}}`;
  });
  return escaped.length > _MAX_SHOWN
    ? `${escaped.slice(0, _MAX_SHOWN)}… (${escaped.length - _MAX_SHOWN} more characters)`
    : escaped;
}
