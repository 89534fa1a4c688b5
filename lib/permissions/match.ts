/**
 * How a rule's pattern matches: a command (`git *`), a path glob (`src/**`), a URL or domain
 * (`domain:example.com`), or plain text with `*` wildcards.
 *
 * @module
 */

import { isAbsolute, posix, resolve, sep } from "node:path";
import { loadPicomatch } from "../files/glob_match.ts";

/**
 * A matcher for text where `*` matches any characters (newlines too) and the rest is literal;
 * the whole text must match.
 *
 * @example
 * ```ts
 * import { wildcard } from "./match.ts";
 * const github = wildcard("https://api.github.com/*");
 * if (!github.test("https://api.github.com/repos/x/y") || github.test("https://github.com/")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function wildcard(pattern: string, options: { ignoreCase?: boolean } = {}): TextMatcher {
  const fold = options.ignoreCase ? (text: string) => text.toLowerCase() : (text: string) => text;
  const parts = fold(pattern).split("*");
  return { test: (text) => _starsMatch(parts, fold(text)) };
}

/** What a {@link wildcard} or {@link commandPattern} gives: whether a whole text matches. */
export interface TextMatcher {
  /** Whether `text` matches, whole. */
  test(text: string): boolean;
}

/**
 * Whether `text` is `parts` joined by runs of any characters. The pieces between the stars are
 * found leftmost, each after the one before: linear in the text for each piece, where a regular
 * expression of lazy runs costs the text's length to the power of their number (a rule with
 * many `*` against a long command would freeze the agent).
 */
function _starsMatch(parts: readonly string[], text: string): boolean {
  const first = parts[0];
  if (parts.length === 1) return text === first;
  const last = parts[parts.length - 1];
  const end = text.length - last.length;
  if (end < first.length || !text.startsWith(first) || !text.endsWith(last)) return false;
  let at = first.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const found = text.indexOf(parts[i], at);
    if (found < 0 || found + parts[i].length > end) return false;
    at = found + parts[i].length;
  }
  return true;
}

/**
 * A matcher for one command (its words joined by single spaces). The pattern's runs of spaces
 * count as one. `*` matches any characters, spaces included. A pattern ending in ` *` (or in
 * `:*`, the older spelling) also matches the command alone: `git *` matches `git` and
 * `git push origin`, but not `gitk`. A pattern without `*` matches that command alone or
 * followed by more arguments: `npm run test` matches `npm run test -- -u`, not
 * `npm run test:unit`.
 *
 * @example
 * ```ts
 * import { commandPattern } from "./match.ts";
 * const git = commandPattern("git *");
 * const ls = commandPattern("ls");
 * if (!git.test("git") || !git.test("git status") || git.test("gitk")) throw new Error("unexpected");
 * if (!ls.test("ls -la") || ls.test("lsof")) throw new Error("unexpected");
 * ```
 */
export function commandPattern(pattern: string): TextMatcher {
  let text = pattern.trim().replace(/\s+/g, " ").replace(/:\*$/, " *");
  // Without `*`, or ending in ` *`: the command alone, or followed by a space and anything.
  let orMore = !text.includes("*");
  if (text.endsWith(" *")) {
    text = text.slice(0, -2);
    orMore = true;
  }
  const alone = text.split("*");
  const more = `${text} *`.split("*");
  return {
    test: (command) => _starsMatch(alone, command) || (orMore && _starsMatch(more, command)),
  };
}

/** Where a path rule is evaluated. */
export interface PathContext {
  /** The working directory: relative paths and patterns are relative to it. */
  cwd: string;
  /** The home directory, for patterns starting with `~/`; they match nothing without it. */
  home?: string;
}

const _toPosix = (path: string): string => (sep === "\\" ? path.replaceAll("\\", "/") : path);
const _escapeGlob = (path: string): string => path.replace(/[\\*?[\]{}()!+@|]/g, "\\$&");

/**
 * Whether `path` (relative to `cwd`, resolved lexically: `..` is followed, symlinks are not)
 * matches a glob `pattern` (picomatch, dotfiles included: `**` spans directories, `*` stays
 * within one). A relative pattern is relative to `cwd`, an absolute one stands as is, `~/`
 * starts at `home`. `src/**` matches `src` itself as well as everything below it; with
 * `directory`, a path also matches when its form with a trailing `/` does.
 *
 * @example
 * ```ts
 * import { matchPath } from "./match.ts";
 * const context = { cwd: "/work" };
 * if (!await matchPath("src/**", "src/a/b.ts", context)) throw new Error("unexpected");
 * if (await matchPath("src/**", "../other/src/a.ts", context)) throw new Error("unexpected");
 * if (!await matchPath("/etc/**", "/work/../etc/passwd", context)) throw new Error("unexpected");
 * ```
 */
