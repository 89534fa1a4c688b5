/**
 * An MCP server over Streamable HTTP in the test's own process, on the SDK's server side, that
 * keeps every request it gets: stateless (no session ids, a new server for each request, as the
 * SDK shows it) and answering the optional GET stream with the status a test gives (servers
 * differ: 405 is the spec's word, 404 is common).
 *
 * @module
 */

// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";

/** A request the server got. */
export interface SeenRequest {
  /** Its method. */
  method: string;
  /** Its body, as text. */
  body: string;
}

/** The running server. */
export interface HttpMcp extends AsyncDisposable {
  /** Its `/mcp` URL. */
  url: string;
  /** Every request, in order. */
  seen: SeenRequest[];
  /** The JSON-RPC methods POSTed to it, in order (notifications too). */
  methods(): string[];
  /** With sessions: forgets them all, as a restarted server does (their ids then get 404). */
  forget(): void;
}

/**
 * Starts it: tools `echo` {text} and `wait` {ms} (answers after that long, or when cancelled).
 * With `sessions`, it gives each client a session id and answers an unknown one with 404.
 */
export function startHttpMcp(options: { getStatus?: number; sessions?: boolean } = {}): HttpMcp {
  const seen: SeenRequest[] = [];
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = request.method === "POST" ? await request.clone().text() : "";
    seen.push({ method: request.method, body });
    const id = request.headers.get("mcp-session-id");
    if (options.sessions && id) {
      const known = sessions.get(id);
      if (!known) return Response.json({ error: "no such session" }, { status: 404 });
      if (request.method === "GET") return new Response(null, { status: 405 });
      return await known.handleRequest(request);
    }
    if (request.method === "GET") return new Response(null, { status: options.getStatus ?? 405 });
    if (request.method === "DELETE") return new Response(null, { status: 405 });
    const mcp = new McpServer({ name: "stateless", version: "1.0.0" });
    mcp.registerTool(
      "echo",
      { description: "Echoes its text", inputSchema: { text: z.string() } },
      ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }),
    );
    mcp.registerTool(
      "wait",
      { description: "Answers after ms milliseconds", inputSchema: { ms: z.number() } },
      async ({ ms }, extra) => {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          extra.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()));
        });
        return { content: [{ type: "text", text: `waited ${ms} ms` }] };
      },
    );
    const transport: WebStandardStreamableHTTPServerTransport =
      new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: options.sessions ? () => crypto.randomUUID() : undefined,
        onsessioninitialized: (made) => void sessions.set(made, transport),
        enableJsonResponse: true,
      });
    await mcp.connect(transport);
    return await transport.handleRequest(request);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    seen,
    methods: () =>
      seen.flatMap(({ body }) => {
        try {
          const parsed = JSON.parse(body);
          return (Array.isArray(parsed) ? parsed : [parsed]).map((m) => String(m.method ?? ""));
        } catch {
          return [];
        }
      }),
    forget: () => sessions.clear(),
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}
