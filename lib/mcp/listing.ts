/**
 * Listing a server's tools without letting the server decide how long it takes or how much it
 * holds: every page within one deadline, at most so many tools and pages, and waiting for a
 * listing no longer than a call may. Loaded on demand with the MCP SDK.
 *
 * @module
 */

import type { Client } from "@modelcontextprotocol/sdk/client";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types";
import { _REQUEST_TIMEOUT, _seconds } from "./connection.ts";

/** How many times a listing lists again when the server says its tools changed meanwhile. */
export const _RELISTS = 3;
/** The least time between the starts of two rounds of listing. */
export const _RELIST_INTERVAL_MS = 250;
/** The most pages one round of listing reads. */
export const _MAX_PAGES = 100;

/** What {@link _listTools} needs. */
export interface _ListOptions {
  /** `MCP server "<name>"`, for the warnings. */
  label: string;
  /** When the listing must be done (`performance.now()` time). */
  deadline: number;
  /** The timeout the deadline comes from, for the error message. */
  timeoutMs: number;
  /** The most tools kept; those past it are left out, with a warning. */
  maxTools: number;
  /** Hears that the list was cut. */
  warn(message: string): void;
}

/**
 * One round of listing: every page, until the list ends, holds `maxTools` or has had
 * `_MAX_PAGES` pages, without the tools that only run as tasks (a plain `tools/call` cannot call
 * them). Throws when the deadline passes first.
 */
export async function _listTools(client: Client, options: _ListOptions): Promise<McpTool[]> {
  const { label, maxTools } = options;
  const tools: McpTool[] = [];
  let cursor: string | undefined;
  for (let pages = 0;; pages++) {
    if (pages === _MAX_PAGES) {
      options.warn(
        `${label}'s tool list did not end after ${_MAX_PAGES} pages; ` +
          `it offers the tools of those pages`,
      );
      return tools;
    }
    const remaining = options.deadline - performance.now();
    let page;
    try {
      if (remaining <= 0) throw Object.assign(new Error("timed out"), { code: _REQUEST_TIMEOUT });
      page = await client.listTools(cursor ? { cursor } : undefined, { timeout: remaining });
    } catch (error) {
      if ((error as { code?: unknown }).code !== _REQUEST_TIMEOUT) throw error;
      const within = _seconds(options.timeoutMs);
      throw new Error(
        pages === 0
          ? `it did not answer within ${within}`
          : `its tool list did not end within ${within}`,
        { cause: error },
      );
    }
    for (const tool of page.tools) {
      if (tool.execution?.taskSupport === "required") continue;
      if (tools.length === maxTools) {
        options.warn(
          `${label} offers more than ${maxTools} tools; only its first ${maxTools} are offered`,
        );
        return tools;
      }
      tools.push(tool);
    }
    cursor = page.nextCursor;
    if (!cursor) return tools;
  }
}

/** Waits for `promise` to settle, `signal` to abort or `ms` to pass, whichever comes first. */
export async function _until(
  promise: Promise<unknown>,
  signal: AbortSignal,
  ms: number,
): Promise<void> {
  if (signal.aborted || ms <= 0) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      promise.catch(() => {}),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ms);
        onAbort = () => resolve();
        signal.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}
