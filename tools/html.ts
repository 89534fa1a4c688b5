/**
 * HTML to markdown and to plain text, with the converter loaded on first use so that starting
 * the agent does not pay for it.
 *
 * @module
 */

import { loadLazy } from "../lib/lazy/load.ts";

type _Converter = typeof import("node-html-markdown").NodeHtmlMarkdown;

let _loading: Promise<_Converter> | undefined;

function _converter(): Promise<_Converter> {
  return _loading ??= loadLazy("node_html_markdown").then((module) => module.NodeHtmlMarkdown);
}

/**
 * Converts an HTML page to markdown, leaving out the elements named in `ignore` (upper case).
 *
 * @example
 * ```ts
 * import { htmlToMarkdown } from "./html.ts";
 * const markdown = await htmlToMarkdown("<h1>Title</h1><p>Some <b>bold</b> text</p>");
 * if (markdown !== "# Title\n\nSome **bold** text") throw new Error("unexpected");
 * ```
 */
export async function htmlToMarkdown(html: string, ignore: string[] = []): Promise<string> {
  const converter = await _converter();
  return converter.translate(html, { ignore, maxConsecutiveNewlines: 2 }).trim();
}

/**
 * The plain text of an HTML fragment: tags dropped, entities decoded, whitespace collapsed.
 *
 * @example
 * ```ts
 * import { htmlToText } from "./html.ts";
 * if (await htmlToText("Fish &amp; <strong>chips</strong>") !== "Fish & chips") throw new Error("unexpected");
 * ```
 */
export async function htmlToText(fragment: string): Promise<string> {
  if (!/[<&]/.test(fragment)) return fragment.replace(/\s+/g, " ").trim();
  const converter = await _converter();
  return converter.translate(fragment.replace(/<[^>]*>/g, ""))
    .replace(/\\([\\`*_{}[\]()<>#+\-.!|~])/g, "$1")
    .replace(/\s+/g, " ")
    .trim();
}
