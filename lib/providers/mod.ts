/**
 * The models of the providers: {@link openaiModel} for OpenAI's Chat Completions API and every
 * server that speaks it (vLLM, llama.cpp, Ollama, OpenRouter, …), {@link openaiResponsesModel}
 * for OpenAI's Responses API (its reasoning models keep their reasoning across turns there),
 * {@link anthropicModel} for Anthropic's Messages API, and {@link resolveModel}, which turns a
 * `provider/model` name into a `Model` with the provider's API root, key and what is known of
 * the model. Each is a `Model` the loop calls; nothing of a provider's wire format reaches the
 * loop.
 *
 * @example
 * ```ts
 * import { Agent } from "@x/agent";
 * import { openaiModel, parseModelSpec, resolveModel } from "@x/agent/providers";
 * import { startMockOpenAIServer } from "@x/agent/testing";
 *
 * await using server = startMockOpenAIServer({ replies: [{ text: "Hello." }] });
 * const model = openaiModel({ model: "gpt-4.1-mini", baseURL: server.url, apiKey: "sk-test" });
 * const result = await new Agent({ model }).run("Say hello");
 * if (result.text !== "Hello.") throw new Error("unexpected");
 *
 * const named = resolveModel("ollama/qwen3", { env: () => undefined });
 * if (named.provider !== "ollama" || parseModelSpec("openai/gpt-4.1").model !== "gpt-4.1") {
 *   throw new Error("unexpected");
 * }
 * ```
 *
 * @module
 */

export { openaiModel, type OpenAIModelOptions } from "./openai.ts";
export { OPENAI_BASE_URL } from "./openai_client.ts";
export type { ChatRequestStyle } from "./openai_request.ts";
export { openaiResponsesModel, type OpenAIResponsesModelOptions } from "./openai_responses.ts";
export type { ResponsesReasoning } from "./responses_request.ts";
export { ANTHROPIC_BASE_URL, anthropicModel, type AnthropicModelOptions } from "./anthropic.ts";
export type { ProviderModelOptions } from "./model_options.ts";
export {
  MissingKeyError,
  type ModelOverride,
  parseModelSpec,
  PROVIDER_NAMES,
  type ProviderConfig,
  resolveModel,
  type ResolveModelOptions,
} from "./resolve.ts";
export { PROVIDER_APIS, type ProviderApi } from "./presets.ts";
