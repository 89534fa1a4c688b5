/**
 * Compares the `grep` tool with `grep -rnE` on a generated ~50 MB tree of source-like files:
 * `deno run -A bench/grep.ts [runs]`. Prints the median wall time of each for a few patterns,
 * their ratio, and checks that both find the same number of matching lines.
 *
 * The tree has no ignored, hidden, binary or symlinked files, so both search the same set.
 * GNU grep runs with the environment's locale; the tool runs in this process (warm JIT).
 *
 * Then patterns that make a backtracking engine take time quadratic or exponential in a line
 * (`\w+@` over one long line of letters, `(x+x+)+y` over a line of x's): each runs once in a
 * directory of its own, and its wall time is printed.
 */

import { join } from "node:path";
import { createGrepTool } from "../tools/grep.ts";
import { random } from "./stats.ts";

const RUNS = Number(Deno.args[0] ?? 7);
const PATTERNS = [
  { name: "rare literal", pattern: "xyzzy_marker" },
  { name: "common word", pattern: "return" },
  { name: "character class", pattern: "[A-Z][a-z]+Error\\(" },
  { name: "two runs", pattern: "function\\s+\\w+\\(" },
];

const ADVERSARIAL = [
  { name: "\\w+@ over a 100 KB line", pattern: "\\w+@", text: "abcdefghij".repeat(10_000) },
  { name: "\\w+@ over a 1 MB line", pattern: "\\w+@", text: "abcdefghij".repeat(100_000) },
  { name: "[a-z]+\\d over a 1 MB line", pattern: "[a-z]+\\d", text: "abcdefghij".repeat(100_000) },
  { name: "a*a*a*a*a*b over 100 KB of a's", pattern: "a*a*a*a*a*b", text: "a".repeat(100_000) },
  { name: "(x+x+)+y over 34 x's", pattern: "(x+x+)+y", text: "x".repeat(34) },
  { name: "(x+x+)+y over 1 MB of x's", pattern: "(x+x+)+y", text: "x".repeat(1_000_000) },
];

const WORDS = [
  "get",
  "set",
  "user",
  "value",
  "count",
  "item",
  "list",
  "map",
  "render",
  "update",
  "handle",
  "config",
  "request",
  "response",
  "data",
  "index",
  "node",
  "tree",
  "buffer",
  "cache",
  "token",
  "parse",
  "format",
  "stream",
  "event",
  "queue",
  "state",
  "result",
  "options",
  "path",
];
const TYPES = ["Value", "Node", "Request", "Config", "Buffer", "State", "Result", "Token", "Path"];

/** One file of about `size` bytes of TypeScript-like text. */
function sourceFile(next: () => number, size: number, marker: boolean): string {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  const id = () => pick(WORDS) + pick(TYPES);
  const lines: string[] = [`import { ${id()}, ${id()} } from "./${pick(WORDS)}.ts";`, ""];
  let length = 0;
  while (length < size) {
    const templates = [
      () => `export function ${id()}(${pick(WORDS)}: ${pick(TYPES)}): ${pick(TYPES)} {`,
      () => `  const ${id()} = ${id()}(${pick(WORDS)}, ${Math.floor(next() * 1000)});`,
      () => `  if (${pick(WORDS)}.${pick(WORDS)} > ${Math.floor(next() * 100)}) return ${id()};`,
      () => `  // ${pick(WORDS)} the ${pick(WORDS)} before the ${pick(WORDS)} is ${pick(WORDS)}d`,
      () => `  throw new ${pick(TYPES)}Error("cannot ${pick(WORDS)} ${pick(WORDS)}");`,
      () => `  for (const ${pick(WORDS)} of ${id()}) ${pick(WORDS)}.push(${pick(WORDS)});`,
      () => `  return ${id()}.${pick(WORDS)}(${pick(WORDS)});`,
      () => `}`,
      () => ``,
    ];
    const line = pick(templates)();
    lines.push(line);
    length += line.length + 1;
  }
  if (marker) lines.splice(Math.floor(next() * lines.length), 0, "  // xyzzy_marker: keep");
  return lines.join("\n") + "\n";
}

