/**
 * An MCP server on stdio that asks its client for things, for the tests of the client's side of
 * the spec: `ask` asks the user for a form (the fields `required` names, default `name`, are
 * required) (`elicitation/create`) whose fields have defaults, and
 * answers with the answer it got, as JSON; `roots` answers with the client's roots
 * (`roots/list`); `slow` reports its progress three times (`notifications/progress`, to the
 * call's progress token) before it answers. It gives `instructions` at initialization, and
 * writes its client's capabilities to stderr.
 *
 * Run: `deno run -A --config deno.json tests/mcp_asking_server.ts`.
 *
 * @module
 */

// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

/** What the server tells its client how to use it. */
export const ASKING_INSTRUCTIONS = "Call ask before anything else. The token is sk-" +
  "x".repeat(30);

const server = new McpServer({ name: "asking", version: "1.0.0" }, {
  instructions: Deno.env.get("ASKING_INSTRUCTIONS") ?? ASKING_INSTRUCTIONS,
});

const json = (value: unknown) => ({
  content: [{ type: "text" as const, text: JSON.stringify(value) }],
});

server.registerTool("ask", {
  description: "Asks the user for a name, an age, a status and whether they are verified",
  inputSchema: { message: z.string().optional(), required: z.array(z.string()).optional() },
}, async ({ message, required }) => {
  const answer = await server.server.elicitInput({
    message: message ?? "Who are you?",
    requestedSchema: {
      type: "object",
      properties: {
        name: { type: "string", title: "Name", description: "Your name", default: "John Doe" },
        age: { type: "integer", description: "Your age", default: 30, minimum: 0 },
        status: {
          type: "string",
          description: "Your status",
          enum: ["active", "inactive"],
          default: "active",
        },
        verified: { type: "boolean", default: true },
        nickname: { type: "string" },
      },
      required: required ?? ["name"],
    },
  });
  return json(answer);
});

server.registerTool("roots", { description: "Lists the client's roots" }, async () => {
  return json(await server.server.listRoots());
});

server.registerTool("slow", { description: "Reports progress three times" }, async (extra) => {
  const token = extra._meta?.progressToken;
  for (let step = 1; step <= 3; step++) {
    if (token !== undefined) {
      await extra.sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: step, total: 3, message: `step ${step}` },
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return json({ token: token ?? null });
});

server.server.oninitialized = () => {
  console.error(`capabilities: ${JSON.stringify(server.server.getClientCapabilities())}`);
};

await server.connect(new StdioServerTransport());
