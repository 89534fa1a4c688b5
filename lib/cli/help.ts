/**
 * `agent --help`: the options, then what holds for this user here: where the settings and the
 * sessions are, the user's own providers, what Deno grants and which tools that offers.
 *
 * @module
 */

import { dirname } from "node:path";
import denoJson from "../../deno.json" with { type: "json" };
import { describeCapabilities, type SessionMode } from "./capabilities.ts";
import { DEFAULT_MAX_TURNS } from "../loop/loop.ts";
import { PROVIDER_NAMES } from "../providers/resolve.ts";
import { defaultSessionsDir } from "../session/mod.ts";
import { loadSettings, userSettingsPath } from "./settings.ts";
import type { CliArgs } from "./args.ts";
import { DEFAULT_MODEL } from "./args.ts";
import { describeWithheld, openWorkspace } from "./workspace.ts";

/**
 * The help text, with this user's paths and providers and what Deno grants in the working
 * directory.
 *
 * @example
 * ```ts
 * import { parseCliArgs } from "./args.ts";
 * import { helpText } from "./help.ts";
 * const env = (name: string) => ({ AGENT_CONFIG_DIR: "/etc/agent-conf" } as Record<string, string>)[name];
 * const text = await helpText(parseCliArgs(["--help"]), env, "headless");
 * if (!text.includes("/etc/agent-conf/settings.json")) throw new Error(text);
 * ```
 */
export async function helpText(
  options: CliArgs,
  env: (name: string) => string | undefined,
  mode: SessionMode,
): Promise<string> {
  const setup = await openWorkspace(options, env, mode);
  const settingsFile = userSettingsPath(env) ?? "(none: set HOME or AGENT_CONFIG_DIR)";
  const sessions = defaultSessionsDir(env);
  const dataDir = sessions ? dirname(sessions) : "(none: set HOME or AGENT_DATA_DIR)";
  let own: string[] = [];
  try {
    own = Object.keys((await loadSettings({ cwd: setup.cwd, env })).settings.providers ?? {});
  } catch {
    // A settings file that does not load is reported by the run itself.
  }
  const offered = setup.tools.map((tool) => tool.name).join(", ") || "none";
  const withheld = setup.withheld.length
    ? `\n  not offered:  ${describeWithheld(setup.withheld)}`
    : "";
  const providers = `${PROVIDER_NAMES.join(", ")}` +
    (own.length ? `; yours: ${own.join(", ")}` : '; add your own under "providers" there');
  return `${HELP}
Settings: ${settingsFile}
Sessions, memory and input history: ${dataDir}
Providers: ${providers}.
Keys come from each provider's env var (OPENAI_API_KEY, ANTHROPIC_API_KEY, DEEPSEEK_API_KEY, …);
local servers (ollama, lmstudio, vllm, llamacpp) need none.

Here (${setup.cwd}), Deno grants:
  ${describeCapabilities(setup.capabilities)}
  tools offered: ${offered}${withheld}
`;
}

/** The options, as `--help` lists them (and the README's synopsis). */
const HELP = `agent ${denoJson.version}: an LLM agent for the terminal

Usage:
  agent [options] [prompt...]
  agent serve [--port <n>] [--host <addr>] [--max-runs <n>] [options]
  agent acp [options]                  an Agent Client Protocol agent on stdio, for editors
  agent mcp [--port <n>] [options]     the agent as an MCP server (stdio, or Streamable HTTP)
  agent mcp login|logout <server>      log in to (or out of) an MCP server over OAuth
  agent sessions [list|prune]          saved sessions: list, prune (agent sessions --help)
  agent memory [stats|prune|vacuum]    the project's memory: size, pruning (agent memory --help)
  deno run -A jsr:@x/agent [options] [prompt...]

A prompt runs one task and exits; piped stdin goes to the model too, before the prompt. Without a
prompt, on a terminal, an interactive session starts; otherwise the prompt is read from stdin.

Options:
  -p, --print                   run one task and exit, even on a terminal (the prompt comes
                                from the arguments or stdin)
  -m, --model <provider/model>  the model (env AGENT_MODEL; default ${DEFAULT_MODEL})
      --base-url <url>          the provider's API root (for openai/… it includes /v1)
      --api <api>               the wire protocol: openai (Chat Completions), openai-responses
                                or anthropic (default: the provider's; on OpenAI's own API
                                root its reasoning models use openai-responses)
      --output <format>         text (default), json, or stream-json
      --max-turns <n>           model calls allowed (0: no limit; default ${DEFAULT_MAX_TURNS})
      --system-prompt <text>    replace the default system prompt
      --append-system-prompt <text>
                                add to the system prompt
  -c, --continue                go on with the latest session of this directory
  -r, --resume <id>             go on with a saved session (an id or its first characters)
      --sessions                list this directory's saved sessions, a page at a time
                                (--page <n>, --limit <n>); agent sessions --help for more
      --recall <query>          search this project's memory of earlier work, and exit
      --no-memory               remember nothing and offer no memories
      --no-session              write nothing: no session, no memory
      --allow <rule>            let matching calls through, e.g. "bash(git *)" (repeatable)
      --ask <rule>              ask before matching calls (refused in headless runs)
      --deny <rule>             refuse matching calls, e.g. "bash(rm *)", "write(secrets/**)"
      --permission-mode <mode>  plan (look and propose), default, or accept-edits
      --mcp-config <file>       MCP servers (also read: .mcp.json); repeatable
      --trust-project           let this project's hooks, MCP servers, allow rules and default
                                mode apply (otherwise only a trusted project's do)
      --sandbox <mode>          run shell commands in bubblewrap: auto (when installed;
                                the default), required (refuse without it), or off
      --tools <a,b>             offer only these tools
      --cwd <dir>               the working directory
      --add-dir <dir>           another directory files may be changed in (repeatable)
      --thinking <tokens>       extended thinking budget (models that think; 0: off)
  -v, --verbose                 print each model request's size, timing and tokens
      --port <n>                serve, mcp: the port (serve: default 8787; 0 picks a free one)
      --host <addr>             serve, mcp: the interface (default 127.0.0.1; others need
                                AGENT_SERVE_TOKEN). Clients send the bearer token:
                                AGENT_SERVE_TOKEN, or the one it keeps for you alone in
                                <data dir>/serve-<port>.token (said when it starts)
      --max-runs <n>            serve: runs going at once at most (default 16; then 429)
  -h, --help                    show this help
  -V, --version                 show the version

Output: text streams the answer to a terminal (elsewhere it prints the final answer once) and
progress to stderr; json prints one result object; stream-json prints every event as a line.
Tools are offered when Deno grants what they need: read, ls, glob, grep need --allow-read;
write, edit --allow-write; bash --allow-run; fetch and web_search --allow-net (web_search also
TAVILY_API_KEY or BRAVE_API_KEY). So --allow-read=. with --allow-net=<provider host> makes a
read-only agent.
Exit codes: 0 success · 1 error · 2 usage error · 3 max turns reached · 130 interrupted.`;
