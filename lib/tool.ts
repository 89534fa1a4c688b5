/**
 * Tools: what they look like to the loop ({@link Tool}), how to define one with a zod schema
 * ({@link defineTool}), and the registry that refuses duplicate names ({@link toolRegistry}).
 *
 * @module
 */

import { z } from "zod";
import type { Message } from "./messages.ts";
import type { JsonSchema, ToolDefinition } from "./model.ts";

/**
 * What a tool needs from the runtime. Each maps onto a Deno permission: `read` → `--allow-read`,
 * `write` → `--allow-write`, `run` → `--allow-run`, `net` → `--allow-net`, `env` → `--allow-env`.
 */
export type Capability = "read" | "write" | "run" | "net" | "env";

/** Every capability, in a stable order. */
export const CAPABILITIES: readonly Capability[] = ["read", "write", "run", "net", "env"];

/** What a tool gets besides its input. */
export interface ToolContext {
  /** Aborted when the run is cancelled or the call times out. Stop work when it fires. */
  signal: AbortSignal;
  /** The working directory; relative paths are relative to it. */
  cwd: string;
  /** The id of this call. */
  toolCallId: string;
  /**
   * Checks a real path (symlinks resolved) a tool is about to read or change against the
   * permission rules: a refusal message when the rules deny it, undefined when they allow it.
   * File tools call it on what they actually opened; directory walks skip what it refuses.
   * Absent, every path the runtime grants is allowed.
   */
  checkPath?: (path: string, access: "read" | "write") => string | undefined;
  /**
   * Checks a URL a tool is about to reach on its own (the next hop of a redirect) against the
   * permission rules: a refusal message when they deny or ask about it, undefined when they let
   * it through. Absent, every URL the runtime grants is allowed.
   */
  checkUrl?: (url: string) => string | undefined;
  /**
   * The conversation as the model had it in view when it asked for this call: the messages of
   * that request as the model got them (after compaction, which leaves older outputs out and
   * puts a summary in place of older turns, and after the `beforeModelCall` hook), perhaps
   * followed by the answer that made the call. A tool may answer by reference to what the model
   * can still see there (`read`: "unchanged since you read it"); absent, it must assume the
   * model has seen nothing.
   */
  history?: readonly Message[];
}

/** The permission rules' checks a tool gets in its context. */
export type ToolChecks = Pick<ToolContext, "checkPath" | "checkUrl">;

/** A tool's full answer. */
export interface ToolOutput {
  /** What the model sees. */
  output: string;
  /** Whether the call failed. */
  isError?: boolean;
  /** A short form for people (the CLI shows it instead of the output). */
  display?: string;
  /** Structured data for the caller; the model does not see it. */
  metadata?: Record<string, unknown>;
}

/** What `execute` may return: the output text, or a {@link ToolOutput}. */
export type ToolReturn = string | ToolOutput;

/** The outcome of checking a tool's input. */
export type ToolInputCheck<Input> =
  | { success: true; data: Input }
  | { success: false; error: string };

/**
 * A tool as the loop runs it. {@link defineTool} builds one from a zod schema; tools whose
 * schema comes from elsewhere (MCP servers) implement it directly.
 */
export interface Tool<Input = unknown> {
  /** The name the model calls it by: letters, digits, `_` and `-`, at most 64 characters. */
  readonly name: string;
  /** What the tool does and when to use it. */
  readonly description: string;
  /** The JSON Schema of the input object. */
  readonly inputSchema: JsonSchema;
  /** What the tool needs from the runtime. */
  readonly capabilities: readonly Capability[];
  /** Checks and converts the model's input; without it the input is passed as is. */
  parse?(input: unknown): ToolInputCheck<Input>;
  /** Does the work. */
  execute(input: Input, context: ToolContext): ToolReturn | Promise<ToolReturn>;
  /** The longest a call may take; the loop's default applies when absent. */
  readonly timeoutMs?: number;
  /** When true, the tool never runs at the same time as another tool of the same turn. */
  readonly exclusive?: boolean;
}

