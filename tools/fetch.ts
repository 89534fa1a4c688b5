/**
 * The `fetch` tool: GETs a web page or API over http(s) and gives its content as text. HTML
 * becomes markdown, JSON is pretty-printed, text stays as is; other types are refused.
 *
 * @module
 */

import { z } from "zod";
import { defineTool, type Tool, type ToolOutput } from "../lib/tool.ts";
import { truncateOutput } from "../lib/tool_runner.ts";
import { counted } from "./counted.ts";
import { htmlToMarkdown, htmlToText } from "./html.ts";

/** Options of {@link createFetchTool}. */
export interface FetchToolOptions {
  /** The fetch function (default the global `fetch`); tests and proxies swap it. */
  fetch?: typeof fetch;
  /** The most body bytes read; the rest is cut (default 5 MB). */
  maxBytes?: number;
  /** How long the request and the body may take, in milliseconds (default 30,000). */
  timeoutMs?: number;
  /** Output longer than this many characters keeps its head and tail (default 40,000). */
  maxOutputChars?: number;
  /** The User-Agent header sent. */
  userAgent?: string;
  /** The most redirects followed (default 10); each hop is checked by the permission rules. */
  maxRedirects?: number;
}

/** The input of the `fetch` tool. */
export interface FetchInput {
  /** The http or https URL to get. */
  url: string;
}

/** The User-Agent sent by default. */
const _USER_AGENT = "Mozilla/5.0 (compatible; x-agent-fetch/0.1; +https://jsr.io/@x/agent)";
/** Elements dropped from HTML besides the converter's own (script, style, head, …). */
const _NOISE = ["NAV", "NOSCRIPT", "SVG", "IFRAME", "TEMPLATE", "CANVAS", "BUTTON", "SELECT"];
/** Types outside text/* that are text all the same. */
const _TEXT_TYPES =
  /^application\/(javascript|ecmascript|x-javascript|xml|yaml|x-yaml|toml|x-sh|sql|graphql|x-ndjson|csv)$/;

