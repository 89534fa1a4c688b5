/**
 * What tokens cost. Prices may step up with the size of a request (long-context tiers), so a
 * cost is worked out per model call, from that call's own usage: a sum of several calls'
 * usage says nothing of how large each request was. {@link costMeter} prices each call of a
 * model as it finishes.
 *
 * @module
 */

import type { Model, ModelEvent, ModelRequest, Pricing } from "./model.ts";
import type { Usage } from "./usage.ts";

/** The prices of one tier: input, output and cache prices per million tokens. */
export type TierPrices = Omit<Pricing, "tiers">;

/**
 * The prices that apply to a model call whose request held `inputTokens` input tokens (cached
 * ones included): those of the tier with the highest threshold below `inputTokens`, else the
 * base prices. A tier's cache prices default to the base cache prices scaled as its input price
 * is (a cache read at a tenth of the input price stays at a tenth).
 *
 * @example
 * ```ts
 * import { pricesFor } from "./cost.ts";
 * const pricing = { input: 3, output: 15, tiers: [{ above: 200_000, input: 6, output: 22.5 }] };
 * if (pricesFor(pricing, 200_000).input !== 3) throw new Error("the threshold itself is base");
 * if (pricesFor(pricing, 200_001).output !== 22.5) throw new Error("past it, the tier");
 * const cached = { input: 1, output: 2, cacheRead: 0.1, tiers: [{ above: 10, input: 2, output: 4 }] };
 * if (pricesFor(cached, 11).cacheRead !== 0.2) throw new Error("the cache keeps its ratio");
 * ```
 */
export function pricesFor(pricing: Pricing, inputTokens: number): TierPrices {
  let tier: NonNullable<Pricing["tiers"]>[number] | undefined;
  for (const each of pricing.tiers ?? []) {
    if (inputTokens > each.above && (tier === undefined || each.above > tier.above)) tier = each;
  }
  if (!tier) {
    const { tiers: _, ...base } = pricing;
    return base;
  }
  // Cache prices a tier leaves out keep their ratio to the input price, as providers set them.
  const scale = pricing.input > 0 ? tier.input / pricing.input : 1;
  return {
    input: tier.input,
    output: tier.output,
    cacheRead: tier.cacheRead ?? (pricing.cacheRead ?? pricing.input) * scale,
    cacheWrite: tier.cacheWrite ?? (pricing.cacheWrite ?? pricing.input) * scale,
  };
}

/**
 * The cost in US dollars of one model call's `usage` at `pricing` (per million tokens). Cached
 * input is charged at the cache prices, the rest of the input at the input price; a tier
 * applies when the call's input tokens pass its threshold (see {@link pricesFor}). Price each
 * call on its own: the summed usage of several calls would choose the tier by their total.
 *
 * @example
 * ```ts
 * import { costOf } from "./cost.ts";
 * const usd = costOf(
 *   { inputTokens: 1_000_000, outputTokens: 100_000, cacheReadTokens: 500_000 },
 *   { input: 3, output: 15, cacheRead: 0.3 },
 * );
 * if (Math.abs(usd - (1.5 + 1.5 + 0.15)) > 1e-9) throw new Error(String(usd));
 * ```
 */
export function costOf(usage: Usage, pricing: Pricing): number {
  const prices = pricesFor(pricing, usage.inputTokens);
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  const fresh = Math.max(0, usage.inputTokens - read - write);
  return (
    fresh * prices.input +
    read * (prices.cacheRead ?? prices.input) +
    write * (prices.cacheWrite ?? prices.input) +
    usage.outputTokens * prices.output
  ) / 1_000_000;
}

/** Prices model calls one by one as they finish; see {@link costMeter}. */
export interface CostMeter {
  /**
   * `model`, each of its calls priced by its own usage when it finishes, at `pricing` (default
   * the meter's).
   */
  wrap(model: Model, pricing?: Pricing): Model;
  /** What the calls that finished since the last take cost, in US dollars. */
  take(): number;
}

/**
 * A meter of what model calls cost, each call priced by its own usage (so that a tier is
 * chosen by the size of each request, never by a sum). Every call that reports its usage is
 * counted, an attempt later retried included: the provider charges it.
 *
 * @example
 * ```ts
 * import { costMeter } from "./cost.ts";
 * import type { Model } from "./model.ts";
 * const model: Model = {
 *   provider: "example",
 *   id: "long",
 *   async *stream() {
 *     yield { type: "finish", reason: "stop", usage: { inputTokens: 300, outputTokens: 0 } };
 *   },
 * };
 * const meter = costMeter({ input: 1, output: 1, tiers: [{ above: 400, input: 10, output: 10 }] });
 * const priced = meter.wrap(model);
 * for (let i = 0; i < 2; i++) for await (const _ of priced.stream({ messages: [], tools: [] }));
 * // Two requests of 300 tokens: 600 in all, but neither passes 400.
 * if (Math.abs(meter.take() - 600 / 1e6) > 1e-12) throw new Error("unexpected");
 * if (meter.take() !== 0) throw new Error("a take starts again from zero");
 * ```
 */
export function costMeter(pricing: Pricing): CostMeter {
  let spent = 0;
  return {
    wrap(model: Model, own: Pricing = pricing): Model {
      const price = (step: IteratorResult<ModelEvent>): IteratorResult<ModelEvent> => {
        if (!step.done && step.value.type === "finish") spent += costOf(step.value.usage, own);
        return step;
      };
      return {
        provider: model.provider,
        id: model.id,
        info: model.info,
        // The model's own events, looked at as they pass: no step of its own per event.
        stream: (request: ModelRequest): AsyncIterable<ModelEvent> => ({
          [Symbol.asyncIterator](): AsyncIterator<ModelEvent> {
            const events = model.stream(request)[Symbol.asyncIterator]();
            return {
              next: () => events.next().then(price),
              return: (value?: unknown) =>
                events.return?.(value) ?? Promise.resolve({ done: true, value: undefined }),
              throw: (error?: unknown) =>
                events.throw ? events.throw(error) : Promise.reject(error),
            };
          },
        }),
      };
    },
    take(): number {
      const taken = spent;
      spent = 0;
      return taken;
    },
  };
}
