/**
 * The terminal's markdown renderer on long answers: a long line streamed in small pieces comes
 * out as it does in one piece, each piece drawn with one write; a table of any number of rows
 * is drawn.
 */

import assert from "node:assert/strict";
import { markdownStream } from "../lib/cli/terminal/markdown.ts";
import { renderTable } from "../lib/cli/terminal/table.ts";

/** What a terminal shows after `output`: rows of text, for the codes the renderer writes. */
function screenOf(output: string): string[] {
  const rows = [""];
  // deno-lint-ignore no-control-regex -- the codes are what is read
  for (const [code] of output.matchAll(/\r\x1b\[K|\n|[^\r\n]+/g)) {
    if (code === "\n") rows.push("");
    else if (code.startsWith("\r")) rows[rows.length - 1] = "";
    else rows[rows.length - 1] += code;
  }
  return rows;
}

/** Streams `text` through a renderer `width` columns wide in pieces of `size` characters. */
function stream(text: string, size: number, width: number): { output: string; writes: number } {
  let output = "";
  let writes = 0;
  const md = markdownStream({
    write: (piece) => {
      output += piece;
      writes++;
    },
    color: false,
    columns: () => width,
  });
  for (let at = 0; at < text.length; at += size) md.write(text.slice(at, at + size));
  md.end();
  return { output, writes };
}

Deno.test("markdownStream() shows a 400,000-character line streamed in 4-character pieces as one piece shows it", () => {
  const words = Array.from({ length: 60_000 }, (_, i) => `w${i}${"x".repeat(i % 7)}`);
  const text = `${words.join(" ").slice(0, 399_999)}.`;
  const { output, writes } = stream(text, 4, 100);
  assert.ok(output === stream(text, text.length, 100).output, "as one piece shows it");
  const rows = screenOf(output);
  assert.equal(rows.pop(), "", "the line ends with a line break");
  assert.ok(rows.length > 4_000);
  for (const row of rows) assert.ok(row.length <= 100, `fits the terminal: ${row}`);
  // Rows break between words (a space at a row's end stays there, unseen): the words, in
  // order, are the text.
  assert.ok(rows.map((row) => row.trimEnd()).join(" ") === text, "whole words, in order");
  // One write a piece, not one a character.
  assert.ok(writes <= 100_000 + 1, `${writes} writes for 100,000 pieces`);
});

Deno.test("markdownStream() holds a line of spaces, and shows it with the text that follows", () => {
  const { output } = stream(`${" ".repeat(100_000)}x\nend`, 4, 100_001);
  assert.equal(output, `${" ".repeat(100_000)}x\nend\n`);
});

Deno.test("markdownStream() leaves a line taller than the screen as it streamed", () => {
  let output = "";
  const md = markdownStream({
    write: (piece) => output += piece,
    color: true,
    columns: () => 10,
    rows: () => 3,
  });
  md.write("**bold** words that take more than three rows of ten columns\n");
  md.write("**short**\n");
  // The long line is not drawn again (its first rows are above the screen); the short one is.
  assert.ok(!/\[\d+A/.test(output), JSON.stringify(output));
  assert.match(output, /\*\*bold\*\*/);
  assert.ok(output.endsWith("\r\x1b[J\x1b[1mshort\x1b[0m\n"), JSON.stringify(output));
});

Deno.test("renderTable() draws a table of 200,000 rows", () => {
  const lines = [
    "| n | square |",
    "|---:|---:|",
    ...Array.from({ length: 200_000 }, (_, i) => `| ${i} | ${i * i} |`),
  ];
  const drawn = renderTable(lines, { color: false, width: 100 });
  assert.ok(drawn);
  assert.equal(drawn.length, 200_002);
  assert.equal(drawn[0], "|      n |      square |");
  assert.equal(drawn.at(-1), "| 199999 | 39999600001 |");
});
