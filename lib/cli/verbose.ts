/**
 * `--verbose`: each model request's size, timing and token counts, printed to stderr.
 *
 * @module
 */

import type { Model, ModelEvent, ModelRequest } from "../model.ts";

/**
 * Wraps a model so that every call reports its request size, time to first event, total time
 * and tokens through `log`. Everything else of the model is kept: its `info` (prices, context
 * window) still prices the run and sizes compaction.
 *
 * @example
 * ```ts
 * import { verboseModel } from "./verbose.ts";
 * import { scriptedModel } from "../testing/scripted_model.ts";
 * const lines: string[] = [];
 * const model = verboseModel(scriptedModel([{ text: "hi" }]), (line) => lines.push(line));
 * for await (const _ of model.stream({ messages: [], tools: [] })) {
 *   // read to the end
 * }
 * if (lines.length !== 2 || !lines[1].includes("stop")) throw new Error("unexpected");
 * ```
 */
export function verboseModel(model: Model, log: (line: string) => void): Model {
  let calls = 0;
  return {
    ...model,
    provider: model.provider,
    id: model.id,
    info: model.info,
    async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
      const call = ++calls;
      const bytes = JSON.stringify([request.system, request.messages, request.tools]).length;
      log(
        `[request ${call}] ${model.provider}/${model.id}: ` +
          `${_counted(request.messages.length, "message")}, ` +
          `${_counted(request.tools.length, "tool")}, ${(bytes / 1024).toFixed(1)} KiB`,
      );
      const started = performance.now();
      let first: number | undefined;
      const elapsed = () => Math.round(performance.now() - started);
      try {
        for await (const event of model.stream(request)) {
          first ??= performance.now() - started;
          if (event.type === "finish") {
            const { inputTokens, outputTokens, cacheReadTokens } = event.usage;
            const cached = cacheReadTokens ? ` (${cacheReadTokens} cached)` : "";
            log(
              `[response ${call}] ${event.reason} after ${elapsed()} ms (first event ` +
                `${Math.round(first)} ms): ${inputTokens} in${cached} / ${outputTokens} out tokens`,
            );
          }
          yield event;
        }
      } catch (error) {
        log(`[response ${call}] failed after ${elapsed()} ms: ${(error as Error).message}`);
        throw error;
      }
    },
  };
}

/** `1 tool`, `2 tools`. */
function _counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
