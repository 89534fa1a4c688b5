/**
 * `npm:openai`, loaded with `loadLazy` (`./load.ts`) when a model of an OpenAI-compatible
 * provider, or the embeddings of memory, first makes a client: a run on Anthropic's API alone
 * never downloads it. The CLI starts loading it early, while the run is set up.
 *
 * @module
 */

export * from "openai";
export { default } from "openai";
