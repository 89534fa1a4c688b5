/**
 * `agent serve`: the agent as an HTTP service on `Deno.serve`, with the run's model, tools
 * (those Deno grants), rules, hooks, sandbox, sessions and memory. It always authenticates: every
 * request but `GET /v1/health` carries a bearer token, `AGENT_SERVE_TOKEN` or one it makes and
 * keeps for the user alone in the data directory (its start line says where). Other hosts than
 * loopback are served only with `AGENT_SERVE_TOKEN`.
 *
 * Ctrl+C (SIGINT) or SIGTERM drains it: every new request is answered 503 with `Retry-After`,
 * the runs going have {@link DRAIN_GRACE_MS} to end (then they are cancelled, and the request
 * bodies still arriving and the sessions still being sent are stopped), their streams end with
 * their result, the answers begun are sent, and it exits 0. Whatever connection is still open
 * {@link DRAIN_CUT_MS} after the runs were cancelled (a client that takes nothing of its answer)
 * is closed, so the stop never waits on a client. A second Ctrl+C cancels the runs at once; a
 * third exits at once (130).
 *
 * @module
 */

import { createAgentHandler } from "../service/handler.ts";
import { isLoopback, newServiceToken } from "../service/auth.ts";
import type { Redactor } from "../session/mod.ts";
import { MIN_SECRET_LENGTH, REDACTED } from "../secrets/redact.ts";
import { terminalText } from "./terminal_text.ts";
import { createTodoTool } from "../../tools/todo.ts";
import type { CliArgs } from "./args.ts";
import type { HeadlessIo } from "./headless.ts";
import type { Prepared } from "./prepare.ts";
import { dropServeToken, keepServeToken, serveTokenPath } from "./serve_token.ts";
import { describeWithheld } from "./workspace.ts";

/** The port `agent serve` listens on by default. */
export const DEFAULT_PORT = 8787;

/** Runs at once by default. */
export const DEFAULT_MAX_RUNS = 16;

/**
 * How long the runs going may go on once the service is asked to stop, before they are
 * cancelled: short enough that the whole stop fits in the 10 s a container is given to stop.
 */
export const DRAIN_GRACE_MS = 5_000;

/**
 * How long after the runs are cancelled the answers still being written may take, before their
 * connections are closed: the grace and this are the longest a stop takes (7 s).
 */
export const DRAIN_CUT_MS = 2_000;

/**
 * Serves until interrupted; resolves to the exit code (2 when the address cannot be used).
 */
