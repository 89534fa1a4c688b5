/**
 * Markdown tables for the terminal: columns aligned as the delimiter row says, long cells
 * wrapped inside their column to fit the terminal's width; drawn with box lines in colour, as
 * an aligned pipe table without.
 *
 * @module
 */

import stringWidth from "string-width";
import { wrapText } from "./wrap.ts";

/** Options of {@link renderTable}. */
export interface TableOptions {
  /** ANSI colours: box lines and a bold header; without, a plain pipe table. */
  color: boolean;
  /** The terminal's width in columns. */
  width: number;
  /** Styles a cell's text (inline markdown); default: as written. */
  style?: (text: string) => string;
}

type _Align = "left" | "right" | "center";

/** The narrowest a column is made to fit the terminal. */
const MIN_COLUMN = 6;

/**
 * Whether a line of markdown is a row of a table (it starts with `|`).
 *
 * @example
 * ```ts
 * import { isTableRow } from "./table.ts";
 * if (!isTableRow("| a | b |") || isTableRow("a | b")) throw new Error("unexpected");
 * ```
 */
export function isTableRow(line: string): boolean {
  return /^\s*\|/.test(line);
}

/**
 * Draws the lines of a markdown table (header, delimiter row, body rows) as rows of the
 * terminal; undefined when the lines are not a table. A table too wide for the terminal has
 * its cells wrapped; one that cannot fit even so is drawn as one `header: value` block per row.
 *
 * @example
 * ```ts
 * import { renderTable } from "./table.ts";
 * const rows = renderTable(["| Name | Size |", "|---|---:|", "| a.txt | 12 |"], {
 *   color: false,
 *   width: 80,
 * });
 * if (rows?.join("\n") !== "| Name  | Size |\n|-------|------|\n| a.txt |   12 |") {
 *   throw new Error(rows?.join("\n"));
 * }
 * ```
 */
export function renderTable(lines: readonly string[], options: TableOptions): string[] | undefined {
  if (lines.length < 2) return undefined;
  const header = _cells(lines[0]);
  const delimiter = _cells(lines[1]);
  if (
    delimiter.length !== header.length || !delimiter.every((cell) => /^:?-+:?$/.test(cell))
  ) return undefined;
  const align: _Align[] = delimiter.map((cell) =>
    cell.endsWith(":") ? (cell.startsWith(":") ? "center" : "right") : "left"
  );
  const paint = (code: string, text: string) =>
    options.color ? `\x1b[${code}m${text}\x1b[0m` : text;
  const style = options.style ?? ((text: string) => text);
  const head = header.map((cell) => paint("1", style(cell)));
  const body = lines.slice(2).map((line) => {
    const cells = _cells(line);
    return header.map((_, index) => style(cells[index] ?? ""));
  });

  // The widest cell of each column (a loop: a table may have more rows than a call takes
  // arguments).
  const natural = head.map((cell) => Math.max(1, stringWidth(cell)));
  for (const row of body) {
    for (const [index, cell] of row.entries()) {
      natural[index] = Math.max(natural[index], stringWidth(cell));
    }
  }
  const widths = _fit(natural, options.width - (3 * header.length + 1));
  if (!widths) return _records(head, body, options.width);

  const bar = paint("2", options.color ? "│" : "|");
  const draw = (row: string[]): string[] => {
    const wrapped = row.map((cell, index) => wrapText(cell, widths[index]));
    const height = Math.max(...wrapped.map((cell) => cell.length));
    return Array.from(
      { length: height },
      (_, line) =>
        `${bar} ${
          wrapped.map((cell, index) => _pad(cell[line] ?? "", widths[index], align[index]))
            .join(` ${bar} `)
        } ${bar}`,
    );
  };
  const rule = (left: string, middle: string, right: string, line: string) =>
    paint("2", `${left}${widths.map((width) => line.repeat(width + 2)).join(middle)}${right}`);
  if (!options.color) return [...draw(head), rule("|", "|", "|", "-"), ...body.flatMap(draw)];
  return [
    rule("┌", "┬", "┐", "─"),
    ...draw(head),
    rule("├", "┼", "┤", "─"),
    ...body.flatMap(draw),
    rule("└", "┴", "┘", "─"),
  ];
}

/** The cells of a row: split at the pipes not escaped, `\|` read as a pipe. */
function _cells(line: string): string[] {
  let text = line.trim();
  if (text.startsWith("|")) text = text.slice(1);
  if (text.endsWith("|") && !text.endsWith("\\|")) text = text.slice(0, -1);
  return text.split(/(?<!\\)\|/).map((cell) => cell.trim().replaceAll("\\|", "|"));
}

/**
 * Column widths within `room`: the widest columns give up room first, none below
 * {@link MIN_COLUMN}; undefined when even that does not fit.
 */
function _fit(natural: number[], room: number): number[] | undefined {
  const widths = [...natural];
  const least = natural.map((width) => Math.min(width, MIN_COLUMN));
  if (least.reduce((a, b) => a + b, 0) > room) return undefined;
  let total = widths.reduce((a, b) => a + b, 0);
  while (total > room) {
    const widest = widths.indexOf(Math.max(...widths));
    widths[widest]--;
    total--;
  }
  return widths;
}

/** A table too wide for any columns: each row as `header: value` lines, a blank line between. */
function _records(head: string[], body: string[][], width: number): string[] {
  return body.flatMap((row, index) => [
    ...(index > 0 ? [""] : []),
    ...row.flatMap((cell, column) => wrapText(`${head[column]}: ${cell}`, width)),
  ]);
}

function _pad(text: string, width: number, align: _Align): string {
  const room = Math.max(0, width - stringWidth(text));
  if (align === "right") return `${" ".repeat(room)}${text}`;
  if (align === "center") {
    const left = Math.floor(room / 2);
    return `${" ".repeat(left)}${text}${" ".repeat(room - left)}`;
  }
  return `${text}${" ".repeat(room)}`;
}