export async function matchPath(
  pattern: string,
  path: string,
  context: PathContext & { directory?: boolean },
): Promise<boolean> {
  const target = _toPosix(resolve(context.cwd, path));
  let glob: string;
  if (pattern.startsWith("~/")) {
    if (!context.home) return false;
    glob = posix.join(_escapeGlob(_toPosix(context.home)), pattern.slice(2));
  } else if (isAbsolute(pattern)) glob = _toPosix(pattern);
  else glob = posix.join(_escapeGlob(_toPosix(resolve(context.cwd))), pattern);
  const match = (await loadPicomatch())(glob, { dot: true });
  return match(target) || (!!context.directory && match(`${target}/`));
}

/**
 * Whether a URL matches a `fetch` rule's pattern: `domain:example.com` matches that host and
 * its subdomains (`domain:*.example.com` only the subdomains), both sides normalized as URLs
 * name hosts (see {@link normalHost}: case, a trailing dot, IDN as punycode, IPv4 in any form,
 * IPv6 in brackets; the host after any `user@`); an IP address matches only itself. Any other
 * pattern is a {@link wildcard} over the whole normalized URL (`new URL(url).href`).
 *
 * @example
 * ```ts
 * import { matchUrl } from "./match.ts";
 * if (!matchUrl("domain:example.com", "https://docs.example.com/a")) throw new Error("unexpected");
 * if (matchUrl("domain:example.com", "https://example.com.evil.io/")) throw new Error("unexpected");
 * if (!matchUrl("domain:127.0.0.1", "http://2130706433:8080/")) throw new Error("unexpected");
 * if (!matchUrl("domain:bücher.de", "https://XN--BCHER-KVA.DE./")) throw new Error("unexpected");
 * if (!matchUrl("https://example.com/*", "HTTPS://EXAMPLE.COM/x")) throw new Error("unexpected");
 * ```
 */
export function matchUrl(pattern: string, url: string): boolean {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!pattern.startsWith("domain:")) return wildcard(pattern).test(parsed?.href ?? url);
  if (!parsed) return false;
  const host = _unmapped(parsed.hostname.replace(/\.$/, ""));
  const domain = normalHost(pattern.slice(7));
  if (!domain || !host) return false;
  if (domain.includes("*")) return wildcard(domain).test(host);
  if (_isAddress(host) || _isAddress(domain)) return host === domain;
  return host === domain || host.endsWith(`.${domain}`);
}

/**
 * A host as a URL names it, or undefined when the text is not a host alone: lower case, IDN
 * labels as punycode (`bücher.de` → `xn--bcher-kva.de`), IPv4 in dotted decimal
 * (`2130706433`, `0x7f.1` → `127.0.0.1`), IPv6 in brackets and shortest form (`::1` →
 * `[::1]`), without a trailing dot. `*` is kept as a label's wildcard.
 *
 * @example
 * ```ts
 * import { normalHost } from "./match.ts";
 * if (normalHost("0x7f.1") !== "127.0.0.1" || normalHost("::1") !== "[::1]") {
 *   throw new Error("unexpected");
 * }
 * if (normalHost("Example.COM.") !== "example.com" || normalHost("a.com/x") !== undefined) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function normalHost(text: string): string | undefined {
  let host = text.trim();
  if (!host || /[/?#@\\\s]/.test(host)) return undefined;
  if (host.includes(":") && !host.startsWith("[")) host = `[${host}]`;
  try {
    const url = new URL(`http://${host}/`);
    if (url.port || !url.hostname) return undefined;
    return _unmapped(url.hostname.replace(/\.$/, "")) || undefined;
  } catch {
    return undefined;
  }
}

/** An IPv4 address written as IPv6 (`[::ffff:127.0.0.1]`, `[::ffff:7f00:1]`) is that IPv4. */
function _unmapped(host: string): string {
  const mapped = /^\[(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/i.exec(
    host,
  );
  if (!mapped) return host;
  const [high, low] = [parseInt(mapped[1], 16), parseInt(mapped[2], 16)];
  return [high >> 8, high & 255, low >> 8, low & 255].join(".");
}

function _isAddress(host: string): boolean {
  return host.startsWith("[") || /^\d+\.\d+\.\d+\.\d+$/.test(host);
}
