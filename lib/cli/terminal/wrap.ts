/**
 * Text cut into rows of the terminal's width at word boundaries, styles (ANSI colour codes)
 * taking no room and going on across the rows they span.
 *
 * @module
 */

import stringWidth from "string-width";

const RESET = "\x1b[0m";
// deno-lint-ignore no-control-regex -- style codes start with ESC
const STYLE = /(\x1b\[[0-9;]*m)/;
const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });
const ASCII = /^[\t\x20-\x7e]*$/;

/**
 * The characters of `text` as the terminal draws them (grapheme clusters), each with the
 * columns it takes.
 *
 * @example
 * ```ts
 * import { cells } from "./wrap.ts";
 * const widths = [...cells("a界")].map(([, width]) => width);
 * if (widths.join() !== "1,2") throw new Error(widths.join());
 * ```
 */
export function* cells(text: string): Generator<[string, number]> {
  // Printable ASCII, most text: one column a character, no segmenting needed.
  if (ASCII.test(text)) {
    for (const char of text) yield [char, char === "\t" ? 4 : 1];
    return;
  }
  for (const { segment } of graphemes.segment(text)) {
    yield [segment, segment === "\t" ? 4 : stringWidth(segment)];
  }
}

/**
 * Cuts one line of (possibly styled) text into rows of at most `width` columns, breaking
 * between words; a word longer than a row is cut. The line's indentation is kept on its first
 * row; spaces where it breaks are dropped. Each row ends its styles and the next one takes them
 * up again.
 *
 * @example
 * ```ts
 * import { wrapText } from "./wrap.ts";
 * const rows = wrapText("the quick brown fox jumps", 10);
 * if (rows.join("|") !== "the quick|brown fox|jumps") throw new Error(rows.join("|"));
 * const styled = wrapText("\x1b[1mbold words\x1b[0m here", 6);
 * if (styled[1] !== "\x1b[1mwords\x1b[0m") throw new Error(JSON.stringify(styled));
 * ```
 */
export function wrapText(text: string, width: number): string[] {
  width = Math.max(1, width);
  const rows: string[] = [];
  let row = "";
  let col = 0;
  let styles: string[] = [];
  let spaces = "";
  const newRow = () => {
    rows.push(styles.length ? `${row}${RESET}` : row);
    row = styles.join("");
    col = 0;
    spaces = "";
  };
  const style = (code: string) => {
    row += code;
    styles = code === RESET ? [] : [...styles, code];
  };
  for (const token of _tokens(text)) {
    if (token.kind === "space") {
      // Indentation stays; spaces between words wait for the next word.
      if (rows.length === 0 && col === 0) {
        row += token.text;
        col += token.width;
      } else spaces += token.text;
      continue;
    }
    const gap = stringWidth(spaces);
    if (col > 0 && col + gap + token.width > width) newRow();
    else if (col + gap <= width) {
      row += spaces;
      col += gap;
    }
    spaces = "";
    for (const part of token.parts) {
      if (part.startsWith("\x1b")) {
        style(part);
        continue;
      }
      const partWidth = stringWidth(part);
      if (col > 0 && col + partWidth > width) newRow();
      row += part;
      col += partWidth;
    }
  }
  rows.push(styles.length ? `${row}${RESET}` : row);
  return rows;
}

type _Word = { kind: "word"; parts: string[]; width: number };
type _Token = { kind: "space"; text: string; width: number } | _Word;

/** Runs of spaces, and words: their characters and style codes, in order. */
function _tokens(text: string): _Token[] {
  const tokens: _Token[] = [];
  let word: _Word | undefined;
  const current = (): _Word => {
    if (!word) tokens.push(word = { kind: "word", parts: [], width: 0 });
    return word;
  };
  for (const piece of text.split(STYLE)) {
    if (piece.startsWith("\x1b[")) {
      current().parts.push(piece);
      continue;
    }
    for (const [char, charWidth] of cells(piece)) {
      if (char === " " || char === "\t") {
        const blank = " ".repeat(charWidth);
        const last = tokens.at(-1);
        if (last?.kind === "space") {
          last.text += blank;
          last.width += charWidth;
        } else tokens.push({ kind: "space", text: blank, width: charWidth });
        word = undefined;
        continue;
      }
      current().parts.push(char);
      current().width += charWidth;
    }
  }
  return tokens;
}
