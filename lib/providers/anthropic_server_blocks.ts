/**
 * Blocks the provider makes and runs itself: a server tool's use and its result (web search,
 * web fetch, code execution, tool search, MCP, …), and any block type added later. Such a
 * block is work done, not nothing: it is kept as a text part without text whose provider data
 * holds the block as it came (`extra.block`), with the origin `anthropic:<provider>`, and the
 * next request gives it back unchanged to that provider, as the API requires. A conversation
 * moved to another provider leaves it out.
 *
 * @module
 */

import type { ContentBlockParam } from "@anthropic-ai/sdk/resources/messages";
import type { AssistantPart } from "../messages.ts";
import type { ModelEvent } from "../model.ts";

/**
 * The origin of the provider data the Anthropic provider named `provider` makes.
 *
 * @example
 * ```ts
 * import { anthropicOrigin } from "./anthropic_server_blocks.ts";
 * if (anthropicOrigin("anthropic") !== "anthropic:anthropic") throw new Error("unexpected");
 * ```
 */
export function anthropicOrigin(provider: string): string {
  return `anthropic:${provider}`;
}

/**
 * The model event that records a finished server block: the end of a text block without text,
 * carrying the block.
 *
 * @example
 * ```ts
 * import { serverBlockEvent } from "./anthropic_server_blocks.ts";
 * const event = serverBlockEvent({ type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] }, "anthropic:anthropic");
 * if (event.type !== "text_end" || event.extra?.block === undefined) throw new Error("unexpected");
 * ```
 */
export function serverBlockEvent(
  block: Record<string, unknown>,
  origin: string,
): Extract<ModelEvent, { type: "text_end" }> {
  return { type: "text_end", origin, extra: { block } };
}

/**
 * The server block a part holds for `origin`, as a fresh object to send (a cache breakpoint
 * set on it does not reach the part); none for any other part, or a part of another origin.
 *
 * @example
 * ```ts
 * import { serverBlockOf } from "./anthropic_server_blocks.ts";
 * const block = { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "deno" } };
 * const part = { type: "text" as const, text: "", origin: "anthropic:anthropic", extra: { block } };
 * if (serverBlockOf(part, "anthropic:anthropic")?.type !== "server_tool_use") throw new Error("unexpected");
 * if (serverBlockOf(part, "anthropic:gateway") !== undefined) throw new Error("unexpected");
 * ```
 */
export function serverBlockOf(
  part: AssistantPart,
  origin: string,
): ContentBlockParam | undefined {
  if (part.type !== "text" || part.origin !== origin) return undefined;
  const block = part.extra?.block as Record<string, unknown> | undefined;
  if (block === null || typeof block !== "object" || typeof block.type !== "string") {
    return undefined;
  }
  return { ...block } as unknown as ContentBlockParam;
}
