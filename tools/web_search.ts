/**
 * The `web_search` tool: searches the web through the Tavily or Brave Search API and lists the
 * results' titles, URLs and snippets.
 *
 * @module
 */

import { z } from "zod";
import { defineTool, type Tool } from "../lib/tool.ts";
import { counted } from "./counted.ts";
import { htmlToText } from "./html.ts";

/** The search APIs the tool speaks. */
export type WebSearchProvider = "tavily" | "brave";

/** Options of {@link createWebSearchTool}. */
export interface WebSearchToolOptions {
  /** Which search API to call. */
  provider: WebSearchProvider;
  /** The API key. */
  apiKey: string;
  /** The API root (default `https://api.tavily.com` or `https://api.search.brave.com`). */
  baseURL?: string;
  /** The fetch function (default the global `fetch`). */
  fetch?: typeof fetch;
  /** How many results a search gives unless the call asks otherwise (default 5). */
  maxResults?: number;
  /** How long a search may take, in milliseconds (default 30,000). */
  timeoutMs?: number;
}

/** The input of the `web_search` tool. */
export interface WebSearchInput {
  /** What to search for. */
  query: string;
  /** How many results to give. */
  max_results?: number;
}

/** One search result. */
interface _Result {
  title: string;
  url: string;
  snippet: string;
}

const _PROVIDERS = {
  tavily: { name: "Tavily", keyVar: "TAVILY_API_KEY", baseURL: "https://api.tavily.com" },
  brave: { name: "Brave Search", keyVar: "BRAVE_API_KEY", baseURL: "https://api.search.brave.com" },
} as const;

/** Both APIs allow at most 20 results per request. */
const _MAX_RESULTS = 20;

/**
 * Creates the `web_search` tool for the Tavily or Brave Search API.
 *
 * Tavily: `POST {baseURL}/search` with `{ query, max_results, search_depth: "basic" }` and
 * `Authorization: Bearer <key>`. Brave: `GET {baseURL}/res/v1/web/search?q=…&count=…` with
 * `X-Subscription-Token: <key>`.
 *
 * @example
 * ```ts
 * import { createWebSearchTool } from "./web_search.ts";
 * const search = createWebSearchTool({
 *   provider: "tavily",
 *   apiKey: "tvly-test",
 *   fetch: () =>
 *     Promise.resolve(Response.json({
 *       results: [{ title: "Deno", url: "https://deno.com/", content: "A runtime", score: 0.9 }],
 *     })),
 * });
 * const result = await search.execute({ query: "deno" }, {
 *   cwd: ".",
 *   signal: new AbortController().signal,
 *   toolCallId: "1",
 * });
 * if (typeof result === "string" || !result.output.startsWith("1. Deno\n   https://deno.com/")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function createWebSearchTool(options: WebSearchToolOptions): Tool<WebSearchInput> {
  const provider = _PROVIDERS[options.provider];
  if (!provider) {
    throw new TypeError(`Unknown search provider "${options.provider}": use "tavily" or "brave"`);
  }
  if (!options.apiKey) {
    throw new TypeError(`No API key for ${provider.name}: set ${provider.keyVar}`);
  }
  const base = (options.baseURL ?? provider.baseURL).replace(/\/+$/, "");
  const defaultResults = options.maxResults ?? 5;
  const timeoutMs = options.timeoutMs ?? 30_000;
  return defineTool({
    name: "web_search",
    description: "Searches the web and returns a numbered list of results, each with its " +
      "title, URL and a snippet. Use it for current information, documentation or anything " +
      "you do not know or that may have changed, then read the most promising pages in full " +
      "with the fetch tool. Write queries as a person would type them into a search engine; " +
      "search again with other words when the results miss.",
    parameters: z.object({
      query: z.string().trim().min(1).describe("What to search for, e.g. `deno 2 node:sqlite`."),
      max_results: z.number().int().min(1).max(_MAX_RESULTS).optional().describe(
        `How many results to give (default ${defaultResults}, at most ${_MAX_RESULTS}).`,
      ),
    }),
    capabilities: ["net"],
    timeoutMs: timeoutMs + 5_000,
    execute: async ({ query, max_results }, ctx) => {
      const count = max_results ?? defaultResults;
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(), timeoutMs);
      const signal = AbortSignal.any([ctx.signal, timeout.signal]);
      const fetchFn = options.fetch ?? fetch;
      let found: { answer?: string; results: _Result[] };
      try {
        found = options.provider === "tavily"
          ? await _tavily(fetchFn, base, options.apiKey, query, count, signal)
          : await _brave(fetchFn, base, options.apiKey, query, count, signal);
      } catch (error) {
        if (ctx.signal.aborted) throw error;
        if (timeout.signal.aborted) {
          throw new Error(
            `${provider.name} did not answer within ${timeoutMs / 1000} s: try again later.`,
          );
        }
        throw error;
      } finally {
        clearTimeout(timer);
      }
      const results = found.results.slice(0, count);
      const lines = results.map(({ title, url, snippet }, i) =>
        `${i + 1}. ${title || "(untitled)"}\n   ${url}${snippet ? `\n   ${snippet}` : ""}`
      );
      const answer = found.answer ? `Answer: ${found.answer}\n\n` : "";
      return {
        output: results.length
          ? `${answer}${lines.join("\n\n")}`
          : `${answer}No results for "${query}". Try other words.`,
        display: `Searched "${query}": ${counted(results.length, "result")} (${provider.name})`,
        metadata: {
          provider: options.provider,
          results: results.map(({ title, url }) => ({ title, url })),
        },
      };
    },
  });
}

/**
 * The `web_search` tool configured from environment variables: Tavily when `TAVILY_API_KEY` is
 * set, else Brave Search when `BRAVE_API_KEY` is set, else `undefined`. `TAVILY_BASE_URL` and
 * `BRAVE_BASE_URL` override the API roots (for proxies and tests).
 *
 * @example
 * ```ts
 * import { webSearchFromEnv } from "./web_search.ts";
 * const env: Record<string, string> = { BRAVE_API_KEY: "b", TAVILY_API_KEY: "t" };
 * const tool = webSearchFromEnv((name) => env[name]);
 * if (tool?.name !== "web_search") throw new Error("unexpected");
 * if (webSearchFromEnv(() => undefined) !== undefined) throw new Error("unexpected");
 * ```
 */