/**
 * Creates the `fetch` tool. It GETs an http(s) URL following redirects (each hop checked by the
 * permission rules through the context's `checkUrl` before it is requested; a refused hop ends
 * the call with the refusal), with a timeout and a cap on the bytes read, and answers with the final URL, the status and the content: HTML converted
 * to markdown (with the page title, without scripts, styles and navigation), JSON
 * pretty-printed, text as is. A non-2xx status gives an error result with a snippet of the body.
 *
 * @example
 * ```ts
 * import { createFetchTool } from "./fetch.ts";
 * const fetchTool = createFetchTool({
 *   fetch: () =>
 *     Promise.resolve(
 *       new Response("<title>Hi</title><h1>Hello</h1>", {
 *         headers: { "content-type": "text/html" },
 *       }),
 *     ),
 * });
 * const input = fetchTool.parse!({ url: "https://example.com/" });
 * if (!input.success) throw new Error("unexpected");
 * const result = await fetchTool.execute(input.data, {
 *   cwd: ".",
 *   signal: new AbortController().signal,
 *   toolCallId: "1",
 * });
 * if (typeof result === "string" || !result.output.includes("# Hello")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function createFetchTool(options: FetchToolOptions = {}): Tool<FetchInput> {
  const maxBytes = options.maxBytes ?? 5_000_000;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxOutputChars = options.maxOutputChars ?? 40_000;
  return defineTool({
    name: "fetch",
    description: "Gets a web page or an HTTP API response by URL (GET, http or https only, " +
      "redirects followed) and returns it as text: HTML pages converted to markdown with " +
      "their title, JSON pretty-printed, plain text as is. Use it to read documentation, " +
      "articles, READMEs or API responses when you know the URL (use web_search to find " +
      "one). Images, PDFs and other binary files are refused. Long pages keep only their " +
      `beginning and end; bodies past ${_size(maxBytes)} are cut. Sends no cookies or ` +
      "credentials, so pages behind a login are not reachable.",
    parameters: z.object({
      url: z.string().min(1).describe(
        "The absolute URL to get, starting with http:// or https://.",
      ),
    }),
    capabilities: ["net"],
    timeoutMs: timeoutMs + 5_000,
    execute: async ({ url }, ctx) => {
      const target = _parseUrl(url);
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(), timeoutMs);
      const signal = AbortSignal.any([ctx.signal, timeout.signal]);
      try {
        return await _get(target, signal, options.fetch ?? fetch, {
          maxBytes,
          maxOutputChars,
          userAgent: options.userAgent ?? _USER_AGENT,
          maxRedirects: options.maxRedirects ?? 10,
          checkUrl: ctx.checkUrl,
        });
      } catch (error) {
        if (ctx.signal.aborted) throw error;
        if (timeout.signal.aborted) {
          throw new Error(
            `Timed out after ${timeoutMs / 1000} s getting ${target.href}: the server did not ` +
              `answer in time. Try again later or try another URL.`,
          );
        }
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
  });
}

interface _GetOptions {
  maxBytes: number;
  maxOutputChars: number;
  userAgent: string;
  maxRedirects: number;
  checkUrl?: (url: string) => string | undefined;
}

async function _get(
  url: URL,
  signal: AbortSignal,
  fetchFn: typeof fetch,
  options: _GetOptions,
): Promise<ToolOutput> {
  const { response, finalUrl } = await _follow(url, signal, fetchFn, options);
  const header = response.headers.get("content-type") ?? "";
  const type = header.split(";")[0].trim().toLowerCase();
  const status = `${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
  const from = finalUrl === url.href ? "" : ` (redirected from ${url.href})`;
  const metadata: Record<string, unknown> = {
    url: url.href,
    finalUrl,
    status: response.status,
    contentType: type || null,
  };

  if (!response.ok) {
    const { bytes } = await _readCapped(response, 4_096);
    const body = await _render(_decode(bytes, header), type);
    const snippet = body.text.length > 500 ? `${body.text.slice(0, 500)}…` : body.text;
    return {
      output: `Error: HTTP ${status} from ${finalUrl}${from}${snippet ? `\n\n${snippet}` : ""}`,
      isError: true,
      display: `GET ${finalUrl} → ${status}`,
      metadata,
    };
  }

  const kind = _kind(type);
  if (kind === "binary") {
    await response.body?.cancel().catch(() => {});
    throw new Error(
      `${finalUrl} is ${type}, not text: this tool reads only HTML, JSON and text. ` +
        `Look for an HTML or text version of this resource.`,
    );
  }
  const { bytes, truncated } = await _readCapped(response, options.maxBytes);
  if (kind === "unknown" && bytes.subarray(0, 4_096).includes(0)) {
    throw new Error(
      `${finalUrl} has no content type and looks binary: this tool reads only HTML, JSON ` +
        `and text.`,
    );
  }
  const body = await _render(_decode(bytes, header), type);
  const lines = [`URL: ${finalUrl}${from}`, `Status: ${status}`];
  if (type) lines.push(`Content-Type: ${type}`);
  if (body.title) lines.push(`Title: ${body.title}`);
  if (truncated) {
    lines.push(
      `Note: the body is larger than ${_size(options.maxBytes)}; only its first ` +
        `${_size(options.maxBytes)} were read and the rest was cut.`,
    );
  }
  Object.assign(metadata, { bytes: bytes.length, truncated, title: body.title });
  return {
    output: truncateOutput(`${lines.join("\n")}\n\n${body.text}`, options.maxOutputChars),
    display: `GET ${finalUrl} → ${status}, ${type || "no type"}, ${_size(bytes.length)}` +
      (truncated ? " (cut)" : ""),
    metadata,
  };
}

/** The statuses whose `Location` is followed. */
const _REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * GETs `url`, following redirects one hop at a time: each hop must be http(s) and pass the
 * permission rules' `checkUrl` before it is requested; at most `maxRedirects` of them. Gives
 * the last response and the URL it answered.
 */
