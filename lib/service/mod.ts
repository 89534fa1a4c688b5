/**
 * The agent as an HTTP service: {@link createAgentHandler} for `Deno.serve` or a server of your
 * own, and {@link createAgentService} for the same without HTTP.
 *
 * @example
 * ```ts
 * import { createAgentHandler } from "./mod.ts";
 * import { scriptedModel } from "../scripted_model.ts";
 * const handler = createAgentHandler({ model: scriptedModel([{ text: "Up." }]) });
 * const health = await handler(new Request("http://localhost/v1/health"));
 * if (health.status !== 200) throw new Error("unexpected");
 * await handler.close();
 * ```
 *
 * @module
 */

export { checkAccess, isLoopback, type Refusal } from "./auth.ts";
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
export { sseResponse } from "./sse.ts";
