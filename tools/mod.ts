/**
 * The built-in tools, each a factory whose file system can be swapped in tests: `read`,
 * `write`, `edit`, `ls`, `glob`, `grep`, `bash`, `fetch`, `web_search` (when a search API key is
 * set) and `todo`. {@link builtinTools} makes the whole set; each `create…Tool` makes one.
 *
 * @example
 * ```ts
 * import { Agent } from "@x/agent";
 * import { builtinTools, createReadTool } from "@x/agent/tools";
 * import { scriptedModel } from "@x/agent/testing";
 *
 * const names = builtinTools({ env: () => undefined }).map((tool) => tool.name);
 * if (!names.includes("read") || names.includes("web_search")) throw new Error("unexpected");
 *
 * const model = scriptedModel([
 *   { toolCalls: [{ name: "read", input: { path: "deno.json" } }] },
 *   { text: "Read it." },
 * ]);
 * const agent = new Agent({ model, tools: [createReadTool()] });
 * const result = await agent.run("What is in deno.json?");
 * if (result.toolCalls !== 1) throw new Error("unexpected");
 * ```
 *
 * @module
 */

import type { Tool } from "../lib/tool.ts";
import { type BashToolOptions, createBashTool } from "./bash.ts";
import { createEditTool } from "./edit.ts";
import { createFetchTool } from "./fetch.ts";
import type { ToolFs } from "./fs.ts";
import { createGlobTool } from "./glob.ts";
import { createGrepTool } from "./grep.ts";
import { createLsTool } from "./ls.ts";
import { createReadTool } from "./read.ts";
import { createTodoTool, type Todo } from "./todo.ts";
import { webSearchFromEnv } from "./web_search.ts";
import { createWriteTool } from "./write.ts";

export { CAPABILITIES } from "../lib/tool.ts";
export {
  type BashExitStatus,
  type BashInput,
  type BashSandbox,
  type BashTerminal,
  type BashTerminalHandle,
  type BashTerminalSpec,
  type BashToolOptions,
  createBashTool,
} from "./bash.ts";
export { createEditTool, type EditInput } from "./edit.ts";
export { createFetchTool, type FetchInput, type FetchToolOptions } from "./fetch.ts";
export {
  denoFs,
  type ToolDirEntry,
  type ToolFile,
  type ToolFileInfo,
  type ToolFs,
  type ToolOpenOptions,
} from "./fs.ts";
export { createGlobTool, type GlobInput, type GlobToolOptions } from "./glob.ts";
export { createGrepTool, type GrepInput, type GrepToolOptions } from "./grep.ts";
export { createLsTool, type LsInput, type LsToolOptions } from "./ls.ts";
export { createReadTool, type ReadInput, type ReadToolOptions } from "./read.ts";
export {
  createTodoTool,
  type Todo,
  type TodoInput,
  type TodoTool,
  type TodoToolOptions,
} from "./todo.ts";
export {
  createWebSearchTool,
  webSearchFromEnv,
  type WebSearchInput,
  type WebSearchProvider,
  type WebSearchToolOptions,
} from "./web_search.ts";
export { createWriteTool, type WriteInput, type WriteToolOptions } from "./write.ts";

/** Options of {@link builtinTools}. */
export interface BuiltinToolOptions {
  /** Directories files may be changed in (default the working directory of each call). */
  roots?: readonly string[];
  /** The file system of the file tools (default Deno's). */
  fs?: ToolFs;
  /** Reads environment variables, for search API keys (default none). */
  env?: (name: string) => string | undefined;
  /** Called when the model updates its task list. */
  onTodo?: (todos: Todo[]) => void;
  /** The options of the `bash` tool, e.g. its sandbox. */
  bash?: BashToolOptions;
}

/**
 * A fresh set of the built-in tools (the task list starts empty).
 *
 * @example
 * ```ts
 * import { builtinTools } from "./mod.ts";
 * const tools = builtinTools({ env: (name) => name === "TAVILY_API_KEY" ? "tvly-test" : undefined });
 * if (!tools.some((tool) => tool.name === "web_search")) throw new Error("unexpected");
 * ```
 */
export function builtinTools(options: BuiltinToolOptions = {}): Tool[] {
  const { fs, roots } = options;
  const search = options.env ? webSearchFromEnv(options.env) : undefined;
  return [
    createReadTool({ fs }),
    createWriteTool({ fs, roots }),
    createEditTool({ fs, roots }),
    createLsTool({ fs }),
    createGlobTool({ fs }),
    createGrepTool({ fs }),
    createBashTool(options.bash),
    createFetchTool(),
    ...(search ? [search] : []),
    createTodoTool({ onChange: options.onTodo }),
  ] as Tool[];
}
