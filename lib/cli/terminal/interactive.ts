/**
 * The interactive session: a prompt with history, multi-line input and completion; answers
 * streamed as they come; slash commands; Ctrl+C to stop an answer; input typed while the agent
 * works queued for its next turn; Deno's own permission prompts at a tool's first use.
 *
 * @module
 */

import { againWith } from "../invocation.ts";
import process from "node:process";
import readline from "node:readline";
import { Writable } from "node:stream";
import type { MemoryStore } from "../../memory/mod.ts";
import type { CapabilityStates, WithheldTool } from "../capabilities.ts";
import type { SandboxReport } from "../../sandbox/policy.ts";
import type { ProjectReport } from "../../events.ts";
import type { Message } from "../../messages.ts";
import type { Model } from "../../model.ts";
import { type LoadedSession, SessionError, type SessionStore } from "../../session/mod.ts";
import { forkNotice } from "../../session/resume.ts";
import type { Tool } from "../../tool.ts";
import type { Hooks, PermissionRequest } from "../../hooks.ts";
import type { PermissionAnswer, PermissionMode } from "../../permissions/policy.ts";
import type { PermissionRule } from "../../permissions/rules.ts";
import { terminalText } from "../terminal_text.ts";
import { attachFiles, completePath } from "./attach.ts";
import { commandNames, runCommand } from "./commands.ts";
import { startConversation } from "../../conversation/driver.ts";
import { answerOf, denoWillAsk, describeAlways, describeCall } from "./question.ts";
import { fieldAnswer, fieldQuestion } from "./form.ts";
import type { McpElicitationAnswer, McpElicitationRequest } from "../../mcp/elicitation.ts";
import { recap } from "./recap.ts";
import { notArchivedLine, runView } from "./render.ts";

/** What the interactive session needs. */
export interface InteractiveOptions {
  /** The working directory. */
  cwd: string;
  /** The command that started the agent, for the hint at the end, when it is known. */
  command?: string;
  /** The model and its name. */
  model: Model;
  /** The model's name, `provider/model`. */
  modelSpec: string;
  /** Resolves another model for `/model`. */
  resolveModel(spec: string): Model;
  /** The system prompt. */
  systemPrompt: string;
  /** The tools offered. */
  tools: Tool[];
  /** The tools left out, and why. */
  withheld: WithheldTool[];
  /** What Deno grants, at start. */
  capabilities: CapabilityStates;
  /** The sandbox shell commands run in, for the `start` event. */
  sandbox?: SandboxReport;
  /** How the session stands with its project, for the `start` event. */
  project?: ProjectReport;
  /** Model calls allowed per run. */
  maxTurns?: number;
  /** Where sessions are saved; none: nothing is saved. */
  store?: SessionStore;
  /** A session to go on with. */
  resumed?: LoadedSession;
  /** Earlier input lines, oldest first. */
  history?: string[];
  /** Saves a line of input history. */
  remember?(line: string): void;
  /** ANSI colours. */
  color: boolean;
  /** The permission rules ("always" answers add to them). */
  rules: PermissionRule[];
  /** The permission mode, switchable with /mode. */
  mode: { current: PermissionMode };
  /** The hooks of the run. */
  hooks: Hooks;
  /** The workspace roots. */
  roots: readonly string[];
  /** The agent's own settings and data directories, which its file tools never change. */
  ownPaths?: readonly string[];
  /** The project's long-term memory. */
  memory?: MemoryStore;
  /** Offer the `recall` tool (default true). */
  recallTool?: boolean;
  /**
   * Where the session puts its way of asking the user what an MCP server asks for (a form,
   * field by field): the run's MCP servers, started before the session, call it from then on.
   */
  elicitation?: {
    ask?: (server: string, request: McpElicitationRequest) => Promise<McpElicitationAnswer>;
  };
}

/**
 * Runs the interactive session until the user leaves; resolves to the exit code.
 */
