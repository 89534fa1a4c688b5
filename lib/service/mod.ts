/**
 * The agent as a service: {@link createAgentService} runs the agent on messages, each placed in
 * a run loop (one user goal), with runs that can be followed, joined and cancelled, saved
 * sessions and long-term memory; {@link createAgentHandler} serves the same over HTTP (JSON and
 * server-sent events, behind a bearer token) for `Deno.serve` or a server of your own.
 *
 * @example
 * ```ts
 * import { createAgentHandler, createAgentService, newServiceToken } from "@x/agent/service";
 * import { scriptedModel } from "@x/agent/testing";
 *
 * const service = createAgentService({ model: scriptedModel([{ text: "Done." }]) });
 * const run = await service.start({ message: "Tidy the README", complete: true });
 * const { result } = await run.done;
 * if (result?.text !== "Done.") throw new Error("unexpected");
 * await service.close();
 *
 * const token = newServiceToken();
 * const handler = createAgentHandler({ model: scriptedModel([{ text: "Up." }]), token });
 * const health = await handler(new Request("http://localhost/v1/health"));
 * if (JSON.stringify(await health.json()) !== '{"status":"ok"}') throw new Error("unexpected");
 * const runs = await handler(new Request("http://localhost/v1/runs"));
 * if (runs.status !== 401) throw new Error("a request without the token is refused");
 * await handler.close();
 * ```
 *
 * @module
 */

export { newServiceToken } from "./auth.ts";
export { type AgentHandler, type AgentHandlerOptions, createAgentHandler } from "./handler.ts";
export { type RunInfo, type RunListener, type RunSummary, ServiceRun } from "./run.ts";
export {
  type AgentService,
  type AgentServiceOptions,
  createAgentService,
  type Delivery,
  type RunRequest,
  ServiceError,
} from "./service.ts";
export type { ServiceEvent, ServiceNotice } from "./events.ts";