/** Writes the tree: 10 × 10 directories of 50 files of ~10 KB. Returns its size in bytes. */
async function generate(dir: string): Promise<{ files: number; bytes: number }> {
  const next = random(42);
  const encoder = new TextEncoder();
  let files = 0, bytes = 0;
  for (let a = 0; a < 10; a++) {
    for (let b = 0; b < 10; b++) {
      const sub = join(dir, `pkg${a}`, `mod${b}`);
      await Deno.mkdir(sub, { recursive: true });
      const writes = [];
      for (let c = 0; c < 50; c++) {
        const data = encoder.encode(sourceFile(next, 6_000 + next() * 8_000, next() < 0.004));
        writes.push(Deno.writeFile(join(sub, `${WORDS[c % WORDS.length]}_${c}.ts`), data));
        files++;
        bytes += data.length;
      }
      await Promise.all(writes);
    }
  }
  return { files, bytes };
}

/** Runs GNU grep and counts the lines it prints. */
async function gnuGrep(pattern: string, dir: string): Promise<number> {
  const child = new Deno.Command("grep", {
    args: ["-rnE", pattern, dir],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  let lines = 0;
  for await (const chunk of child.stdout) {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
  }
  await child.status;
  return lines;
}

const grep = createGrepTool();
const context = { cwd: Deno.cwd(), signal: new AbortController().signal, toolCallId: "bench" };

/** Runs the tool and returns the number of matching lines it found. */
async function tool(pattern: string, dir: string): Promise<number> {
  const result = await grep.execute(
    { pattern, path: dir, output_mode: "content", limit: 100_000_000 },
    context,
  );
  if (typeof result === "string") throw new Error(result);
  return result.metadata?.matches as number;
}

async function median(run: () => Promise<number>): Promise<{ ms: number; count: number }> {
  const times: number[] = [];
  let count = 0;
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    count = await run();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(times.length / 2)], count };
}

const dir = await Deno.makeTempDir({ prefix: "grep_bench_" });
try {
  const { files, bytes } = await generate(dir);
  console.log(`tree: ${files} files, ${(bytes / 1e6).toFixed(1)} MB in ${dir}`);
  // Warm the page cache and the JIT.
  for (const { pattern } of PATTERNS) {
    await gnuGrep(pattern, dir);
    await tool(pattern, dir);
  }
  console.log(`median of ${RUNS} runs\n`);
  console.log("| pattern | matches | grep -rnE | grep tool | ratio |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  let agree = true;
  for (const { name, pattern } of PATTERNS) {
    const gnu = await median(() => gnuGrep(pattern, dir));
    const ours = await median(() => tool(pattern, dir));
    if (gnu.count !== ours.count) agree = false;
    const matches = gnu.count === ours.count ? `${gnu.count}` : `${gnu.count} ≠ ${ours.count}`;
    console.log(
      `| ${name} \`${pattern}\` | ${matches} | ${gnu.ms.toFixed(0)} ms | ${
        ours.ms.toFixed(0)
      } ms | ${(ours.ms / gnu.ms).toFixed(2)}× |`,
    );
  }
  if (!agree) throw new Error("grep -rnE and the grep tool found different numbers of matches");

  console.log("\n| adversarial pattern | grep tool |");
  console.log("| --- | ---: |");
  for (const { name, pattern, text } of ADVERSARIAL) {
    const sub = join(dir, "adversarial");
    await Deno.mkdir(sub, { recursive: true });
    await Deno.writeTextFile(join(sub, "line.txt"), `${text}\n`);
    const { ms, count } = await median(() => tool(pattern, sub));
    if (count !== 0) throw new Error(`${name}: ${count} matches, expected none`);
    console.log(`| ${name} | ${ms.toFixed(1)} ms |`);
    await Deno.remove(sub, { recursive: true });
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}
