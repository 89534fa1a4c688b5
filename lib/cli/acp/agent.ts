/**
 * `agent acp`: the agent as an Agent Client Protocol agent on stdio, for editors (Zed, JetBrains
 * IDEs, Neovim, Emacs). Built on the protocol's own SDK (`npm:@agentclientprotocol/sdk`, loaded
 * when the command starts). Nothing but the protocol goes to stdout; what the agent has to say
 * besides goes to stderr, which editors keep as its log.
 *
 * Each session is prepared as a CLI run in the directory the editor gives (`session/new`,
 * `session/load`): the project's settings and trust (never asked: `--trust-project` or the
 * user's trusted directories), the tools Deno grants there, the sandbox, the sessions and memory.
 * The editor's own MCP servers join those of the configuration. See `session.ts` for a session.
 *
 * @module
 */

import denoJson from "../../../deno.json" with { type: "json" };
import type {
  AgentContext,
  AuthMethod,
  ClientCapabilities,
  McpServer,
} from "@agentclientprotocol/sdk";
import { loadLazy } from "../../lazy/load.ts";
import { ConfigError } from "../../errors.ts";
import { MissingKeyError, resolveModel } from "../../providers/resolve.ts";
import { type CliArgs, DEFAULT_MODEL } from "../args.ts";
import { loadSettings } from "../settings.ts";
import type { HeadlessIo } from "../headless.ts";
import { batchedOutput } from "./batched_output.ts";
import { AcpRequestError, type AcpSession, openAcpSession } from "./session.ts";

/** The standard streams the protocol is spoken on (tests give their own). */
export interface AcpStreams {
  /** What the editor sends. */
  input: ReadableStream<Uint8Array>;
  /** Where the protocol goes. */
  output: WritableStream<Uint8Array>;
}

/**
 * Speaks ACP on stdio until the editor closes it (or SIGINT/SIGTERM); resolves to the exit code.
 * Stdout is written in batches (see `batched_output.ts`), all of it before this resolves.
 */
