/**
 * Test doubles for agents: a scripted model that plays answers from a script, loopback
 * servers that speak the OpenAI Chat Completions, OpenAI Responses and Anthropic Messages
 * streaming formats (with real servers' habits and faults), and an in-memory file system for
 * tools.
 *
 * @example
 * ```ts
 * import { Agent } from "@x/agent";
 * import { scriptedModel } from "@x/agent/testing";
 * const agent = new Agent({ model: scriptedModel([{ text: "Paris" }]) });
 * const result = await agent.run("Capital of France?");
 * if (result.text !== "Paris") throw new Error("unexpected");
 * ```
 *
 * @module
 */

export {
  type ScriptedModel,
  scriptedModel,
  type ScriptedModelOptions,
  type ScriptedStep,
  type ScriptedToolCall,
  type ScriptedTurn,
} from "./scripted_model.ts";
export {
  type MockHabits,
  type MockReply,
  type MockRequest,
  type MockServer,
  type MockServerOptions,
  type MockToolCall,
  startMockOpenAIServer,
} from "./mock_openai_server.ts";
export {
  type MockAnthropicEvent,
  type MockAnthropicReply,
  type MockAnthropicServer,
  type MockAnthropicServerOptions,
  type MockAnthropicThinking,
  type MockAnthropicToolCall,
  type MockAnthropicUsage,
  startMockAnthropicServer,
} from "./mock_anthropic_server.ts";
export {
  type MockResponsesError,
  type MockResponsesHabits,
  type MockResponsesReply,
  type MockResponsesRequest,
  type MockResponsesServer,
  type MockResponsesServerOptions,
  type MockResponsesToolCall,
  startMockResponsesServer,
} from "./mock_responses_server.ts";
export { type MemoryFs, memoryFs } from "./memory_fs.ts";
export {
  hashedEmbedding,
  type MockEmbeddingsRequest,
  type MockEmbeddingsServer,
  type MockEmbeddingsServerOptions,
  startMockEmbeddingsServer,
} from "./mock_embeddings_server.ts";
