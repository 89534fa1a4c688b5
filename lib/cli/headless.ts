/**
 * One task, headless: run it, print its events in the chosen format, save it as a session.
 *
 * @module
 */

import type { RunStatus } from "../events.ts";
import type { RunLoopEvent } from "../runloop/events.ts";
import { startPrepared } from "./conversation.ts";
import { runLoops } from "../runloop/manager.ts";
import type { CliArgs } from "./args.ts";
import type { Prepared } from "./prepare.ts";
import { type CliOutput, textRenderer } from "./render.ts";
import { describeWithheld } from "./workspace.ts";
import { againWith } from "./invocation.ts";

/** What a headless run writes to and listens on. */
export interface HeadlessIo extends CliOutput {
  /** ANSI colours on stderr. */
  color: boolean;
  /**
   * Whether stdout is a terminal: then the answer streams there as it comes; otherwise the final
   * answer is printed once, at the end, whatever retries happened on the way.
   */
  outIsTerminal?: boolean;
  /** Registers a Ctrl+C handler; returns a function that removes it. */
  onInterrupt(handler: () => void): () => void;
}

/**
 * Runs `prompt` and resolves to how the run ended. A second Ctrl+C exits at once. The answer is
 * printed before the run loop is archived in the project's memory, and the archive is written
 * before this resolves (a failure to write it is a warning on stderr).
 */
export async function runHeadless(
  prompt: string,
  options: CliArgs,
  prepared: Prepared,
  io: HeadlessIo,
): Promise<RunStatus> {
  const { setup } = prepared;
  // The archive waits until the answer is out: nobody waits on it to read the answer.
  const loops = runLoops({ memory: prepared.memory, deferArchive: true });
  // Headless: nobody can answer, so a rule that asks refuses.
  const driver = startPrepared(prepared, options, { runLoops: loops });
  const talk = driver.conversation;
  const controller = new AbortController();
  let interrupts = 0;
  const removeInterrupt = io.onInterrupt(() => {
    if (++interrupts > 1) {
      try {
        render?.flush(); // what is held of the streamed answer, first
      } finally {
        Deno.exit(130);
      }
    }
    controller.abort();
  });
  // A reader of stdout that goes away (`| head -1`) ends the run as Ctrl+C would, quietly.
  let outClosed = false;
  const out = (text: string) => {
    if (outClosed) return;
    try {
      io.out(text);
    } catch (error) {
      if (!(error instanceof Deno.errors.BrokenPipe)) throw error;
      outClosed = true;
      controller.abort();
    }
  };
  const render = options.output === "text"
    ? textRenderer({ out, err: io.err }, {
      color: io.color,
      stream: io.outIsTerminal ?? false,
      redact: prepared.redact,
    })
    : undefined;
  if (render && setup.withheld.length > 0) {
    io.err(`agent: not offered: ${describeWithheld(setup.withheld)}\n`);
  }
  try {
    // One task: a run loop that completes with the run, archived in the project's memory.
    const events = driver.send(prompt, { signal: controller.signal, complete: true });
    // A key the model streams in pieces is held back until it can be redacted whole.
    const streamed = options.output === "stream-json"
      ? (await import("../service/redacted_events.ts")).eventRedactor<RunLoopEvent>(
        prepared.redact,
      )
      : undefined;
    let step = await events.next();
    while (!step.done) {
      const event = step.value;
      if (render) render(event);
      else if (streamed) {
        for (const next of streamed.push(event)) out(`${JSON.stringify(next)}\n`);
      } else if (event.type === "result") out(`${JSON.stringify(event)}\n`);
      step = await events.next();
    }
    if (render && talk.saved) {
      io.err(`session ${talk.id.slice(0, 8)} (go on with: ${againWith(prepared.command, "-c")})\n`);
    }
    return step.value.status;
  } catch (error) {
    // What is held of the streamed answer comes out before the failure is told.
    render?.flush();
    throw error;
  } finally {
    // The answer is all out (what the renderer holds is written now): the archive comes last.
    render?.flush();
    await loops.archivePending().catch((error) =>
      io.err(`agent: the run was not archived in memory: ${(error as Error).message}\n`)
    );
    removeInterrupt();
    await driver.close();
  }
}
