/**
 * Markdown for the terminal, as it streams: each piece of text is shown at once, wrapped at
 * word boundaries at the terminal's width, and when its line is complete the line is drawn again
 * with its markdown rendered (headings, emphasis, inline code, code blocks, lists, quotes,
 * links). The rows of a table are held until the table is complete, then drawn aligned.
 *
 * @module
 */

import { isTableRow, renderTable } from "./table.ts";
import { cells, wrapText } from "./wrap.ts";

const ESC = "\x1b[";
const RESET = `${ESC}0m`;

/** Options of {@link markdownStream}. */
export interface MarkdownStreamOptions {
  /** Writes to the terminal. */
  write(text: string): void;
  /** Render styles with ANSI codes (off: the text stays as written, only wrapped and aligned). */
  color: boolean;
  /** The terminal's width in columns (default 80). */
  columns?: () => number;
  /**
   * The terminal's height in rows (default: unlimited). A line that took more rows than the
   * screen has is left as it streamed: the rows above the screen cannot be drawn again.
   */
  rows?: () => number;
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
 * const md = markdownStream({ write: (t) => out += t, color: false, columns: () => 13 });
 * md.write("# Ti");
 * md.write("tle\nSome **bold** words");
 * md.end();
 * if (out !== "# Title\nSome **bold**\nwords\n") throw new Error(JSON.stringify(out));
 * ```
 */
export function markdownStream(options: MarkdownStreamOptions): MarkdownStream {
  const columns = () => Math.max(1, options.columns?.() ?? 80);
  const write = options.write;
  // The current line, as received, in pieces: joined once, when the line is complete.
  let parts: string[] = [];
  // What came of the current line while it was only spaces (held until a character shows).
  let blanks = "";
  // "start": only spaces so far (held); "flow": shown as it comes; "table": a row, held.
  let mode: "start" | "flow" | "table" = "start";
  let rows = 1; // the screen rows it takes
  let row = ""; // what is on the current screen row
  let col = 0; // the columns it takes
  let word = ""; // the word at the end of `row`
  let wordCol = 0; // the columns it takes
  let inFence = false;
  const table: string[] = [];

  /**
   * Writes text of the current line, breaking rows between words. Each piece costs the same
   * however long the line already is: only the current row is kept.
   */
  const flow = (text: string) => {
    const width = columns();
    let out = "";
    for (const [char, charWidth] of cells(text)) {
      const blank = char === " " || char === "\t";
      if (col + charWidth > width) {
        rows++;
        if (!blank && word && wordCol < col && wordCol + charWidth <= width) {
          // The word being written moves to the next row, whole.
          out += `\r${ESC}K${row.slice(0, row.length - word.length)}\n${word}`;
          row = word;
          col = wordCol;
        } else {
          out += "\n";
          row = "";
          col = 0;
          word = "";
          wordCol = 0;
          if (blank) continue;
        }
      }
      const drawn = char === "\t" ? " ".repeat(charWidth) : char;
      out += drawn;
      row += drawn;
      col += charWidth;
      word = blank ? "" : word + drawn;
      wordCol = blank ? 0 : wordCol + charWidth;
    }
    if (out) write(out);
  };
  const flushTable = () => {
    const lines = table.splice(0);
    const width = columns();
    const style = options.color ? renderInline : undefined;
    const drawn = renderTable(lines, { color: options.color, width, style });
    if (drawn) return write(drawn.map((text) => `${text}\n`).join(""));
    // Not a table after all: the lines as any other.
    for (const held of lines) {
      const text = options.color ? renderLine(held, false)[0] : held;
      write(`${wrapText(text, width).join("\n")}\n`);
    }
  };
  /** Takes a piece of the current line (no line break in it): shown, or held. */
  const take = (text: string) => {
    if (!text) return;
    parts.push(text);
    if (mode === "start") {
      blanks += text;
      // Only the new text can hold the line's first character.
      if (!/\S/.test(text)) return;
      if (!inFence && isTableRow(blanks)) {
        mode = "table";
        return;
      }
      if (table.length) flushTable();
      mode = "flow";
      text = blanks;
    }
    if (mode === "flow") flow(text);
  };
  /** The current line is complete. */
  const complete = () => {
    const line = parts.join("");
    if (mode === "table") table.push(line);
    else {
      if (table.length) flushTable();
      const [rendered, fence] = renderLine(line, inFence);
      // Go back over the raw rows and draw the line rendered (when they are all on the screen).
      if (mode === "flow" && options.color && rows <= (options.rows?.() ?? Infinity)) {
        const up = rows > 1 ? `${ESC}${rows - 1}A` : "";
        write(`\r${up}${ESC}J${wrapText(rendered, columns()).join("\n")}`);
      }
      inFence = fence;
      write("\n");
    }
    parts = [];
    blanks = "";
    mode = "start";
    rows = 1;
    row = "";
    col = 0;
    word = "";
    wordCol = 0;
  };

  return {
    write(piece) {
      // Carriage returns would draw over the line: lines end at "\n" alone.
      const text = piece.replaceAll("\r", "");
      let start = 0;
      for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", start)) {
        take(text.slice(start, at));
        complete();
        start = at + 1;
      }
      take(text.slice(start));
    },
    end() {
      if (parts.length) complete();
      if (table.length) flushTable();
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
  if (heading) return [_style("1;4", renderInline(heading[2])), false];
  if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) return [_style("2", "─".repeat(40)), false];
  const quote = /^(\s*)>\s?(.*)$/.exec(line);
  if (quote) {
    return [`${quote[1]}${_style("2", "│")} ${_style("3", renderInline(quote[2]))}`, false];
  }
  const bullet = /^(\s*)([-*+])\s+(.*)$/.exec(line);
  if (bullet) return [`${bullet[1]}${_style("36", "•")} ${renderInline(bullet[3])}`, false];
  const numbered = /^(\s*)(\d+[.)])\s+(.*)$/.exec(line);
  if (numbered) {
    return [`${numbered[1]}${_style("36", numbered[2])} ${renderInline(numbered[3])}`, false];
  }
  return [renderInline(line), false];
}

/**
 * Inline markdown, styled: code spans first (their content is left alone), then emphasis and
 * links.
 *
 * @example
 * ```ts
 * import { renderInline } from "./markdown.ts";
 * if (renderInline("`a` *b*") !== "\x1b[36ma\x1b[0m \x1b[3mb\x1b[0m") throw new Error("unexpected");
 * ```
 */
export function renderInline(text: string): string {
  return text.split(/(`[^`]+`)/).map((part, i) => {
    if (i % 2 === 1) return _style("36", part.slice(1, -1));
    // Links first, their labels and URLs holding no bracket of their kind: a search from each
    // "[" stops at the next, so a line of them costs its length, not its length squared.
    return part
      .replace(/\[([^[\]]+)\]\(([^()\s]+)\)/g, (_, label, url) => `${label} ${_style("2;4", url)}`)
      .replace(/\*\*([^*]+)\*\*|__([^_]+)__/g, (_, a, b) => _style("1", a ?? b))
      .replace(
        /(^|[^*\w])\*([^*\s][^*]*)\*(?!\*)|(^|\W)_([^_\s][^_]*)_(?!\w)/g,
        (_, p1, a, p2, b) => `${p1 ?? p2}${_style("3", a ?? b)}`,
      );
  }).join("");
}

function _style(code: string, text: string): string {
  return `${ESC}${code}m${text}${RESET}`;
}