/** What {@link defineTool} takes. */
export interface ToolSpec<Schema extends z.ZodType> {
  /** The name the model calls it by: letters, digits, `_` and `-`, at most 64 characters. */
  name: string;
  /** What the tool does and when to use it. */
  description: string;
  /** The input's zod 4 schema; it becomes the JSON Schema the model sees. */
  parameters: Schema;
  /** What the tool needs from the runtime; none by default. */
  capabilities?: readonly Capability[];
  /** Does the work with the checked input. */
  execute(input: z.output<Schema>, context: ToolContext): ToolReturn | Promise<ToolReturn>;
  /** The longest a call may take. */
  timeoutMs?: number;
  /** When true, the tool never runs at the same time as another tool of the same turn. */
  exclusive?: boolean;
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Defines a tool from a zod 4 schema. The schema is converted with zod's own JSON Schema
 * converter and checks every call's input before `execute` sees it.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { defineTool } from "./tool.ts";
 * const weather = defineTool({
 *   name: "get_weather",
 *   description: "Current weather for a city",
 *   parameters: z.object({ city: z.string() }),
 *   execute: ({ city }) => `22°C in ${city}`,
 * });
 * if (weather.inputSchema.type !== "object") throw new Error("unexpected");
 * ```
 */
export function defineTool<Schema extends z.ZodType>(
  spec: ToolSpec<Schema>,
): Tool<z.output<Schema>> {
  if (!NAME.test(spec.name)) {
    throw new TypeError(
      `Invalid tool name "${spec.name}": use letters, digits, "_" and "-", at most 64 characters`,
    );
  }
  const inputSchema = _jsonSchema(spec.parameters);
  if (inputSchema.type !== "object") {
    throw new TypeError(`The parameters of tool "${spec.name}" must be a z.object() schema`);
  }
  return {
    name: spec.name,
    description: spec.description,
    inputSchema,
    capabilities: spec.capabilities ?? [],
    timeoutMs: spec.timeoutMs,
    exclusive: spec.exclusive,
    parse(input) {
      const checked = spec.parameters.safeParse(input);
      return checked.success
        ? { success: true, data: checked.data }
        : { success: false, error: z.prettifyError(checked.error) };
    },
    execute: spec.execute,
  };
}

/**
 * Indexes tools by name, refusing two tools with the same name.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { defineTool, toolRegistry } from "./tool.ts";
 * const ping = defineTool({
 *   name: "ping",
 *   description: "Answers pong",
 *   parameters: z.object({}),
 *   execute: () => "pong",
 * });
 * const registry = toolRegistry([ping]);
 * if (!registry.has("ping")) throw new Error("unexpected");
 * ```
 */
export function toolRegistry(tools: readonly Tool[]): ReadonlyMap<string, Tool> {
  const registry = new Map<string, Tool>();
  for (const tool of tools) {
    if (registry.has(tool.name)) {
      throw new TypeError(`Two tools are named "${tool.name}": tool names must be unique`);
    }
    registry.set(tool.name, tool);
  }
  return registry;
}

/**
 * The definitions the model sees for a set of tools.
 *
 * @example
 * ```ts
 * import { toolDefinitions } from "./tool.ts";
 * if (toolDefinitions([]).length !== 0) throw new Error("unexpected");
 * ```
 */
export function toolDefinitions(tools: Iterable<Tool>): ToolDefinition[] {
  const definitions: ToolDefinition[] = [];
  for (const { name, description, inputSchema } of tools) {
    definitions.push({ name, description, inputSchema });
  }
  return definitions;
}

/** JSON Schemas by zod schema: tools made again and again from one schema convert it once. */
const _jsonSchemas = new WeakMap<z.ZodType, JsonSchema>();

function _jsonSchema(schema: z.ZodType): JsonSchema {
  let json = _jsonSchemas.get(schema);
  if (!json) {
    const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: "input" });
    json = rest as JsonSchema;
    _jsonSchemas.set(schema, json);
  }
  return structuredClone(json);
}
