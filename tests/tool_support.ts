/** Helpers shared by the tool tests. */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { runToolCall } from "../lib/tool_runner.ts";
import type { Tool, ToolOutput } from "../mod.ts";
import { toolRegistry } from "../lib/tool.ts";

/** Creates a temporary directory holding `files` (path → content) and gives its real path. */
export async function tree(files: Record<string, string | Uint8Array>): Promise<string> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "tool_test_" }));
  for (const [path, content] of Object.entries(files)) {
    await Deno.mkdir(dirname(join(root, path)), { recursive: true });
    if (typeof content === "string") await Deno.writeTextFile(join(root, path), content);
    else await Deno.writeFile(join(root, path), content);
  }
  return root;
}

/** Calls a tool's `execute` directly and gives its full answer. */
export async function execute<Input>(
  tool: Tool<Input>,
  input: Input,
  cwd: string,
): Promise<ToolOutput> {
  const result = await tool.execute(input, {
    cwd,
    signal: new AbortController().signal,
    toolCallId: "1",
  });
  assert(typeof result !== "string");
  return result;
}

/** Runs a tool call the way the loop does (schema check, errors as results). */
export async function call(tool: Tool, input: unknown, cwd: string): Promise<[string, boolean]> {
  const result = await runToolCall(
    { type: "tool_call", id: "1", name: tool.name, input },
    toolRegistry([tool]),
    { cwd, signal: new AbortController().signal },
  );
  return [result.output, result.isError];
}
