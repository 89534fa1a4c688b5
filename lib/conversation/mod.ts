/**
 * A conversation with the agent, driven as every front end drives it (the CLI's headless run,
 * its interactive session and the HTTP service): {@link startConversation} runs each message in
 * a run loop with long-term memory, under one permission policy, and records what the run adds
 * to a saved session as the events stream. Resumed from a saved session, it goes on where that
 * one stopped.
 *
 * @example
 * ```ts
 * import { startConversation } from "@x/agent/conversation";
 * import { defineTool } from "@x/agent";
 * import { parseRule } from "@x/agent/permissions";
 * import { memorySessionStore } from "@x/agent/session";
 * import { scriptedModel } from "@x/agent/testing";
 * import { z } from "zod";
 *
 * let ran = false;
 * const bash = defineTool({
 *   name: "bash",
 *   description: "Runs a command",
 *   parameters: z.object({ command: z.string() }),
 *   execute: () => (ran = true, "removed"),
 * });
 * const store = memorySessionStore();
 * const driver = startConversation({
 *   model: scriptedModel([
 *     { toolCalls: [{ name: "bash", input: { command: "rm -rf build" } }] },
 *     { text: "I may not remove it." },
 *   ]),
 *   tools: [bash],
 *   store,
 *   // No one to ask: the rule refuses.
 *   permission: { rules: [parseRule("bash(rm *)", "deny", "--deny")], mode: () => "default", roots: ["."] },
 * });
 * const types: string[] = [];
 * const run = driver.send("Clean up");
 * let step = await run.next();
 * for (; !step.done; step = await run.next()) types.push(step.value.type);
 * await driver.close();
 * const saved = await store.load(driver.conversation.id);
 * if (ran || step.value.text !== "I may not remove it." || saved.messages.length !== 4) {
 *   throw new Error("unexpected");
 * }
 * if (types[0] !== "start" || types[1] !== "run_loop_start" || types.at(-1) !== "result") {
 *   throw new Error(types.join());
 * }
 * ```
 *
 * @module
 */

export { type Conversation, conversation, type ConversationOptions } from "./conversation.ts";
export {
  type Driver,
  type DriverOptions,
  type DriverRunOptions,
  type SendOptions,
  startConversation,
} from "./driver.ts";