export async function runServe(
  options: CliArgs,
  prepared: Prepared,
  io: HeadlessIo & { env(name: string): string | undefined },
): Promise<number> {
  const host = options.host ?? "127.0.0.1";
  const given = io.env("AGENT_SERVE_TOKEN")?.trim() || undefined;
  if (!given && !isLoopback(host)) {
    io.err(
      `agent: serving on ${host} reaches other machines, so it needs a token: set ` +
        `AGENT_SERVE_TOKEN (e.g. AGENT_SERVE_TOKEN=$(openssl rand -hex 32)) and have clients ` +
        `send Authorization: Bearer <token>\n`,
    );
    return 2;
  }
  if (!given && !prepared.dataDir) {
    io.err(
      "agent: agent serve needs a token and has nowhere to keep one for you alone: set " +
        "AGENT_SERVE_TOKEN (e.g. AGENT_SERVE_TOKEN=$(openssl rand -hex 32)) and have clients " +
        "send Authorization: Bearer <token>, or give it a data directory (AGENT_DATA_DIR or " +
        "HOME, that Deno lets it write)\n",
    );
    return 2;
  }
  const token = given ?? newServiceToken();
  /** Where the token made here is kept, once the port is known. */
  let tokenFile: string | undefined;
  let failed = false;
  const { setup } = prepared;
  const redact = _withToken(prepared.redact, token);
  const handler = createAgentHandler({
    model: prepared.model,
    // A fresh task list for each run; the other tools keep no state.
    tools: () => setup.tools.map((tool) => tool.name === "todo" ? createTodoTool() : tool),
    systemPrompt: prepared.systemPrompt,
    cwd: setup.cwd,
    maxTurns: options.maxTurns,
    // Nobody can answer a question: a rule that asks refuses.
    permission: prepared.policy,
    runOptions: prepared.runOptions,
    memory: prepared.memory,
    // The run's answer stands; the operator hears that memory failed (a full disk, a lock).
    onArchiveError: (runLoopId, error) =>
      io.err(
        `agent: run loop ${runLoopId} was not archived in memory: ${terminalText(redact(error))}\n`,
      ),
    sessions: prepared.store,
    redact,
    maxConcurrentRuns: options.maxRuns ?? DEFAULT_MAX_RUNS,
    token,
  });
  let server: Deno.HttpServer<Deno.NetAddr>;
  /**
   * Stops the server, closing every connection at once: once every answer is sent, or when a
   * client takes too long to take its own (`shutdown()` would wait for it, however long).
   */
  const cut = new AbortController();
  /** Answers not yet sent whole, and when the last of them is. */
  let unsent = 0;
  let sent = Promise.withResolvers<void>();
  const serving = (request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) => {
    unsent++;
    info.completed.catch(() => {}).finally(() => {
      if (--unsent === 0) {
        sent.resolve();
        sent = Promise.withResolvers<void>();
      }
    });
    return handler(request);
  };
  try {
    server = Deno.serve({
      signal: cut.signal,
      hostname: host,
      port: options.port ?? DEFAULT_PORT,
      onListen: ({ hostname, port }) => {
        const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
        const url = `http://${shown}:${port}`;
        if (!given) {
          const path = serveTokenPath(prepared.dataDir!, port);
          try {
            keepServeToken(path, token);
            tokenFile = path;
          } catch (error) {
            io.err(
              `agent: cannot keep the service's token in ${path}: ${(error as Error).message}; ` +
                "set AGENT_SERVE_TOKEN, or AGENT_DATA_DIR to a directory of your own\n",
            );
            failed = true;
            queueMicrotask(() => handler.close().finally(() => cut.abort()));
            return;
          }
        }
        io.err(
          `agent: serving ${prepared.modelSpec} on ${url} (` +
            (tokenFile
              ? `bearer token in ${tokenFile}, readable by you alone; `
              : "bearer token AGENT_SERVE_TOKEN; ") +
            `at most ${_runs(options.maxRuns ?? DEFAULT_MAX_RUNS)} at once; ` +
            `API: ${url}/openapi.json)\n` +
            (tokenFile
              ? `agent: e.g. curl -H "Authorization: Bearer $(cat ${tokenFile})" ${url}/v1/runs\n`
              : "") +
            `agent: tools: ${setup.tools.map((tool) => tool.name).join(", ") || "none"}` +
            (setup.withheld.length ? `; not offered: ${describeWithheld(setup.withheld)}` : "") +
            "\n",
        );
      },
      onError: (error) => {
        io.err(`agent: ${(error as Error).message}\n`);
        return Response.json({ error: { code: "internal", message: "The service failed" } }, {
          status: 500,
        });
      },
    }, serving);
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
  let stops = 0;
  /** When the connections still open are closed, once the service is asked to stop. */
  let cutting: ReturnType<typeof setTimeout> | undefined;
  const cutAfter = (ms: number) => {
    clearTimeout(cutting);
    cutting = setTimeout(() => {
      if (unsent) {
        io.err("agent: closing the connections whose clients did not take their answers\n");
      }
      cut.abort();
    }, ms);
  };
  const cancel = () => {
    const { running } = handler.service.load();
    if (running) io.err(`agent: cancelling ${_runs(running)}\n`);
    return handler.close();
  };
  const stop = () => {
    stops++;
    if (stops > 2) Deno.exit(130);
    if (stops === 2) {
      cutAfter(DRAIN_CUT_MS);
      return void cancel();
    }
    const { running } = handler.service.load();
    io.err(
      "agent: stopping: new requests get 503" +
        (running
          ? `; ${_runs(running)} going may take ${DRAIN_GRACE_MS / 1000} s to end, then ` +
            `${running === 1 ? "it is" : "they are"} cancelled (Ctrl+C again cancels now)`
          : "") +
        "\n",
    );
    // Runs end (with their result, or cancelled after the grace: aborted, their sessions
    // saved), their streams and the answers begun are sent, then the server stops; a client
    // that takes nothing of its answer is cut off.
    const late = setTimeout(cancel, DRAIN_GRACE_MS);
    cutAfter(DRAIN_GRACE_MS + DRAIN_CUT_MS);
    handler.drain().finally(async () => {
      clearTimeout(late);
      while (unsent > 0) await sent.promise;
      cut.abort();
    });
  };
  const removeInterrupt = io.onInterrupt(stop);
  const terminate = Deno.build.os === "windows" ? undefined : stop;
  if (terminate) Deno.addSignalListener("SIGTERM", terminate);
  try {
    await server.finished;
  } finally {
    clearTimeout(cutting);
    removeInterrupt();
    if (terminate) Deno.removeSignalListener("SIGTERM", terminate);
    if (tokenFile) dropServeToken(tokenFile, token);
  }
  return failed ? 1 : 0;
}

/**
 * The run's redactor, knowing the service's token too. The run's one scan finds its secrets and
 * the secret-shaped values; the token is then looked for as it is and as JSON writes it, not
 * by a second scan for every shape (every event and answer of the service goes through here).
 */
function _withToken(redact: Redactor, token: string): Redactor {
  // As for every secret, a token too short to tell from a word is not looked for.
  const forms = token.length < MIN_SECRET_LENGTH
    ? []
    : [...new Set([token, JSON.stringify(token).slice(1, -1)])];
  const withToken = (text: string) => {
    let clean = redact(text);
    for (const form of forms) if (clean.includes(form)) clean = clean.replaceAll(form, REDACTED);
    return clean;
  };
  return Object.assign(withToken, {
    secrets: Object.freeze(forms.length ? [...redact.secrets, token] : redact.secrets),
  });
}

/** "1 run", "2 runs". */
function _runs(count: number): string {
  return `${count} ${count === 1 ? "run" : "runs"}`;
}
