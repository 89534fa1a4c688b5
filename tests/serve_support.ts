/**
 * The service for the tests, in two ways. `serveHandler`: the handler of `lib/service/` in a
 * `Deno.serve` of this process on a free loopback port. `startServe`: `agent serve` as users
 * start it, a real child process on a free loopback port,
 * in directories of its own (HOME, data, settings, working directory), against the loopback mock
 * model. It is listening once its start line is written; its token is the one it made (read
 * from the file that line names) or `AGENT_SERVE_TOKEN`. Disposing of it kills it and removes
 * the directories it made.
 *
 * @module
 */

import { join } from "node:path";
import {
  type AgentHandler,
  type AgentHandlerOptions,
  createAgentHandler,
} from "../lib/service/mod.ts";
import { denoDir, MOD } from "./terminal_support.ts";

/** The directories of a service, all in `root`. */
export interface ServeDirs {
  /** Holds the others. */
  root: string;
  /** Its HOME; its settings are in `config` there. */
  home: string;
  /** Its data directory (AGENT_DATA_DIR). */
  dataDir: string;
  /** Its working directory: the project it serves. */
  cwd: string;
}

/** Makes the directories of a service in a new `root` in `base` (default the temp directory). */
export async function serveDirs(base?: string): Promise<ServeDirs> {
  const root = await Deno.realPath(await Deno.makeTempDir({ dir: base, prefix: "agent_serve_" }));
  const dirs = {
    root,
    home: join(root, "home"),
    dataDir: join(root, "data"),
    cwd: join(root, "work"),
  };
  for (const dir of [dirs.home, dirs.dataDir, dirs.cwd]) await Deno.mkdir(dir, { mode: 0o700 });
  return dirs;
}

/**
 * The whole environment of a CLI child in `dirs`, its model at `model.url`: nothing else is
 * inherited but PATH and the Deno cache.
 */
export async function serveEnv(
  model: { url: string },
  dirs: ServeDirs,
): Promise<Record<string, string>> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: dirs.home,
    DENO_DIR: await denoDir(),
    OPENAI_API_KEY: "sk-serve-test",
    OPENAI_BASE_URL: model.url,
    AGENT_DATA_DIR: dirs.dataDir,
    AGENT_CONFIG_DIR: join(dirs.home, "config"),
    NO_COLOR: "1",
  };
}

/** How {@link startServe} starts it. */
export interface ServeOptions {
  /** Flags after `serve --port 0 -m <model> --sandbox <sandbox>`. */
  args?: string[];
  /** `-m` (default `openai/test`). */
  model?: string;
  /** `--sandbox` (default `off`); `null` gives none. */
  sandbox?: string | null;
  /** Deno's permission flags (default `-A`). */
  permissions?: string[];
  /** Over {@link serveEnv}'s; `AGENT_SERVE_TOKEN` here is the token clients send. */
  env?: Record<string, string>;
  /** Its directories, made by the caller and left to it; by default, new ones removed with it. */
  dirs?: ServeDirs;
  /** Called with its directories before it starts (to write the sessions it is to serve). */
  prepare?(dirs: ServeDirs): Promise<void>;
}

/** An `agent serve` process, listening. */
export interface Served extends ServeDirs, AsyncDisposable {
  /** Its root URL. */
  url: string;
  /** The process id of the service (the Deno process itself). */
  pid: number;
  /** The file its start line names as holding the token it made (when it made one). */
  tokenFile?: string;
  /** The token clients send: the one it made, or AGENT_SERVE_TOKEN. */
  token?: string;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** `fetch` of a path of the service, with its token unless `init` has an authorization. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Sends `signal`; the exit code comes with `exited`. */
  kill(signal: Deno.Signal): void;
  /** Its exit code, once it has ended. */
  exited: Promise<number>;
  /** Sends SIGINT (Ctrl+C) and gives the exit code. */
  interrupt(): Promise<number>;
}

/**
 * Starts `agent serve` against the mock model at `model.url`; resolves once it listens, or
 * rejects with what it wrote to stderr when it ends without listening.
 */
export async function startServe(
  model: { url: string },
  options: ServeOptions = {},
): Promise<Served> {
  const dirs = options.dirs ?? await serveDirs();
  const env = { ...await serveEnv(model, dirs), ...options.env };
  let child: Deno.ChildProcess;
  try {
    await options.prepare?.(dirs);
    const sandbox = options.sandbox === undefined ? "off" : options.sandbox;
    child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        ...(options.permissions ?? ["-A"]),
        MOD,
        "serve",
        "--port",
        "0",
        "-m",
        options.model ?? "openai/test",
        ...(sandbox === null ? [] : ["--sandbox", sandbox]),
        ...options.args ?? [],
      ],
      cwd: dirs.cwd,
      clearEnv: true,
      env,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
  } catch (error) {
    if (!options.dirs) await Deno.remove(dirs.root, { recursive: true });
    throw error;
  }
  let stderr = "";
  const listening = Promise.withResolvers<string>();
  const reading = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderr += chunk;
      const url = /serving \S+ on (http:\/\/\S+) .*\n/.exec(stderr)?.[1];
      if (url) listening.resolve(url);
    }
    listening.reject(new Error(`agent serve did not listen:\n${stderr}`));
  })();
  const exited = child.status.then((status) => status.code);
  const dispose = async () => {
    try {
      child.kill("SIGKILL");
    } catch { /* it has ended */ }
    await exited;
    await reading.catch(() => {});
    if (!options.dirs) await Deno.remove(dirs.root, { recursive: true });
  };
  let url: string;
  try {
    url = await listening.promise;
  } catch (error) {
    await dispose();
    throw error;
  }
  const tokenFile = /bearer token in (\S+), readable by you alone/.exec(stderr)?.[1];
  const token = tokenFile ? (await Deno.readTextFile(tokenFile)).trim() : env.AGENT_SERVE_TOKEN;
  return {
    ...dirs,
    url,
    pid: child.pid,
    tokenFile,
    token,
    stderr: () => stderr,
    fetch(path, init = {}) {
      const headers = new Headers(init.headers);
      if (token && !headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
      return fetch(`${url}${path}`, { ...init, headers });
    },
    kill: (signal) => child.kill(signal),
    exited,
    async interrupt() {
      child.kill("SIGINT");
      return await exited;
    },
    [Symbol.asyncDispose]: dispose,
  };
}

/** A handler served on a free loopback port of this process. */
export interface ServedHandler extends AsyncDisposable {
  /** The handler. */
  handler: AgentHandler;
  /** Its root URL. */
  url: string;
}

/**
 * Serves a handler made with `options` on a free loopback port of this process. Without a token
 * of the test's own it authenticates nothing (`token: false`), as in a server that does so
 * itself. Disposing of it closes the handler, then the server.
 */
export function serveHandler(
  options: Omit<AgentHandlerOptions, "token"> & { token?: string | false },
): ServedHandler {
  const handler = createAgentHandler({ token: false, ...options });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  return {
    handler,
    url: `http://127.0.0.1:${server.addr.port}`,
    async [Symbol.asyncDispose]() {
      await handler.close();
      await server.shutdown();
    },
  };
}
