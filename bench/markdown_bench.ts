/**
 * The terminal's markdown renderer on long answers: the cost of each piece streamed must not
 * grow with the line it lands on, nor a table's drawing with its number of rows.
 */

import { markdownStream } from "../lib/cli/terminal/markdown.ts";
import { renderTable } from "../lib/cli/terminal/table.ts";

/** `text` in pieces of `size` characters, as a model streams it. */
function pieces(text: string, size: number): string[] {
  return Array.from(
    { length: Math.ceil(text.length / size) },
    (_, i) => text.slice(i * size, (i + 1) * size),
  );
}

const words = Array.from({ length: 80_000 }, (_, i) => `word${i % 10}`).join(" ");
const LONG_LINE = pieces(words.slice(0, 400_000), 4);
const LINES = pieces(
  Array.from({ length: 5_000 }, (_, i) => `line ${i}: ${"text ".repeat(15)}`).join("\n"),
  4,
);

for (const color of [false, true]) {
  const style = color ? "colour" : "NO_COLOR";
  Deno.bench(`markdown: one 400,000-character line in 4-character pieces (${style})`, {
    group: `long line ${style}`,
  }, () => {
    const md = markdownStream({ write: () => {}, color, columns: () => 100 });
    for (const piece of LONG_LINE) md.write(piece);
    md.end();
  });
  Deno.bench(`markdown: 400,000 characters in 5,000 lines, 4-character pieces (${style})`, {
    group: `long line ${style}`,
    baseline: true,
  }, () => {
    const md = markdownStream({ write: () => {}, color, columns: () => 100 });
    for (const piece of LINES) md.write(piece);
    md.end();
  });
}

const TABLE = [
  "| n | square |",
  "|---:|---:|",
  ...Array.from({ length: 200_000 }, (_, i) => `| ${i} | ${i * i} |`),
];
Deno.bench("table: 200,000 rows", () => {
  renderTable(TABLE, { color: false, width: 100 });
});
