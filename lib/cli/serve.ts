/**
 * `agent serve`: the agent as an HTTP service on `Deno.serve`, with the run's model, tools
 * (those Deno grants), rules, hooks, sandbox, sessions and memory. Without `AGENT_SERVE_TOKEN`
 * it serves loopback only; Ctrl+C cancels the runs going, lets their streams end, and stops.
 *
 * @module
 */

import { permissionPolicy } from "../permissions/policy.ts";
import { createAgentHandler } from "../service/handler.ts";
import { isLoopback } from "../service/auth.ts";
import { createTodoTool } from "../../tools/todo.ts";
import type { CliArgs } from "./args.ts";
import type { HeadlessIo } from "./headless.ts";
import type { Prepared } from "./prepare.ts";
import { describeWithheld } from "./setup.ts";

/** The port `agent serve` listens on by default. */
export const DEFAULT_PORT = 8787;

/** Runs at once by default. */
export const DEFAULT_MAX_RUNS = 16;

/**
 * Serves until interrupted; resolves to the exit code (2 when the address cannot be used).
 */
export async function runServe(
  options: CliArgs,
  prepared: Prepared,
  io: HeadlessIo & { env(name: string): string | undefined },
): Promise<number> {
  const host = options.host ?? "127.0.0.1";
  const token = io.env("AGENT_SERVE_TOKEN") || undefined;
  if (!token && !isLoopback(host)) {
    io.err(
      `agent: serving on ${host} reaches other machines, so it needs a token: set ` +
        `AGENT_SERVE_TOKEN (e.g. AGENT_SERVE_TOKEN=$(openssl rand -hex 32)) and have clients ` +
        `send Authorization: Bearer <token>\n`,
    );
    return 2;
  }
  const { setup } = prepared;
  const handler = createAgentHandler({
    model: prepared.model,
    // A fresh task list for each run; the other tools keep no state.
    tools: () => setup.tools.map((tool) => tool.name === "todo" ? createTodoTool() : tool),
    systemPrompt: prepared.systemPrompt,
    cwd: setup.cwd,
    runOptions: {
      maxTurns: options.maxTurns,
      capabilities: setup.capabilities,
      sandbox: prepared.sandbox,
      project: prepared.project,
      // Nobody can answer a question: a rule that asks refuses.
      permission: permissionPolicy({
        rules: prepared.rules,
        mode: () => prepared.mode.current,
        roots: setup.roots,
        protected: prepared.ownPaths,
      }),
      hooks: prepared.hooks,
    },
    memory: prepared.memory,
    sessions: prepared.store,
    redact: prepared.redact,
    maxConcurrentRuns: options.maxRuns ?? DEFAULT_MAX_RUNS,
    token,
  });
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname: host,
      port: options.port ?? DEFAULT_PORT,
      onListen: ({ hostname, port }) => {
        const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
        io.err(
          `agent: serving ${prepared.modelSpec} on http://${shown}:${port} ` +
            `(${token ? "bearer token required" : "loopback only"}; ` +
            `at most ${_runs(options.maxRuns ?? DEFAULT_MAX_RUNS)} at once; ` +
            `API: http://${shown}:${port}/openapi.json)\n` +
            `agent: tools: ${setup.tools.map((tool) => tool.name).join(", ") || "none"}` +
            (setup.withheld.length ? `; not offered: ${describeWithheld(setup.withheld)}` : "") +
            "\n",
        );
      },
      onError: (error) => {
        io.err(`agent: ${(error as Error).message}\n`);
        return new Response("Internal error", { status: 500 });
      },
    }, handler);
  } catch (error) {
    await handler.close();
    if (error instanceof Deno.errors.AddrInUse) {
      io.err(`agent: port ${options.port ?? DEFAULT_PORT} is in use: pick another with --port\n`);
      return 2;
    }
    if (error instanceof Deno.errors.NotCapable) {
      io.err(`agent: Deno does not allow listening on ${host}: allow it with --allow-net\n`);
      return 2;
    }
    throw error;
  }
  let interrupts = 0;
  const removeInterrupt = io.onInterrupt(() => {
    if (++interrupts > 1) Deno.exit(130);
    const { running } = handler.service.load();
    io.err(
      `agent: stopping${running ? `: cancelling ${_runs(running)}` : ""}\n`,
    );
    // Runs end (as aborted, their sessions saved), their streams close, then the server stops.
    handler.close().finally(() => server.shutdown());
  });
  try {
    await server.finished;
  } finally {
    removeInterrupt();
  }
  return 0;
}

/** "1 run", "2 runs". */
function _runs(count: number): string {
  return `${count} ${count === 1 ? "run" : "runs"}`;
}