export function webSearchFromEnv(
  env: (name: string) => string | undefined,
): Tool<WebSearchInput> | undefined {
  for (const provider of ["tavily", "brave"] as const) {
    const apiKey = env(_PROVIDERS[provider].keyVar)?.trim();
    if (!apiKey) continue;
    const baseURL = env(`${provider.toUpperCase()}_BASE_URL`)?.trim() || undefined;
    return createWebSearchTool({ provider, apiKey, baseURL });
  }
  return undefined;
}

async function _tavily(
  fetchFn: typeof fetch,
  base: string,
  apiKey: string,
  query: string,
  count: number,
  signal: AbortSignal,
): Promise<{ answer?: string; results: _Result[] }> {
  const body = await _request(fetchFn, "tavily", `${base}/search`, {
    method: "POST",
    signal,
    headers: { "authorization": `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ query, max_results: count, search_depth: "basic" }),
  }) as { answer?: unknown; results?: unknown };
  const results = Array.isArray(body.results) ? body.results : [];
  return {
    answer: typeof body.answer === "string" && body.answer ? body.answer : undefined,
    results: await _results(results, "content"),
  };
}

async function _brave(
  fetchFn: typeof fetch,
  base: string,
  apiKey: string,
  query: string,
  count: number,
  signal: AbortSignal,
): Promise<{ results: _Result[] }> {
  const url = new URL(`${base}/res/v1/web/search`);
  url.searchParams.set("q", query);
  url.searchParams.set("count", String(count));
  const body = await _request(fetchFn, "brave", url.href, {
    signal,
    headers: { "x-subscription-token": apiKey, "accept": "application/json" },
  }) as { web?: { results?: unknown } };
  const results = Array.isArray(body.web?.results) ? body.web.results : [];
  return {
    // Brave marks the matched words with <strong> and escapes entities.
    results: await _results(results, "description"),
  };
}

/** Sends the request and gives the JSON body, or throws an error that says what to do. */
async function _request(
  fetchFn: typeof fetch,
  provider: WebSearchProvider,
  url: string,
  init: RequestInit,
): Promise<unknown> {
  const { name, keyVar } = _PROVIDERS[provider];
  let response: Response;
  try {
    response = await fetchFn(url, init);
  } catch (error) {
    if (init.signal?.aborted) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`Could not reach ${name}: ${reason}. Try again later.`);
  }
  if (!response.ok) {
    const detail = (await response.text().catch(() => "")).trim().slice(0, 300);
    const said = detail ? `: ${detail}` : "";
    if (response.status === 401 || response.status === 403) {
      throw new Error(
        `${name} refused the API key (HTTP ${response.status})${said}. Check ${keyVar}.`,
      );
    }
    if (response.status === 429) {
      const after = response.headers.get("retry-after");
      throw new Error(
        `${name} rate limited the search (HTTP 429)${
          after ? `; retry after ${after} s` : ""
        }. Wait before searching again.`,
      );
    }
    throw new Error(`${name} answered HTTP ${response.status}${said}.`);
  }
  try {
    return await response.json();
  } catch {
    throw new Error(`${name} sent a response that is not JSON. Try again later.`);
  }
}

/** The results of either API, their title and snippet fields reduced to plain text. */
function _results(items: Record<string, unknown>[], snippet: string): Promise<_Result[]> {
  return Promise.all(items.map(async (item) => ({
    title: await _text(item.title),
    url: String(item.url ?? ""),
    snippet: await _text(item[snippet]),
  })));
}

/** Plain text from an API field that may hold HTML tags and entities. */
function _text(value: unknown): Promise<string> {
  return typeof value === "string" ? htmlToText(value) : Promise.resolve("");
}
