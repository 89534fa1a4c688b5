/**
 * The tools a run offers the model, read again before each model request: a list can change
 * during a run (an MCP server that says its tools changed), and the next request offers it as
 * it then stands. The registry and definitions are made again only when the list changed.
 *
 * @module
 */

import type { ToolDefinition } from "../model.ts";
import { type Tool, toolDefinitions, toolRegistry } from "../tool.ts";

/** The tools offered for one model request. */
export interface OfferedTools {
  /** The tools, by name. */
  registry: ReadonlyMap<string, Tool>;
  /** What the model is told of them. */
  definitions: ToolDefinition[];
}

/**
 * Reads `source` (an array, which its owner may change in place, or a function) each time it is
 * called, and gives its tools, made again only when the list changed. Throws a `TypeError` when
 * two tools share a name.
 *
 * @example
 * ```ts
 * import { offeredTools } from "./offered_tools.ts";
 * import { defineTool } from "../tool.ts";
 * import { z } from "zod";
 * const tool = (name: string) =>
 *   defineTool({ name, description: name, parameters: z.object({}), execute: () => name });
 * const live = [tool("a")];
 * const read = offeredTools(live);
 * const before = read();
 * if (read() !== before) throw new Error("unchanged: the same");
 * live.push(tool("b"));
 * if (read().definitions.map((d) => d.name).join() !== "a,b") throw new Error("changed");
 * ```
 */
export function offeredTools(
  source: readonly Tool[] | (() => readonly Tool[]) | undefined,
): () => OfferedTools {
  let seen: readonly Tool[] = [];
  let offered: OfferedTools | undefined;
  return () => {
    const now = (typeof source === "function" ? source() : source) ?? [];
    if (offered && _same(now, seen)) return offered;
    const registry = toolRegistry(now);
    offered = { registry, definitions: toolDefinitions(registry.values()) };
    seen = [...now];
    return offered;
  };
}

function _same(a: readonly Tool[], b: readonly Tool[]): boolean {
  return a.length === b.length && a.every((tool, i) => tool === b[i]);
}
