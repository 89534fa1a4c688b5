/**
 * `npm:node-html-markdown`, loaded with `loadLazy` (`./load.ts`) when a page is first turned
 * into markdown or text.
 *
 * @module
 */

export { NodeHtmlMarkdown } from "node-html-markdown";
