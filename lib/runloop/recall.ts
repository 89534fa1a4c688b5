/**
 * The `recall` tool and the memories offered at the start of a run: what long-term memory
 * holds of earlier work, with anchors that point back to exactly where.
 *
 * @module
 */

import { z } from "zod";
import type { Message } from "../messages.ts";
import type { MemoryStore } from "../memory/memory.ts";
import type { Anchor, RetrievedSegment, Segment } from "../memory/types.ts";
import { defineTool, type Tool } from "../tool.ts";

/** The input of the `recall` tool. */
export interface RecallInput {
  /** What to search for. */
  query?: string;
  /** How many results (default 8). */
  limit?: number;
  /** An anchor from an earlier result (`<run loop id>#<segment>`), to read around it. */
  around?: string;
}

/**
 * A segment's anchor as one word: `<run loop id>#<segment>`.
 *
 * @example
 * ```ts
 * import { anchorText } from "./recall.ts";
 * const text = anchorText({ runLoopId: "abc", iteration: 1, segment: 7, type: "response", timestamp: "" });
 * if (text !== "abc#7") throw new Error(text);
 * ```
 */
export function anchorText(anchor: Anchor): string {
  return `${anchor.runLoopId}#${anchor.segment}`;
}

/** The tool's input schema, made when a first recall tool is (a run without memory makes none). */
let _recallInput: z.ZodType<RecallInput> | undefined;

function _input(): z.ZodType<RecallInput> {
  return _recallInput ??= z.object({
    query: z.string().min(1).optional().describe("Words to search for"),
    limit: z.number().int().min(1).max(50).optional().describe("How many results (default 8)"),
    around: z.string().optional().describe("An anchor from an earlier result, to read around it"),
  });
}

/**
 * Creates the `recall` tool over a memory.
 *
 * @example
 * ```ts
 * import { createRecallTool } from "./recall.ts";
 * const tool = createRecallTool({} as never);
 * if (tool.name !== "recall" || tool.capabilities.length !== 0) throw new Error("unexpected");
 * ```
 */
export function createRecallTool(memory: MemoryStore): Tool<RecallInput> {
  return defineTool({
    name: "recall",
    description: "Search the long-term memory of earlier work in this project: past goals, " +
      "what was found, the commands run and their output, the answers given. Give a query " +
      "to search; give `around` (an anchor like `<id>#<n>` from a result) to read what came " +
      "before and after that point.",
    parameters: _input(),
    capabilities: [],
    async execute({ query, limit, around }) {
      if (around) {
        const [id, segment] = around.split("#");
        const loop = await memory.runLoop(id);
        if (!loop) throw new Error(`No run loop "${id}" in memory; use an anchor from a result`);
        // expand() finds the segment by run loop and position; the rest is informative.
        const anchor: Anchor = {
          runLoopId: loop.id,
          iteration: 0,
          segment: Number(segment) || 0,
          type: "user",
          timestamp: loop.createdAt,
        };
        const { segments } = await memory.expand(anchor, 4);
        return `Run loop ${loop.id} (${loop.status}): ${loop.goal}\n\n${
          segments.map(_line).join("\n")
        }`;
      }
      if (!query) throw new Error("Give a query to search, or an anchor in `around` to read");
      const results = await memory.retrieve(query, { limit: limit ?? 8 });
      if (results.length === 0) return `Nothing in memory matches "${query}".`;
      return results.map(_line).join("\n");
    },
  });
}

/**
 * A message offering the memories that look relevant to `text`, or nothing when none do.
 *
 * @example
 * ```ts
 * import { memoryContext } from "./recall.ts";
 * const memory = { retrieve: () => Promise.resolve([]) } as never;
 * if (await memoryContext(memory, "anything") !== undefined) throw new Error("unexpected");
 * ```
 */
export async function memoryContext(
  memory: MemoryStore,
  text: string,
  options: { limit?: number; minRelevance?: number; exclude?: string } = {},
): Promise<Message | undefined> {
  // Best first, so those under the relevance asked for are the last: the limit is read, no
  // more. (A store that does not leave out the run loop `exclude` names has it left out here.)
  const limit = options.limit ?? 5;
  if (limit < 1) return undefined;
  const found = (await memory.retrieve(text, { limit, excludeRunLoop: options.exclude }))
    .filter((segment) => segment.relevance >= (options.minRelevance ?? 0.05))
    .filter((segment) => segment.anchor.runLoopId !== options.exclude);
  if (found.length === 0) return undefined;
  return {
    role: "user",
    content: `[Memories from earlier work that may help]\n${found.map(_line).join("\n")}\n` +
      `[Use the recall tool to search more, or to read around an anchor.]`,
  };
}

function _line(segment: Segment | RetrievedSegment): string {
  const { anchor } = segment;
  const text = segment.text.length > 600 ? `${segment.text.slice(0, 599)}…` : segment.text;
  return `[${anchorText(anchor)} ${anchor.type} ${anchor.timestamp.slice(0, 16)}] ${
    text.replace(/\s+/g, " ")
  }`;
}
