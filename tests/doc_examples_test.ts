/**
 * The examples of the documentation, run as tests: each ```` ```ts ```` block of a JSDoc comment
 * in the package's modules, the benchmarks and the examples, as a module of its own.
 *
 * `deno test --doc` runs each block in a worker of its own, which costs about 0.4 s of CPU
 * before the block's first line: more than all of the blocks' own work, for the package's ~480
 * blocks. Here they run in the test's process, one test each, named by file and line.
 * `deno task check` type-checks them (`deno check --doc`).
 *
 * @module
 */

import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";

const _ROOT = new URL("../", import.meta.url).pathname;
const _WHERE = ["mod.ts", "cli.ts", "lib", "tools", "bench", "examples"];

/** A block of code in a JSDoc comment: where it is and what it says. */
interface _Block {
  file: string;
  line: number;
  code: string;
}

function _files(path: string): string[] {
  if (Deno.statSync(path).isFile) return path.endsWith(".ts") ? [path] : [];
  return [...Deno.readDirSync(path)]
    .sort((a, b) => a.name < b.name ? -1 : 1)
    .flatMap((entry) => _files(join(path, entry.name)));
}

/** The ```` ```ts ```` blocks of a module's JSDoc comments, each line without its ` * `. */
function _blocks(file: string): _Block[] {
  const blocks: _Block[] = [];
  let open: _Block | undefined;
  Deno.readTextFileSync(file).split("\n").forEach((text, index) => {
    if (!open && /^\s*\*\s*```ts\s*$/.test(text)) {
      open = { file, line: index + 1, code: "" };
    } else if (open && /^\s*\*\s*```\s*$/.test(text)) {
      blocks.push(open);
      open = undefined;
    } else if (open) {
      // `*\/` is how a comment writes the end of one.
      open.code += text.replace(/^\s*\* ?/, "").replaceAll("*\\/", "*/") + "\n";
    }
  });
  return blocks;
}

/**
 * The block as a module that can be imported from anywhere: its relative imports made absolute
 * (bare ones, `zod` or `@x/agent`, are resolved by the import map), and its place named, so that
 * two blocks of the same text are two modules.
 */
function _module({ file, line, code }: _Block): string {
  const base = pathToFileURL(file);
  const absolute = code.replace(
    /(\bfrom\s*|\bimport\s*\(?\s*)(["'])(\.\.?\/[^"']+)\2/g,
    (_match, lead: string, quote: string, specifier: string) =>
      `${lead}${quote}${new URL(specifier, base).href}${quote}`,
  );
  const text = `${absolute}\n// ${relative(_ROOT, file)}:${line}\nexport {};\n`;
  const bytes = new TextEncoder().encode(text);
  return `data:application/typescript;base64,${btoa(String.fromCharCode(...bytes))}`;
}

const blocks = _WHERE.flatMap((where) => _files(join(_ROOT, where))).flatMap(_blocks);

Deno.test("the documentation has examples, and each is found", () => {
  if (blocks.length < 400) throw new Error(`only ${blocks.length} examples were found`);
  const empty = blocks.filter((block) => !block.code.trim());
  if (empty.length) throw new Error(`empty examples: ${empty.map((b) => b.file).join(", ")}`);
});

for (const block of blocks) {
  Deno.test(`example at ${relative(_ROOT, block.file)}:${block.line}`, async () => {
    await import(_module(block));
  });
}
