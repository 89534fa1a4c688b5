/**
 * Markdown for the terminal, as it streams: each piece of text is shown at once, and when its
 * line is complete the line is drawn again with its markdown rendered (headings, emphasis,
 * inline code, code blocks, lists, quotes, links).
 *
 * @module
 */

import stringWidth from "string-width";

const ESC = "\x1b[";
const RESET = `${ESC}0m`;

/** Options of {@link markdownStream}. */
export interface MarkdownStreamOptions {
  /** Writes to the terminal. */
  write(text: string): void;
  /** Render styles with ANSI codes (off: the text is written as it comes). */
  color: boolean;
  /** The terminal's width in columns, to redraw wrapped lines (default 80). */
  columns?: () => number;
}

/** A streaming markdown renderer. */
export interface MarkdownStream {
  /** Shows a piece of the answer. */
  write(text: string): void;
  /** Ends the answer: the last line is rendered and the cursor left on a new line. */
  end(): void;
}

/**
 * Creates a streaming markdown renderer.
 *
 * @example
 * ```ts
 * import { markdownStream } from "./markdown.ts";
 * let out = "";
 * const md = markdownStream({ write: (t) => out += t, color: false });
 * md.write("# Ti");
 * md.write("tle\nSome **bold**");
 * md.end();
 * if (out !== "# Title\nSome **bold**\n") throw new Error(JSON.stringify(out));
 * ```
 */
export function markdownStream(options: MarkdownStreamOptions): MarkdownStream {
  const columns = options.columns ?? (() => 80);
  let line = ""; // the current, unfinished line as written so far
  let inFence = false;

  const finish = (): void => {
    if (options.color) {
      // Go back over the raw line (it may have wrapped) and draw it rendered.
      const rows = Math.max(1, Math.ceil(stringWidth(line) / Math.max(1, columns())));
      const up = rows > 1 ? `${ESC}${rows - 1}A` : "";
      const [rendered, fence] = renderLine(line, inFence);
      inFence = fence;
      options.write(`\r${up}${ESC}J${rendered}`);
    }
    options.write("\n");
    line = "";
  };

  return {
    write(text) {
      let start = 0;
      for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", start)) {
        const piece = text.slice(start, at);
        options.write(piece);
        line += piece;
        finish();
        start = at + 1;
      }
      const rest = text.slice(start);
      if (rest) {
        options.write(rest);
        line += rest;
      }
    },
    end() {
      if (line) finish();
      inFence = false;
    },
  };
}

/**
 * One complete line of markdown, styled for the terminal. Gives the styled line and whether a
 * code block is open after it.
 *
 * @example
 * ```ts
 * import { renderLine } from "./markdown.ts";
 * const [styled] = renderLine("Use `deno` **now**", false);
 * if (!styled.includes("\x1b[1mnow")) throw new Error(JSON.stringify(styled));
 * ```
 */
export function renderLine(line: string, inFence: boolean): [string, boolean] {
  if (/^\s*(```|~~~)/.test(line)) return [_style("2", line), !inFence];
  if (inFence) return [_style("36", line), true];
  const heading = /^(#{1,6})\s+(.*)$/.exec(line);
  if (heading) return [_style("1;4", _inline(heading[2])), false];
  if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) return [_style("2", "─".repeat(40)), false];
  const quote = /^(\s*)>\s?(.*)$/.exec(line);
  if (quote) return [`${quote[1]}${_style("2", "│")} ${_style("3", _inline(quote[2]))}`, false];
  const bullet = /^(\s*)([-*+])\s+(.*)$/.exec(line);
  if (bullet) return [`${bullet[1]}${_style("36", "•")} ${_inline(bullet[3])}`, false];
  const numbered = /^(\s*)(\d+[.)])\s+(.*)$/.exec(line);
  if (numbered) {
    return [`${numbered[1]}${_style("36", numbered[2])} ${_inline(numbered[3])}`, false];
  }
  return [_inline(line), false];
}

/** Inline markdown: code spans first (their content is left alone), then emphasis and links. */
function _inline(text: string): string {
  return text.split(/(`[^`]+`)/).map((part, i) => {
    if (i % 2 === 1) return _style("36", part.slice(1, -1));
    return part
      .replace(/\*\*([^*]+)\*\*|__([^_]+)__/g, (_, a, b) => _style("1", a ?? b))
      .replace(
        /(^|[^*\w])\*([^*\s][^*]*)\*(?!\*)|(^|\W)_([^_\s][^_]*)_(?!\w)/g,
        (_, p1, a, p2, b) => `${p1 ?? p2}${_style("3", a ?? b)}`,
      )
      .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_, label, url) => `${label} ${_style("2;4", url)}`);
  }).join("");
}

function _style(code: string, text: string): string {
  return `${ESC}${code}m${text}${RESET}`;
}