export async function runAcp(
  options: CliArgs,
  io: HeadlessIo & { env(name: string): string | undefined },
  given?: AcpStreams,
): Promise<number> {
  const stdout = given ? undefined : batchedOutput(Deno.stdout);
  const streams = given ?? { input: Deno.stdin.readable, output: stdout!.writable };
  const acp = await loadLazy("acp_sdk");
  const log = (text: string) => io.err(`${text}\n`);
  const sessions = new Map<string, AcpSession>();
  let capabilities: ClientCapabilities = {};

  /** The session the editor names, or the error it gets when there is none. */
  /** Sessions closed to make room, and how to open them again when the editor comes back. */
  const dormant = new Map<
    string,
    { client: AgentContext; request: OpenRequest; mode?: string }
  >();
  const sessionOf = async (id: string): Promise<AcpSession> => {
    const session = sessions.get(id);
    if (session) {
      // Kept in the order of use: the one unused the longest is the first to make room.
      sessions.delete(id);
      sessions.set(id, session);
      return session;
    }
    const asleep = dormant.get(id);
    if (!asleep) throw acp.RequestError.sessionNotFound(id);
    dormant.delete(id);
    const awake = await open(asleep.client, asleep.request, id, id);
    if (asleep.mode) awake.setMode(asleep.mode);
    return awake;
  };
  /** A failure said in the protocol's words: a missing key asks the editor to authenticate. */
  const answer = (error: unknown): Error => {
    if (error instanceof acp.RequestError) return error;
    if (error instanceof AcpRequestError) return new acp.RequestError(error.code, error.message);
    if (error instanceof MissingKeyError) {
      return acp.RequestError.authRequired(undefined, _keyAdvice(error.message));
    }
    const message = error instanceof Error ? error.message : String(error);
    if (!(error instanceof ConfigError)) {
      log(`agent: ${error instanceof Error ? error.stack ?? message : message}`);
    }
    return new acp.RequestError(-32603, message);
  };
  const open = async (
    client: AgentContext,
    request: OpenRequest,
    id: string,
    resume?: string,
  ) => {
    await makeRoom();
    const session = await openAcpSession({
      id,
      cwd: request.cwd,
      args: options,
      env: io.env,
      log,
      client,
      capabilities,
      mcpServers: request.mcpServers,
      resume,
    });
    sessions.set(id, session);
    opened.set(id, { client, request });
    return session;
  };
  /** How each open session was opened. */
  const opened = new Map<string, { client: AgentContext; request: OpenRequest }>();
  /**
   * Past {@link MAX_ACP_SESSIONS} open, the idle one unused the longest closes (its MCP servers,
   * its memory database); it opens again, saved as it was, when the editor next uses it.
   */
  const makeRoom = async () => {
    while (sessions.size >= MAX_ACP_SESSIONS) {
      const idle = [...sessions].find(([, session]) => !session.busy());
      if (!idle) {
        throw new AcpRequestError(
          -32600,
          `${sessions.size} sessions are running prompts: cancel one, or wait for one to end`,
        );
      }
      const [id, session] = idle;
      sessions.delete(id);
      const how = opened.get(id);
      opened.delete(id);
      if (how) dormant.set(id, { ...how, mode: session.modes().currentModeId });
      while (dormant.size > _MAX_DORMANT) dormant.delete(dormant.keys().next().value!);
      await session.close().catch((error) =>
        log(`agent: a session did not close cleanly: ${(error as Error).message}`)
      );
    }
  };

  const app = acp.agent({ name: "agent" })
    .onRequest("initialize", async ({ params }) => {
      capabilities = params.clientCapabilities ?? {};
      const missing = await _missingKey(options, io.env);
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: {
          loadSession: true,
          promptCapabilities: { embeddedContext: true, image: false, audio: false },
          mcpCapabilities: { http: true, sse: true },
          sessionCapabilities: { close: {} },
        },
        agentInfo: { name: "agent", title: "@x/agent", version: denoJson.version },
        authMethods: missing ? [_authMethod(missing)] : [],
      };
    })
    .onRequest("authenticate", async () => {
      // The key lives in the environment the editor starts the agent with: nothing to do here
      // but say whether it is there now.
      const missing = await _missingKey(options, io.env);
      if (missing) throw acp.RequestError.authRequired(undefined, _keyAdvice(missing));
      return {};
    })
    .onRequest("session/new", async ({ params, client }) => {
      const id = crypto.randomUUID();
      try {
        const session = await open(client, params, id);
        // The commands once the editor knows the session.
        setTimeout(() => session.announceCommands().catch(() => {}), 0);
        return { sessionId: id, modes: session.modes() };
      } catch (error) {
        throw answer(error);
      }
    })
    .onRequest("session/load", async ({ params, client }) => {
      const id = params.sessionId;
      // Sessions are named by their whole id, as `session/new` gave it.
      if (!_SESSION_ID.test(id)) throw acp.RequestError.resourceNotFound(id);
      await sessions.get(id)?.close();
      sessions.delete(id);
      opened.delete(id);
      dormant.delete(id);
      try {
        const session = await open(client, params, id, id);
        await session.replay();
        setTimeout(() => session.announceCommands().catch(() => {}), 0);
        return { modes: session.modes() };
      } catch (error) {
        throw answer(error);
      }
    })
    .onRequest("session/prompt", async ({ params }) => {
      try {
        const session = await sessionOf(params.sessionId);
        return { stopReason: await session.prompt(params.prompt) };
      } catch (error) {
        throw answer(error);
      }
    })
    .onNotification("session/cancel", ({ params }) => {
      sessions.get(params.sessionId)?.cancel();
    })
    .onRequest("session/set_mode", async ({ params }) => {
      try {
        (await sessionOf(params.sessionId)).setMode(params.modeId);
      } catch (error) {
        throw answer(error);
      }
      return {};
    })
    .onRequest("session/close", async ({ params }) => {
      const id = params.sessionId;
      if (dormant.delete(id)) return {};
      const session = sessions.get(id);
      if (!session) throw acp.RequestError.sessionNotFound(id);
      sessions.delete(id);
      opened.delete(id);
      await session.close();
      return {};
    });

  const connection = app.connect(acp.ndJsonStream(streams.output, streams.input));
  const stop = () => connection.close();
  const signals: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
  for (const signal of signals) Deno.addSignalListener(signal, stop);
  try {
    await connection.closed.catch(() => {});
  } finally {
    for (const signal of signals) Deno.removeSignalListener(signal, stop);
    await Promise.all(
      [...sessions.values()].map((session) =>
        session.close().catch((error) =>
          log(`agent: a session did not close cleanly: ${(error as Error).message}`)
        )
      ),
    );
    // What is on its way goes out before the process ends, unless the editor stopped reading.
    await stdout?.drained(5_000).catch(() => false);
  }
  return 0;
}

/** Sessions open at once at most; past it, the idle one unused the longest closes. */
export const MAX_ACP_SESSIONS = 32;

/** Sessions closed to make room that are remembered, to open again when used. */
const _MAX_DORMANT = 10_000;

/** A session id, as `session/new` makes them. */
const _SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What a session was opened with. */
type OpenRequest = { cwd: string; mcpServers: McpServer[] };

/**
 * Why the model the sessions would use cannot be reached for want of a key, if so: the model of
 * `--model`, `AGENT_MODEL` or the user's settings.
 */
async function _missingKey(
  options: CliArgs,
  env: (name: string) => string | undefined,
): Promise<string | undefined> {
  try {
    const { settings } = await loadSettings({ cwd: options.cwd ?? Deno.cwd(), env, project: null });
    const spec = options.model ?? env("AGENT_MODEL") ?? settings.model ?? DEFAULT_MODEL;
    resolveModel(spec, {
      env,
      providers: settings.providers,
      models: settings.models,
      baseURL: options.baseURL,
      api: options.api,
    });
    return undefined;
  } catch (error) {
    return error instanceof MissingKeyError ? error.message : undefined;
  }
}

function _keyAdvice(missing: string): string {
  return `${missing}, in the environment the editor starts the agent with (in Zed: the "env" ` +
    `of its entry in "agent_servers"), or give --model a local server's model`;
}

function _authMethod(missing: string): AuthMethod {
  return {
    id: "environment",
    name: "API key in the environment",
    description: _keyAdvice(missing),
  };
}