async function _follow(
  url: URL,
  signal: AbortSignal,
  fetchFn: typeof fetch,
  options: _GetOptions,
): Promise<{ response: Response; finalUrl: string }> {
  let current = url;
  for (let hops = 0;; hops++) {
    let response: Response;
    try {
      response = await fetchFn(current.href, {
        redirect: "manual",
        signal,
        headers: {
          "user-agent": options.userAgent,
          "accept": "text/html,application/xhtml+xml,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5",
        },
      });
    } catch (error) {
      if (signal.aborted) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      throw new Error(`Could not get ${current.href}: ${reason}. Check the URL and try again.`);
    }
    const location = _REDIRECTS.has(response.status) ? response.headers.get("location") : null;
    if (location === null) return { response, finalUrl: current.href };
    await response.body?.cancel().catch(() => {});
    const from = `${current.href} redirected`;
    if (hops >= options.maxRedirects) {
      throw new Error(
        `${url.href} redirected more than ${options.maxRedirects} times (the last hop was to ` +
          `${location}); not followed further. Fetch the final URL directly if you know it.`,
      );
    }
    let next: URL;
    try {
      next = new URL(location, current);
    } catch {
      throw new Error(`${from} to "${location}", which is not a valid URL; not followed.`);
    }
    if (next.protocol !== "http:" && next.protocol !== "https:") {
      throw new Error(`${from} to ${next.href}, which is not http or https; not followed.`);
    }
    const refusal = options.checkUrl?.(next.href);
    if (refusal) throw new Error(`${from} to ${next.href}, which was not followed: ${refusal}`);
    current = next;
  }
}

function _parseUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new Error(
      `"${text}" is not a valid URL: give an absolute URL such as https://example.com/page.`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(
      `Only http and https URLs can be fetched, not ${url.protocol.slice(0, -1)}: ` +
        `use the read tool for local files.`,
    );
  }
  return url;
}

/** Reads at most `max` bytes of the body, then stops reading. */
async function _readCapped(
  response: Response,
  max: number,
): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  if (!response.body) return { bytes: new Uint8Array(), truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  let truncated = false;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = max - length;
      chunks.push(value.length > room ? value.subarray(0, room) : value);
      length += Math.min(value.length, room);
      if (value.length >= room) {
        // Either the cap is reached exactly or passed; more bytes after it mean a cut.
        truncated = value.length > room || !(await reader.read()).done;
        break;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return { bytes, truncated };
}

function _kind(type: string): "html" | "json" | "text" | "binary" | "unknown" {
  if (type === "") return "unknown";
  if (type === "text/html" || type === "application/xhtml+xml") return "html";
  if (type === "application/json" || type.endsWith("+json") || type === "text/json") return "json";
  if (type.startsWith("text/") || type.endsWith("+xml") || _TEXT_TYPES.test(type)) return "text";
  return "binary";
}

function _decode(bytes: Uint8Array, contentType: string): string {
  const charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType)?.[1];
  if (charset) {
    try {
      return new TextDecoder(charset).decode(bytes);
    } catch {
      // An unknown charset label: fall back to UTF-8.
    }
  }
  return new TextDecoder().decode(bytes);
}

async function _render(text: string, type: string): Promise<{ text: string; title?: string }> {
  const kind = _kind(type);
  if (kind === "html" || (kind === "unknown" && /^\s*<(!doctype html|html)/i.test(text))) {
    const titleHtml = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(text)?.[1];
    const title = titleHtml === undefined ? undefined : await htmlToText(titleHtml);
    return { text: await htmlToMarkdown(text, _NOISE), title: title || undefined };
  }
  if (kind === "json") {
    try {
      return { text: JSON.stringify(JSON.parse(text), null, 2) };
    } catch {
      return { text };
    }
  }
  return { text };
}

function _size(bytes: number): string {
  if (bytes >= 1_000_000) return `${+(bytes / 1_000_000).toFixed(1)} MB`;
  if (bytes >= 1_000) return `${+(bytes / 1_000).toFixed(1)} kB`;
  return counted(bytes, "byte");
}
