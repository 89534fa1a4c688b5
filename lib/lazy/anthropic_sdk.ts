/**
 * `npm:@anthropic-ai/sdk`, loaded with {@link loadLazy} (`./load.ts`) when an Anthropic model
 * first sends a request.
 *
 * @module
 */

export * from "@anthropic-ai/sdk";
export { default } from "@anthropic-ai/sdk";
