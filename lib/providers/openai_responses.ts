/**
 * The OpenAI Responses provider: `POST {baseURL}/responses` through `npm:openai`, streamed.
 * OpenAI's reasoning models (o-series, gpt-5, codex) keep their reasoning from one turn to the
 * next only through this API: each reasoning item comes back encrypted and goes back, as it
 * came, with the next request. Nothing is stored at the server (`store: false`).
 *
 * @module
 */

import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import { ProviderError } from "../errors.ts";
import type { Model, ModelEvent, ModelRequest } from "../model.ts";
import type { ProviderModelOptions } from "./model_options.ts";
import { openaiConnection, openaiErrorReading } from "./openai_client.ts";
import { RESPONSES_EVENTS_READ, responsesError, responsesReader } from "./responses_events.ts";
import {
  encryptedReasoningOf,
  responsesOrigin,
  type ResponsesReasoning,
  responsesRequest,
} from "./responses_request.ts";
import { sdkError, sdkResponse } from "./sdk_errors.ts";
import { eventJson, readSse } from "./sse.ts";

/**
 * Options of {@link openaiResponsesModel}; `provider` defaults to `openai`, `keyEnv` to
 * `OPENAI_API_KEY`.
 */
export interface OpenAIResponsesModelOptions extends ProviderModelOptions {
  /** The model id at the server, e.g. `gpt-5`. */
  model: string;
  /** The API root including `/v1` (default OpenAI's). */
  baseURL?: string;
  /**
   * How the model reasons: its effort, and whether to stream a summary of the reasoning. Give it
   * (`{}` will do) for a reasoning model: only then is its encrypted reasoning asked for and sent
   * back; models that do not reason refuse that.
   */
  reasoning?: ResponsesReasoning;
  /** Extra fields merged into every request body. */
  extraBody?: Record<string, unknown>;
}

/**
 * A model served over the OpenAI Responses API. Its reasoning goes back to it on each turn;
 * the provider data of its parts is named by the origin `openai-responses:<provider>:<model>`,
 * and goes back only to a model of that origin.
 *
 * @example
 * ```ts
 * import { Agent } from "../../mod.ts";
 * import { openaiResponsesModel } from "./openai_responses.ts";
 * import { startMockResponsesServer } from "../testing/mock_responses_server.ts";
 * await using server = startMockResponsesServer({ replies: [{ reasoning: ["Greet."], text: "Hello." }] });
 * const model = openaiResponsesModel({
 *   model: "gpt-5",
 *   baseURL: server.url,
 *   apiKey: "sk-test",
 *   reasoning: { summary: "auto" }, // a reasoning model: its reasoning goes back each turn
 * });
 * const result = await new Agent({ model }).run("Say hello");
 * if (result.text !== "Hello." || model.provider !== "openai") throw new Error("unexpected");
 * ```
 */
export function openaiResponsesModel(options: OpenAIResponsesModelOptions): Model {
  const { where, connect, idleTimeoutMs } = openaiConnection(options);
  const { provider } = where;
  const origin = responsesOrigin(provider, options.model);
  const style = { origin, reasoning: options.reasoning, extraBody: options.extraBody };
  const stale = new Set<string>();

  return {
    provider,
    id: options.model,
    info: options.info,
    async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
      const { sdk, client } = await connect();
      const reading = openaiErrorReading(
        sdk,
        (error) => responsesError(provider, error.error ?? { message: error.message }),
      );
      const failures = {
        reading,
        where,
        signal: request.signal,
        path: "/responses",
        notFound:
          "and that the server has the Responses API (or choose Chat Completions: api openai)",
      };
      const send = () => {
        const body = responsesRequest(options.model, request, { ...style, stale });
        const sent = encryptedReasoningOf(body);
        const response = sdkResponse(
          () => client.responses.create(body, { signal: request.signal }),
          failures,
        );
        return { sent, response };
      };
      const first = send();
      let response = first.response;
      try {
        await response;
      } catch (error) {
        // Reasoning encrypted for another key, organisation or server (the conversation moved)
        // cannot be read here: it is left out from now on, and the request goes again without it.
        if (first.sent.length === 0 || !isUnreadableReasoning(error)) throw error;
        for (const id of first.sent) stale.add(id);
        response = send().response;
      }
      const body = await response;
      const reader = responsesReader(provider, origin);
      let events = 0;
      try {
        if ((body.headers.get("content-type") ?? "").includes("application/json")) {
          // The server ignored `stream: true` and sent the whole response (or an error) at once.
          const whole = await body.json();
          if (whole?.error && whole?.object !== "response") {
            throw responsesError(provider, whole.error);
          }
          events = 1;
          yield* reader.readWhole(whole);
        } else {
          for await (const event of readSse(body.body, { idleTimeoutMs, provider })) {
            // An event named as OpenAI names them, and nothing the reader takes: not parsed.
            const name = event.event;
            if (name?.startsWith("response.") && !RESPONSES_EVENTS_READ.has(name)) {
              events++;
              continue;
            }
            const data = eventJson(event.data.trim());
            if (event.event === "error" && (data as { type?: unknown })?.type !== "error") {
              throw responsesError(provider, (data as { error?: unknown })?.error ?? data);
            }
            if (data === undefined || data === null || typeof data !== "object") continue;
            events++;
            yield* reader.read(data as ResponseStreamEvent);
          }
        }
      } catch (error) {
        throw sdkError(error, failures);
      }
      if (events === 0) {
        throw new ProviderError(`${provider} sent an empty stream`, { retryable: true });
      }
      const end = reader.end();
      if (!end.finished) {
        throw new ProviderError(`${provider} cut the stream before the answer finished`, {
          retryable: true,
        });
      }
      yield* end.events;
    },
  };
}

/**
 * Whether `error` is the server's refusal of reasoning it cannot decrypt (encrypted for another
 * key, organisation or server).
 *
 * @example
 * ```ts
 * import { ProviderError } from "../errors.ts";
 * import { isUnreadableReasoning } from "./openai_responses.ts";
 * const error = new ProviderError(
 *   "openai failed with 400: The encrypted content for item rs_1 could not be verified.",
 *   { status: 400 },
 * );
 * if (!isUnreadableReasoning(error)) throw new Error("unexpected");
 * ```
 */
export function isUnreadableReasoning(error: unknown): boolean {
  if (!(error instanceof ProviderError) || error.status !== 400) return false;
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  return code === "invalid_encrypted_content" ||
    /encrypted content .*(could not be (verified|decrypted)|is invalid)/i.test(error.message);
}
