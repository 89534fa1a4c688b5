/**
 * The conversation of a prepared CLI run, as the headless run, `agent mcp`'s tasks and
 * `agent acp`'s sessions start it: the run's model, tools, system prompt, directory, rules,
 * hooks, session and memory.
 *
 * @module
 */

import { type Driver, type DriverOptions, startConversation } from "../conversation/driver.ts";
import type { CliArgs } from "./args.ts";
import type { Prepared } from "./prepare.ts";

/**
 * Starts the conversation of `prepared`; `more` sets what the front end decides (its run loops,
 * who answers permission questions, how messages are placed, the session's id).
 *
 * @example
 * ```ts
 * import { startPrepared } from "./conversation.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const prepared = {
 *   model: scriptedModel([{ text: "Hi" }]),
 *   modelSpec: "scripted/test",
 *   setup: { cwd: "/w", roots: ["/w"], tools: [], withheld: [], capabilities: {} },
 *   systemPrompt: "",
 *   policy: { rules: [], mode: () => "default" as const, roots: ["/w"] },
 *   runOptions: {},
 * };
 * const driver = startPrepared(prepared as never, { tools: undefined, maxTurns: 1 });
 * if (driver.modelSpec !== "scripted/test") throw new Error("unexpected");
 * ```
 */
export function startPrepared(
  prepared: Prepared,
  options: Pick<CliArgs, "tools" | "maxTurns">,
  more: Pick<DriverOptions, "runLoops" | "permission" | "placing" | "id"> = {},
): Driver {
  return startConversation({
    model: prepared.model,
    modelSpec: prepared.modelSpec,
    tools: prepared.setup.tools,
    systemPrompt: prepared.systemPrompt,
    cwd: prepared.setup.cwd,
    maxTurns: options.maxTurns,
    // Nobody answers unless the front end says who does: a rule that asks refuses.
    permission: prepared.policy,
    runOptions: prepared.runOptions,
    store: prepared.store,
    resumed: prepared.resumed,
    memory: prepared.memory,
    recallTool: !options.tools || options.tools.includes("recall"),
    ...more,
  });
}
