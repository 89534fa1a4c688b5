/**
 * The examples of the documentation, run as tests: each code block of a JSDoc comment in the
 * package's modules, the benchmarks and the examples, and of the project's Markdown files, as a
 * module of its own, as `deno test --doc` runs them: TypeScript and JavaScript blocks, but not
 * those marked `ignore`.
 *
 * `deno test --doc` runs each block in a worker of its own, which costs about 0.4 s of CPU
 * before the block's first line: more than all of the blocks' own work, for the package's ~480
 * blocks. Here they run in the test's process, one test each, named by file and line.
 * `deno task check` type-checks them (`deno check --doc`, and `--doc-only` for the Markdown).
 *
 * @module
 */

import "./isolated_env.ts";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const _ROOT = fileURLToPath(new URL("../", import.meta.url));
const _WHERE = ["mod.ts", "cli.ts", "lib", "tools", "bench", "examples"];

/** The languages of the blocks that run, with the media type each is imported as. */
const _MEDIA: Record<string, string> = {
  ts: "application/typescript",
  typescript: "application/typescript",
  mts: "application/typescript",
  tsx: "text/tsx",
  js: "application/javascript",
  javascript: "application/javascript",
  mjs: "application/javascript",
  jsx: "text/jsx",
};

/** A block of code in a comment or a Markdown file: where it is and what it says. */
interface _Block {
  file: string;
  line: number;
  media: string;
  code: string;
}

function _files(path: string, ending: string): string[] {
  if (Deno.statSync(path).isFile) return path.endsWith(ending) ? [path] : [];
  return [...Deno.readDirSync(path)]
    .sort((a, b) => a.name < b.name ? -1 : 1)
    .flatMap((entry) => _files(join(path, entry.name), ending));
}

/**
 * The blocks that run, of a module's JSDoc comments (each line without its ` * `) or of a
 * Markdown file. A block left open is an error.
 */
function _blocks(file: string): _Block[] {
  const inComment = file.endsWith(".ts");
  const fence = inComment ? /^\s*\*\s*```(.*)$/ : /^```(.*)$/;
  const blocks: _Block[] = [];
  let open: _Block | undefined;
  let skipping = false;
  Deno.readTextFileSync(file).split("\n").forEach((text, index) => {
    const info = fence.exec(text)?.[1].trim();
    if (info !== undefined && (open || skipping)) {
      if (info !== "") throw new Error(`${file}:${index + 1}: a block opens inside another`);
      if (open) blocks.push(open);
      open = undefined;
      skipping = false;
    } else if (info !== undefined) {
      const [language, ...attributes] = info.split(/\s+/);
      const media = _MEDIA[language];
      if (media && !attributes.includes("ignore")) {
        open = { file, line: index + 1, media, code: "" };
      } else skipping = true;
    } else if (open) {
      // `*\/` is how a comment writes the end of one.
      const line = inComment ? text.replace(/^\s*\* ?/, "").replaceAll("*\\/", "*/") : text;
      open.code += line + "\n";
    }
  });
  if (open || skipping) throw new Error(`${file}: a block is never closed`);
  return blocks;
}

/**
 * The block as a module that can be imported from anywhere: its relative imports made absolute
 * (bare ones, `zod` or `@x/agent`, are resolved by the import map), and its place named, so that
 * two blocks of the same text are two modules.
 */
function _module({ file, line, media, code }: _Block): string {
  const base = pathToFileURL(file);
  const absolute = code.replace(
    /(\bfrom\s*|\bimport\s*\(?\s*)(["'])(\.\.?\/[^"']+)\2/g,
    (_match, lead: string, quote: string, specifier: string) =>
      `${lead}${quote}${new URL(specifier, base).href}${quote}`,
  );
  const text = `${absolute}\n// ${relative(_ROOT, file)}:${line}\nexport {};\n`;
  const bytes = new TextEncoder().encode(text);
  return `data:${media};base64,${btoa(String.fromCharCode(...bytes))}`;
}

const modules = _WHERE.flatMap((where) => _files(join(_ROOT, where), ".ts"));
const markdown = _files(_ROOT, ".md").filter((file) => !relative(_ROOT, file).includes("/"));
const blocks = [...modules, ...markdown].flatMap(_blocks);

Deno.test("the documentation's examples are all found", () => {
  // Every fence that opens a TypeScript block is one of them, or marked `ignore`.
  const opened = [...modules, ...markdown].reduce((sum, file) => {
    const ts = file.endsWith(".ts") ? /^\s*\*\s*```ts$/gm : /^```ts$/gm;
    return sum + (Deno.readTextFileSync(file).match(ts)?.length ?? 0);
  }, 0);
  const typescript = blocks.filter((block) => block.media === "application/typescript");
  if (typescript.length !== opened) {
    throw new Error(`${opened} blocks open with a ts fence, ${typescript.length} were found`);
  }
  if (!markdown.some((file) => file.endsWith("README.md"))) throw new Error("no README.md");
  if (blocks.length < 400) throw new Error(`only ${blocks.length} examples were found`);
  const empty = blocks.filter((block) => !block.code.trim());
  if (empty.length) throw new Error(`empty examples: ${empty.map((b) => b.file).join(", ")}`);
});

for (const block of blocks) {
  Deno.test(`example at ${relative(_ROOT, block.file)}:${block.line}`, async () => {
    await import(_module(block));
  });
}