export function runInteractive(options: InteractiveOptions): Promise<number> {
  const write = (text: string): void => void process.stdout.write(text);
  const paint = (code: string, text: string) =>
    options.color ? `\x1b[${code}m${text}\x1b[0m` : text;
  const view = runView({
    write,
    color: options.color,
    columns: () => process.stdout.columns ?? 80,
    rows: () => process.stdout.rows ?? Infinity,
  });
  /** Where a resumed conversation left off. */
  const recapOf = (messages: readonly Message[]) =>
    recap(messages, { columns: process.stdout.columns ?? 80, color: options.color });
  let running: AbortController | undefined;
  let lastInterrupt = 0;
  let closed = false;
  // While tools that Deno may ask about run, the terminal is in normal mode and input paused.
  let cooked = false;
  const queue: Message[] = [];
  const deferred: string[] = [];
  const { promise: done, resolve: finish } = Promise.withResolvers<number>();
  // Tools that would make Deno ask: the terminal must be in normal mode while they run.
  const mayPrompt = options.tools.some((tool) =>
    tool.capabilities.some((capability) => options.capabilities[capability] === "prompt")
  );

  // While the agent works, what the user types is not echoed (it would break the streamed
  // answer's lines); it is shown once entered, as queued.
  let muted = false;
  const echo = new Writable({
    write(chunk, _encoding, callback) {
      if (!muted) process.stdout.write(chunk);
      callback();
    },
  });
  Object.defineProperty(echo, "columns", { get: () => process.stdout.columns ?? 80 });
  const rl = readline.createInterface({
    input: process.stdin,
    output: echo,
    terminal: true,
    history: [...(options.history ?? [])].reverse(),
    historySize: 500,
    prompt: paint("36", "› "),
    completer: (line: string, callback: (error: null, result: [string[], string]) => void) => {
      if (/^\/\S*$/.test(line)) {
        callback(null, [commandNames().filter((name) => name.startsWith(line)), line]);
      } else completePath(line, options.cwd).then((result) => callback(null, result));
    },
  });

  // Whether the prompt is on the screen, the cursor on its line.
  let prompting = false;
  const prompt = (preserveCursor?: boolean) => {
    prompting = true;
    rl.prompt(preserveCursor);
  };

  /** Takes the text being typed off the prompt, unseen, and gives it. */
  const takeLine = (): string => {
    const text = rl.line;
    if (text) {
      const wasMuted = muted;
      muted = true;
      rl.write(null, { ctrl: true, name: "e" });
      rl.write(null, { ctrl: true, name: "u" });
      muted = wasMuted;
    }
    return text;
  };

  /**
   * Input given while the agent works: a command runs when the agent is done, anything else
   * goes to the agent's next step. Said at once; resolves once it is in the queue.
   */
  let queuing: Promise<void> = Promise.resolve();
  const hold = (text: string): Promise<void> => {
    options.remember?.(text);
    view.stop();
    if (text.startsWith("/")) {
      // A command typed while the agent works runs when it is done, never reaches the model.
      deferred.push(text);
      write(paint("2", `(${text.split(" ")[0]} runs when the agent is done)\n`));
      return queuing;
    }
    write(paint("2", `(queued for the agent's next step: ${terminalText(text)})\n`));
    // In the order typed, each with the files it names.
    queuing = queuing.then(async () => {
      const attached = await attachFiles(text, options.cwd).catch(() => ({ text }));
      queue.push({ role: "user", content: attached.text });
    });
    return queuing;
  };

  // Questions to the user, one at a time. Only y, yes, n, no, a or always answers: any other
  // line (typed ahead while tools ran, or said instead of an answer) is held as input, and the
  // question asked again.
  let question: ((line: string) => void) | undefined;
  let asking: Promise<unknown> = Promise.resolve();
  const ask = (request: PermissionRequest, why: string): Promise<PermissionAnswer> => {
    // Deno asks before this write, naming the file: one question is enough.
    if (denoWillAsk(request, options.cwd)) return Promise.resolve("yes");
    const next = asking.then(() =>
      new Promise<PermissionAnswer>((resolve) => {
        if (request.signal.aborted) return resolve("no");
        view.stop();
        const show = () =>
          write(
            `${paint("33", "?")} ${describeCall(request)} (${
              terminalText(why)
            }). Allow? [y]es / [n]o / [a]lways › `,
          );
        show();
        // Text typed ahead waits (unseen) for the prompt: the answer is only what is typed now.
        const typed = takeLine();
        const wasPaused = cooked;
        if (wasPaused) rl.resume();
        // In normal mode the terminal itself shows what is typed.
        muted = wasPaused;
        let held: Promise<void> = queuing;
        // Lines that come together (one paste, or lines typed ahead) are input, none an answer.
        let together = false;
        const settle = async (answer: PermissionAnswer) => {
          question = undefined;
          request.signal.removeEventListener("abort", onAbort);
          muted = true;
          await held;
          // "always" adds rules for the rest of the session: say which.
          if (answer === "always") write(paint("2", `(${await describeAlways(request)})\n`));
          if (typed) rl.write(typed);
          // The tool runs now: the spinner says so (unless Deno may ask in its turn).
          if (wasPaused) rl.pause();
          else view.resume();
          resolve(answer);
        };
        const onAbort = () => {
          write("\n");
          void settle("no");
        };
        request.signal.addEventListener("abort", onAbort, { once: true });
        question = (line: string) => {
          const answer = together ? undefined : answerOf(line);
          if (answer) return void settle(answer);
          if (line.trim()) {
            const text = line.trim();
            held = hold(text);
            together = true;
            setTimeout(() => together = false);
          }
          show();
        };
      })
    );
    asking = next.catch(() => {});
    return next;
  };
  /** Ends the form being asked, when Ctrl+C is pressed. */
  let cancelForm: (() => void) | undefined;
  /**
   * Asks the user what an MCP server asks for, one line per field: Enter takes the default, an
   * empty required field declines, Ctrl+C cancels. A line that does not fit says why and asks
   * again.
   */
  const askForm = (
    server: string,
    request: McpElicitationRequest,
  ): Promise<McpElicitationAnswer> => {
    const next = asking.then(() =>
      new Promise<McpElicitationAnswer>((resolve) => {
        view.stop();
        const fields = Object.entries(request.requestedSchema.properties ?? {});
        const required = new Set(request.requestedSchema.required ?? []);
        const content: Record<string, unknown> = {};
        write(
          `${paint("33", "?")} MCP server "${terminalText(server)}" asks: ${
            terminalText(request.message)
          }\n${
            paint(
              "2",
              "(Enter takes the default; an empty required field declines; Ctrl+C cancels)",
            )
          }\n`,
        );
        const typed = takeLine();
        const wasPaused = cooked;
        if (wasPaused) rl.resume();
        muted = wasPaused;
        let at = 0;
        const show = () => {
          const [name, field] = fields[at];
          write(`  ${fieldQuestion(name, field, required.has(name))} › `);
        };
        const settle = (answer: McpElicitationAnswer) => {
          question = undefined;
          cancelForm = undefined;
          muted = true;
          write(
            paint(
              "2",
              `(${{ accept: "sent", decline: "declined", cancel: "cancelled" }[answer.action]})\n`,
            ),
          );
          if (typed) rl.write(typed);
          if (wasPaused) rl.pause();
          else view.resume();
          resolve(answer);
        };
        cancelForm = () => {
          write("\n");
          settle({ action: "cancel" });
        };
        question = (line: string) => {
          const [name, field] = fields[at];
          const given = fieldAnswer(field, line, required.has(name));
          if (given.decline) return settle({ action: "decline" });
          if (given.error) {
            write(paint("31", `  ${terminalText(given.error)}\n`));
            return show();
          }
          if (given.value !== undefined) content[name] = given.value;
          if (++at < fields.length) return show();
          settle({ action: "accept", content });
        };
        if (fields.length === 0) return settle({ action: "accept", content });
        show();
      })
    );
    asking = next.catch(() => {});
    return next;
  };
  if (options.elicitation) options.elicitation.ask = askForm;
  const driver = startConversation({
    model: options.model,
    modelSpec: options.modelSpec,
    tools: options.tools,
    systemPrompt: options.systemPrompt,
    cwd: options.cwd,
    maxTurns: options.maxTurns,
    // The user answers what a rule or the mode asks.
    permission: {
      rules: options.rules,
      mode: () => options.mode.current,
      ask,
      roots: options.roots,
      protected: options.ownPaths,
    },
    runOptions: {
      capabilities: options.capabilities,
      sandbox: options.sandbox,
      project: options.project,
      hooks: options.hooks,
    },
    store: options.store,
    resumed: options.resumed,
    memory: options.memory,
    recallTool: options.recallTool,
    // One conversation, one run loop at a time: there is nothing to route between.
    placing: "continue",
    // At the session's end, /clear or /resume: an archive that failed is said, never dropped.
    onRunLoopEnd: (ended) => {
      if (ended.archiveError === undefined) return;
      if (prompting) write("\n");
      prompting = false;
      write(paint("33", notArchivedLine(ended.archiveError)));
    },
  });

  /**
   * Puts the terminal in normal mode, input paused (the terminal itself keeps what is typed,
   * for Deno's questions), or back. In normal mode Ctrl+C is a signal: it stops the run as it
   * does at the prompt.
   */
  const cook = (on: boolean) => {
    if (on === cooked) return;
    cooked = on;
    if (on) {
      rl.pause();
      process.stdin.setRawMode?.(false);
      Deno.addSignalListener("SIGINT", interrupt);
    } else {
      Deno.removeSignalListener("SIGINT", interrupt);
      process.stdin.setRawMode?.(true);
      rl.resume();
    }
  };

  const run = async (text: string) => {
    const { text: content, files, problems } = await attachFiles(text, options.cwd);
    for (const problem of problems) write(paint("33", `not attached: ${problem}\n`));
    if (files.length) write(paint("2", `attached ${files.join(", ")}\n`));
    running = new AbortController();
    muted = true;
    try {
      // Each message goes on in the conversation's run loop; a failed run ended it.
      const events = driver.send(content, {
        signal: running.signal,
        pendingInput: () => queue.splice(0),
      });
      let step = await events.next();
      while (!step.done) {
        const event = step.value;
        // Deno can only ask for a permission with the terminal in normal mode.
        if (event.type === "tool_call" && mayPrompt) cook(true);
        if (event.type === "turn_end") cook(false);
        view.show(event);
        // Deno's permission prompt must not share its line with the spinner.
        if (cooked && event.type === "tool_call") view.stop();
        step = await events.next();
      }
    } finally {
      cook(false);
      view.stop();
      running = undefined;
      muted = false;
    }
  };

  const context = {
    write,
    conversation: () => driver.conversation,
    clear: () => driver.restart(),
    resume: async (id: string) => {
      if (!options.store) throw new Error("sessions are not saved in this run");
      const held = await driver.resume(id).catch((error) => {
        // The store's own hint names the CLI's flag; here the command lists them.
        if (error instanceof SessionError && error.reason === "not_found") {
          throw new Error(`No session matches "${id}": list them with /sessions`);
        }
        throw error;
      });
      for (const warning of held.warnings) write(paint("33", `${terminalText(warning)}\n`));
      if (held.forkedFrom) write(paint("33", `${terminalText(forkNotice(held))}\n`));
      write(`Resumed ${held.header.id.slice(0, 8)}: ${_messages(held.messages.length)}.\n`);
      write(recapOf(held.messages));
    },
    compact: async (focus: string) => {
      running = new AbortController();
      try {
        const compacted = await driver.compact({ focus, signal: running.signal });
        if (!compacted) return write("Nothing to compact yet.\n");
        // The summary is a model call like any other: counted, and said.
        const { usage } = compacted;
        write(
          `Compacted: ${compacted.tokensBefore} → ${compacted.tokensAfter} tokens. The summary ` +
            `took ${usage.inputTokens} in / ${usage.outputTokens} out tokens.\n`,
        );
      } finally {
        running = undefined;
      }
    },
    model: () => driver.modelSpec,
    switchModel: async (spec: string) => {
      await driver.switchModel(options.resolveModel(spec), spec);
    },
    tools: () => ({ offered: options.tools.map((tool) => tool.name), withheld: options.withheld }),
    permissionMode: () => options.mode.current,
    setPermissionMode: (mode: PermissionMode) => {
      options.mode.current = mode;
    },
    store: options.store,
    cwd: options.cwd,
    exit: () => rl.close(),
  };

  // Lines of one paste arrive together; a line ending in "\" goes on on the next one.
  let pending: string[] = [];
  let pasteTimer: ReturnType<typeof setTimeout> | undefined;
  const submit = async () => {
    const text = pending.join("\n").trim();
    pending = [];
    if (!text) return prompt();
    if (running) return await hold(text);
    options.remember?.(text);
    try {
      if (!(await runCommand(text, context))) await run(text);
      for (let command = deferred.shift(); command; command = deferred.shift()) {
        await runCommand(command, context);
      }
    } catch (error) {
      write(`${paint("31", "error:")} ${terminalText((error as Error).message)}\n`);
    }
    // What was typed while the agent worked stays on the prompt, the cursor after it.
    if (!closed) prompt(true);
  };
  rl.on("line", (line: string) => {
    prompting = false;
    if (question) {
      return question(line);
    }
    if (line.endsWith("\\")) {
      pending.push(line.slice(0, -1));
      rl.setPrompt(paint("36", "… "));
      return prompt();
    }
    rl.setPrompt(paint("36", "› "));
    pending.push(line);
    clearTimeout(pasteTimer);
    pasteTimer = setTimeout(submit, 15);
  });

  /** Ctrl+C: stops the run (twice in a second: leaves), or drops what is typed, or leaves. */
  function interrupt(): void {
    if (cancelForm) return cancelForm();
    const now = Date.now();
    if (running) {
      if (now - lastInterrupt < 1_000) return rl.close();
      lastInterrupt = now;
      running.abort();
      return;
    }
    if (rl.line === "" && pending.length === 0) return rl.close();
    // Ctrl+C drops what was being typed.
    takeLine();
    pending = [];
    write("^C\n");
    rl.setPrompt(paint("36", "› "));
    prompt();
  }
  rl.on("SIGINT", interrupt);

  rl.on("close", async () => {
    closed = true;
    if (cooked) Deno.removeSignalListener("SIGINT", interrupt);
    running?.abort();
    view.stop();
    // The goal of this session is done: archive it in the project's memory.
    await driver.endRunLoop();
    await driver.close();
    // Left from the prompt: what comes next (the shell's prompt) starts on a line of its own.
    if (prompting) write("\n");
    if (driver.conversation.saved) {
      const id = driver.conversation.id.slice(0, 8);
      write(
        paint(
          "2",
          `Session ${id} saved. Resume it with: ${againWith(options.command, `-r ${id}`)}\n`,
        ),
      );
    }
    finish(0);
  });

  const intro = options.resumed
    ? `Resumed session ${options.resumed.header.id.slice(0, 8)} (${
      _messages(options.resumed.messages.length)
    }).`
    : `agent · ${driver.modelSpec} · ${options.cwd}`;
  write(`${paint("2", `${intro} /help for commands, Ctrl+C to stop or leave.`)}\n`);
  if (options.resumed) write(recapOf(options.resumed.messages));
  prompt();
  return done;
}

/** "1 message", "2 messages". */
function _messages(count: number): string {
  return `${count} message${count === 1 ? "" : "s"}`;
}
