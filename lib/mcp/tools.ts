/**
 * MCP tools as agent tools: their names (`mcp__<server>__<tool>`), schemas, descriptions and
 * capabilities, and their results turned into the text the model reads.
 *
 * @module
 */

import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types";
import type { JsonSchema } from "../model.ts";
import type { Capability, Tool, ToolOutput } from "../tool.ts";

/** What an agent tool needs from its server. */
export interface _ToolServer {
  readonly name: string;
  call(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<{ result: CallToolResult; note?: string }>;
}

/** The longest tool name models accept. */
const _MAX_NAME = 64;

/**
 * `mcp__<server>__<tool>`, with characters outside `[a-zA-Z0-9_-]` replaced by `_`, cut to 64
 * characters, and made unique among `taken` (which it joins) with a `_2`, `_3`, … suffix.
 */
export function _toolName(server: string, tool: string, taken: Set<string>): string {
  const clean = (text: string) => text.replace(/[^a-zA-Z0-9_-]/g, "_");
  const base = `mcp__${clean(server)}__${clean(tool)}`.slice(0, _MAX_NAME);
  let name = base;
  for (let n = 2; taken.has(name); n++) {
    const suffix = `_${n}`;
    name = `${base.slice(0, _MAX_NAME - suffix.length)}${suffix}`;
  }
  taken.add(name);
  return name;
}

/** The agent tool for one tool of a server. */
export function _agentTool(
  server: _ToolServer,
  tool: McpTool,
  name: string,
  capabilities: readonly Capability[],
  timeoutMs: number,
): Tool<Record<string, unknown>> {
  const about = tool.description?.trim() || tool.title || tool.name;
  return {
    name,
    description: `MCP server "${server.name}": ${about}`,
    inputSchema: _inputSchema(tool.inputSchema),
    capabilities,
    timeoutMs,
    parse(input) {
      if (input === undefined || input === null) return { success: true, data: {} };
      if (typeof input !== "object" || Array.isArray(input)) {
        return { success: false, error: "The arguments must be a JSON object." };
      }
      return { success: true, data: input as Record<string, unknown> };
    },
    async execute(input, ctx) {
      const { result, note } = await server.call(tool.name, input, ctx.signal);
      const output = _formatResult(result);
      if (note) output.output = `${note}\n${output.output}`;
      output.metadata = { ...output.metadata, server: server.name, tool: tool.name };
      return output;
    },
  };
}

/** The server's input schema without `$schema`, and always of `type: "object"`. */
export function _inputSchema(schema: McpTool["inputSchema"] | undefined): JsonSchema {
  const { $schema: _, ...rest } = (schema ?? {}) as Record<string, unknown>;
  return { ...rest, type: "object" };
}

/**
 * The model's view of a result: text content as is, images, audio and binary resources in
 * brackets (`[image: image/png, 1234 bytes]`), text resources with their text, and the
 * structured content pretty-printed when there is no text. `isError` is passed through.
 */
export function _formatResult(result: CallToolResult): ToolOutput {
  const parts: string[] = [];
  let hasText = false;
  for (const item of result.content ?? []) {
    switch (item.type) {
      case "text":
        hasText = true;
        parts.push(item.text);
        break;
      case "image":
      case "audio":
        parts.push(`[${item.type}: ${item.mimeType}, ${_bytes(item.data)}]`);
        break;
      case "resource": {
        const resource = item.resource;
        const mime = resource.mimeType ? `, ${resource.mimeType}` : "";
        if ("text" in resource && typeof resource.text === "string") {
          hasText = true;
          parts.push(`[resource: ${resource.uri}${mime}]\n${resource.text}`);
        } else {
          const blob = "blob" in resource && typeof resource.blob === "string"
            ? `, ${_bytes(resource.blob)}`
            : "";
          parts.push(`[resource: ${resource.uri}${mime}${blob}]`);
        }
        break;
      }
      case "resource_link":
        parts.push(
          `[resource link: ${item.name} <${item.uri}>${
            item.description ? ` ${item.description}` : ""
          }]`,
        );
        break;
      default:
        parts.push(`[${(item as { type: string }).type} content]`);
    }
  }
  const metadata: Record<string, unknown> = {};
  if (result.structuredContent !== undefined) {
    metadata.structuredContent = result.structuredContent;
    if (!hasText) parts.push(JSON.stringify(result.structuredContent, null, 2));
  }
  const legacy = (result as { toolResult?: unknown }).toolResult;
  if (parts.length === 0 && legacy !== undefined) parts.push(JSON.stringify(legacy, null, 2));
  return {
    output: parts.length ? parts.join("\n") : "(no output)",
    isError: result.isError === true,
    metadata,
  };
}

/** The size of base64 data, decoded: "1 byte", "2 bytes". */
function _bytes(base64: string): string {
  const size = _base64Bytes(base64);
  return `${size} byte${size === 1 ? "" : "s"}`;
}

function _base64Bytes(data: string): number {
  const clean = data.replace(/\s/g, "");
  const padding = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor(clean.length * 3 / 4) - padding);
}
