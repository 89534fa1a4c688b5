/**
 * The agent as an HTTP service: {@link createAgentHandler} for `Deno.serve` or a server of your
 * own, and {@link createAgentService} for the same without HTTP.
 *
 * @example
 * ```ts
 * import { createAgentHandler, newServiceToken } from "./mod.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
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

export { checkAccess, isLoopback, newServiceToken, type Refusal } from "./auth.ts";
export { type AgentHandler, type AgentHandlerOptions, createAgentHandler } from "./handler.ts";
export { openApiDocument } from "./openapi.ts";
export { type RunInfo, type RunListener, type RunSummary, ServiceRun } from "./run.ts";
export { runLoopMessageSchema, type RunRequestBody, runRequestSchema } from "./schemas.ts";
export {
  type AgentService,
  type AgentServiceOptions,
  createAgentService,
  type Delivery,
  type RunRequest,
  ServiceError,
} from "./service.ts";
export { listedSession, loadListedSession, MIN_SESSION_PREFIX } from "./session_lookup.ts";
export { sseResponse } from "./sse.ts";
