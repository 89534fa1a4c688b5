import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseRule } from "../lib/permissions/mod.ts";
import { runToolCall } from "../lib/tool_runner.ts";
import type { Tool, ToolOutput } from "../mod.ts";
import { toolRegistry } from "../lib/tool.ts";
import { permissionPolicy } from "../lib/permissions/policy.ts";
import { memoryFs, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { createGrepTool, type GrepInput } from "../tools/grep.ts";
import { matchLines } from "../tools/grep_lines.ts";
import { compileGrepPattern } from "../tools/regex.ts";
import { denoDir, MOD, tempDir } from "./terminal_support.ts";
import { call as callTool, execute, tree } from "./tool_support.ts";

const grep = createGrepTool();

/** Runs grep directly and returns its full answer. */
function search(input: GrepInput, cwd: string, tool = grep): Promise<ToolOutput> {
  return execute(tool, input, cwd);
}

/** Runs grep the way the loop does. */
function call(input: unknown, cwd: string): Promise<[string, boolean]> {
  return callTool(grep as Tool, input, cwd);
}

const source = {
  "src/app.ts":
    "import { load } from './load.ts';\n\nexport function main() {\n  return load();\n}\n",
  "src/load.ts": "export function load() {\n  // TODO: cache\n  return 42;\n}\n",
  "src/view.tsx": "export const View = () => <p>Load</p>;\n",
  "README.md": "# Demo\n\nCall load() to LOAD things.\n",
};

Deno.test("grep prints path:line:text for each matching line, sorted by path", async () => {
  const root = await tree(source);
  try {
    const result = await search({ pattern: "function \\w+\\(" }, root);
    assert.equal(
      result.output,
      "src/app.ts:3:export function main() {\nsrc/load.ts:1:export function load() {",
    );
    assert.equal(result.display, "2 matching lines in 2 files");
    assert.deepEqual(result.metadata, { matches: 2, files: 2, skippedLarge: 0, unreadable: 0 });
    // A line matching twice prints once; paths stay relative to the working directory.
    assert.equal(
      (await search({ pattern: "load", path: "src" }, root)).output,
      "src/app.ts:1:import { load } from './load.ts';\nsrc/app.ts:4:  return load();\n" +
        "src/load.ts:1:export function load() {",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("grep ignores case when asked, and filters files with a glob", async () => {
  const root = await tree(source);
  try {
    assert.equal(
      (await search({ pattern: "load\\b", ignore_case: true, glob: "*.{md,tsx}" }, root)).output,
      "README.md:3:Call load() to LOAD things.\nsrc/view.tsx:1:export const View = () => <p>Load</p>;",
    );
    assert.equal(
      (await search({ pattern: "(?i)LOAD", glob: "src/**/*.tsx" }, root)).output,
      "src/view.tsx:1:export const View = () => <p>Load</p>;",
    );
    assert.equal(
      (await search({ pattern: "Load", glob: "*.md" }, root)).output,
      "No matches for /Load/ in the working directory.",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("grep shows context lines as path-line-text with -- between groups", async () => {
  const lines = Array.from(
    { length: 12 },
    (_, i) => `line ${i + 1}${i === 1 || i === 3 || i === 9 ? " hit" : ""}`,
  );
  const root = await tree({ "a.txt": lines.join("\n") + "\n", "b.txt": "hit\nlast\n" });
  try {
    const { output } = await search({ pattern: "hit", context: 1 }, root);
    assert.equal(
      output,
      [
        "a.txt-1-line 1",
        "a.txt:2:line 2 hit",
        "a.txt-3-line 3",
        "a.txt:4:line 4 hit",
        "a.txt-5-line 5",
        "--",
        "a.txt-9-line 9",
        "a.txt:10:line 10 hit",
        "a.txt-11-line 11",
        "--",
        "b.txt:1:hit",
        "b.txt-2-last",
      ].join("\n"),
    );
    // Context stops at the file's ends.
    assert.equal(
      (await search({ pattern: "line 12", context: 3, path: "a.txt" }, root)).output,
      "a.txt-9-line 9\na.txt-10-line 10 hit\na.txt-11-line 11\na.txt:12:line 12",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("grep lists matching files or counts matching lines", async () => {
  const root = await tree(source);
  try {
    assert.equal(
      (await search({ pattern: "load", output_mode: "files" }, root)).output,
      "README.md\nsrc/app.ts\nsrc/load.ts",
    );
    assert.equal(
      (await search({ pattern: "load|return", output_mode: "count" }, root)).output,
      "README.md:1\nsrc/app.ts:2\nsrc/load.ts:2",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("grep stops at the limit and says how many more there are", async () => {
  const fs = memoryFs();
  fs.put("/w/a.txt", "x1\nx2\nx3\n");
  fs.put("/w/b.txt", "x4\n");
  fs.put("/w/c.txt", "x5\nx6\n");
  const tool = createGrepTool({ fs });
  assert.equal(
    (await search({ pattern: "x\\d", limit: 4 }, "/w", tool)).output,
    "a.txt:1:x1\na.txt:2:x2\na.txt:3:x3\nb.txt:1:x4\n" +
      "… 2 more matches; narrow the pattern or raise limit",
  );
  assert.equal(
    (await search({ pattern: "x", limit: 1, output_mode: "files" }, "/w", tool)).output,
    "a.txt\n… 2 more files; narrow the pattern or raise limit",
  );
  assert.equal(
    (await search({ pattern: "x", limit: 2, output_mode: "count" }, "/w", tool)).output,
    "a.txt:3\nb.txt:1\n… 1 more file; narrow the pattern or raise limit",
  );
});

Deno.test("grep explains an invalid regular expression and a missing path", async () => {
  const [output, isError] = await call({ pattern: "foo(" }, Deno.cwd());
  assert.equal(isError, true);
  assert.match(output, /^Error: Invalid regular expression "foo\(": .*Unterminated group/);
  assert.match(output, /put a backslash before \( \) \[/);
  const [missing, missingIsError] = await call({ pattern: "x", path: "no/such/dir" }, "/");
  assert.equal(missingIsError, true);
  assert.match(missing, /^Error: "no\/such\/dir" does not exist \(looked for \/no\/such\/dir\)/);
});

Deno.test("grep skips binary files, files over the size cap, and what .gitignore excludes", async () => {
  const root = await tree({
    ".gitignore": "dist/\n*.log\n!keep.log\n",
    ".git/config": "needle\n",
    "bin.dat": new Uint8Array([110, 101, 101, 100, 108, 101, 0, 1, 2]),
    "big.txt": "needle\n" + "x".repeat(2_000),
    "dist/out.js": "needle\n",
    "debug.log": "needle\n",
    "keep.log": "needle\n",
    "pkg/.gitignore": "/gen/\n",
    "pkg/gen/g.ts": "needle\n",
    "pkg/src/gen/g.ts": "needle\n",
    "text.txt": "needle\n",
  });
  try {
    const result = await search(
      { pattern: "needle" },
      root,
      createGrepTool({ maxFileSize: 1_000 }),
    );
    assert.equal(
      result.output,
      "keep.log:1:needle\npkg/src/gen/g.ts:1:needle\ntext.txt:1:needle\n" +
        "(1 file over 1000 bytes not searched: big.txt)",
    );
    assert.equal(result.metadata?.skippedLarge, 1);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("grep searches a single file given as the path, whatever the ignore rules", async () => {
  const root = await tree({ ".gitignore": "*.log\n", "logs/app.log": "ok\nerror: disk full\n" });
  try {
    assert.equal(
      (await search({ pattern: "error", path: "logs/app.log" }, root)).output,
      "logs/app.log:2:error: disk full",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("grep matches line by line and cuts very long lines around the match", async () => {
  const fs = memoryFs();
  fs.put("/w/a.txt", "foo\nbar\nfoo bar\r\n");
  fs.put("/w/min.js", `${"a".repeat(1_000)}needle${"b".repeat(1_000)}\n`);
  const tool = createGrepTool({ fs });
  // A match may not span lines; a CRLF line ending is not part of the text.
  assert.equal(
    (await search({ pattern: "foo\\s+bar", path: "a.txt" }, "/w", tool)).output,
    "a.txt:3:foo bar",
  );
  const { output } = await search({ pattern: "needle", path: "min.js" }, "/w", tool);
  assert.equal(
    output,
    `min.js:1:…${"a".repeat(100)}needle${"b".repeat(394)}… [line of 2006 characters cut]`,
  );
});

Deno.test("grep stops when the call is aborted", async () => {
  const fs = memoryFs();
  for (let i = 0; i < 20; i++) fs.put(`/w/d${i}/f.txt`, "x\n");
  const tool = createGrepTool({ fs });
  await assert.rejects(
    async () =>
      await tool.execute({ pattern: "x" }, {
        cwd: "/w",
        signal: AbortSignal.abort(new Error("cancelled")),
        toolCallId: "1",
      }),
    /cancelled/,
  );
});

const hasGrep = await new Deno.Command("grep", { args: ["--version"], stdout: "null" }).output()
  .then((status) => status.success, () => false);

Deno.test({
  name: "grep prints what GNU grep -nH prints, context and separators included",
  ignore: !hasGrep,
  async fn() {
    let seed = 11;
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
    const patterns = ["ab", "^a", "b$", "a.c", "x*", "^$", "a|bc", "[ab]{2}", "a\\sb", "a[^z]*c"];
    for (let round = 0; round < 15; round++) {
      const files: Record<string, string> = {};
      for (let f = 0; f < 3; f++) {
        const lines = Array.from(
          { length: Math.floor(random() * 12) },
          () => Array.from({ length: Math.floor(random() * 5) }, () => pick([..."abc x"])).join(""),
        );
        files[`f${f}.txt`] = lines.join("\n") + (random() < 0.7 && lines.length ? "\n" : "");
      }
      const root = await tree(files);
      try {
        for (let k = 0; k < 4; k++) {
          const pattern = pick(patterns);
          const context = pick([0, 1, 2]);
          // Without context GNU grep prints no "--" (with an explicit -C 0 it would).
          const gnu = await new Deno.Command("grep", {
            args: [
              "-nHE",
              ...(context ? ["-C", `${context}`] : []),
              "--",
              pattern,
              ...Object.keys(files),
            ],
            cwd: root,
          }).output();
          const expected = new TextDecoder().decode(gnu.stdout).replace(/\n$/, "");
          const { output } = await search({ pattern, context, limit: 1_000 }, root);
          const note = `${JSON.stringify(pattern)} -C ${context} in ${JSON.stringify(files)}`;
          if (expected) assert.equal(output, expected, note);
          else assert.match(output, /^No matches/, note);
        }
      } finally {
        await Deno.remove(root, { recursive: true });
      }
    }
  },
});

Deno.test("grep notes files it could not read and goes on", async () => {
  const fs = memoryFs();
  fs.put("/w/a.txt", "needle\n");
  fs.put("/w/b.txt", "needle\n");
  const failing = {
    ...fs,
    readFile: (path: string) =>
      path === "/w/a.txt" ? Promise.reject(new Error("EACCES")) : fs.readFile(path),
  };
  const result = await search({ pattern: "needle" }, "/w", createGrepTool({ fs: failing }));
  assert.equal(result.output, "b.txt:1:needle\n(1 file could not be read)");
  assert.equal(result.metadata?.unreadable, 1);
});

/** Runs grep as the loop does, with the checks of a policy of these deny rules. */
async function grepRuled(
  input: GrepInput,
  cwd: string,
  ...deny: string[]
): Promise<{ output: string; isError: boolean; metadata?: Record<string, unknown> }> {
  const policy = permissionPolicy({
    rules: deny.map((text) => parseRule(text, "deny", "--deny")),
    mode: () => "default",
    roots: [cwd],
  });
  return await runToolCall(
    { type: "tool_call", id: "1", name: "grep", input },
    toolRegistry([grep as Tool]),
    { cwd, signal: new AbortController().signal, checks: policy.checks },
  );
}

Deno.test("grep over the parent of a denied directory skips what the rules refuse, and says so", async () => {
  const root = await tree({
    "secrets/key.txt": "TOPSECRET=1\n",
    "secrets/deep/more.txt": "TOPSECRET=2\n",
    "notes.txt": "the word TOPSECRET appears here\n",
  });
  try {
    await Deno.symlink(`${root}/secrets/key.txt`, `${root}/link.txt`);
    await Deno.symlink("secrets", `${root}/innocent`);
    // Without rules, grep finds the secret through the link (so the case is real).
    assert.match((await search({ pattern: "TOPSECRET=" }, root)).output, /^link\.txt:1:/m);
    const result = await grepRuled({ pattern: "TOPSECRET" }, root, "read(secrets/**)");
    assert.equal(
      result.output,
      "notes.txt:1:the word TOPSECRET appears here\n" +
        "(2 paths not searched: the permission rules refuse reading them)",
    );
    assert.equal(result.metadata?.refused, 2);
    // A file named directly, through a link, is refused whole.
    const linked = await grepRuled(
      { pattern: "TOPSECRET", path: "link.txt" },
      root,
      "read(secrets/**)",
    );
    assert.equal(linked.isError, true);
    assert.equal(
      linked.output,
      `Error: permission denied: reading ${root}/secrets/key.txt is denied by ` +
        `--deny "read(secrets/**)"`,
    );
    // A grep rule applies to grep; a rule of another tool does not.
    const own = await grepRuled({ pattern: "TOPSECRET=" }, root, "grep(secrets/**)");
    assert.match(own.output, /^No matches/);
    const other = await grepRuled({ pattern: "TOPSECRET=" }, root, "ls(secrets/**)");
    assert.match(other.output, /^link\.txt:1:/m);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

/**
 * Runs the CLI in a directory holding `files`, with a scripted model that makes one grep call
 * and then says it is done; the run is killed after 60 s. Returns the tool's output, and
 * whether the run ended by itself.
 */
async function grepThroughCli(
  files: Record<string, string>,
  input: GrepInput,
): Promise<{ ended: boolean; output: string }> {
  const root = await tempDir("agent_grep_cli_");
  await using server = startMockOpenAIServer({
    replies: [{ toolCalls: [{ name: "grep", arguments: { ...input } }] }, { text: "done" }],
  });
  try {
    const cwd = join(root, "work");
    await Deno.mkdir(cwd);
    for (const [name, text] of Object.entries(files)) {
      await Deno.writeTextFile(join(cwd, name), text);
    }
    for (const dir of ["home", "data", "config"]) await Deno.mkdir(join(root, dir));
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MOD, "-m", "openai/test", "--output", "stream-json", "go"],
      cwd,
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: join(root, "home"),
        AGENT_DATA_DIR: join(root, "data"),
        AGENT_CONFIG_DIR: join(root, "config"),
        DENO_DIR: await denoDir(),
        OPENAI_API_KEY: "sk-grep-test",
        OPENAI_BASE_URL: server.url,
        NO_COLOR: "1",
      },
      stdin: "null",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const events = new TextDecoder().decode(output.stdout).split("\n").filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; output?: string });
    const result = events.find((event) => event.type === "tool_result");
    return { ended: output.signal === null, output: result?.output ?? "" };
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("grep of a nested quantifier (x+x+)+y over a line of x's ends at once through the CLI", async () => {
  const { ended, output } = await grepThroughCli(
    { "xs.txt": `${"x".repeat(34)}\n` },
    { pattern: "(x+x+)+y" },
  );
  assert.ok(ended, "the run was killed after 60 s");
  assert.equal(output, "No matches for /(x+x+)+y/ in the working directory.");
});

Deno.test("grep of \\w+@ over a 1 MB line of letters ends at once through the CLI", async () => {
  const { ended, output } = await grepThroughCli(
    { "letters.txt": `${"abcdefghij".repeat(100_000)}\n`, "mail.txt": "to: ann@example.com\n" },
    { pattern: "\\w+@" },
  );
  assert.ok(ended, "the run was killed after 60 s");
  assert.equal(output, "mail.txt:1:to: ann@example.com");
});

Deno.test("grep finds the same lines with V8 and with RE2", async () => {
  const text = [
    "foo bar",
    "foo\u00a0bar",
    "Foo Bar\r",
    "line ends in foo\r",
    "tab\tthen x",
    "name: ann@example.com",
    "ünïcödé ☃ snowman",
    "{braces} and ]brackets[",
    "a.b a-b a\u2028b",
    "",
    "x = 1; y = 22; z = 333",
    "lookbehind: $price and price",
  ].join("\n") + "\n";
  const patterns = [
    "foo\\sbar",
    "foo\\Sbar",
    "foo[\\s]bar",
    "foo$",
    "^foo",
    "^x = \\d",
    "o\\s*$",
    "a.b",
    "\\w+@\\w+\\.com",
    "(?<user>\\w+)@",
    "\\u2603",
    "\\u{2603}",
    "[^]b",
    "\\{\\w+\\}",
    "}",
    "\\d{2,3}",
    "x\\x20=",
    "\\t",
    "(?:y|z) = \\d+",
    "(?<=\\$)price",
    "(?<!\\$)price",
    "\\bbar\\b",
    "snow.*",
    "[a-z]+Bar",
  ];
  for (const ignoreCase of [false, true]) {
    for (const pattern of patterns) {
      const lines = async (budget?: number) => {
        const compiled = await compileGrepPattern(pattern, ignoreCase, { budget });
        return matchLines(text, await compiled.matcherFor(text), Infinity);
      };
      assert.deepEqual(await lines(0), await lines(), `/${pattern}/${ignoreCase ? "i" : ""}`);
    }
  }
});

Deno.test("grep refuses backreferences and lookaheads, saying why and what to write", async () => {
  for (const [pattern, what] of [["(a)\\1", "a backreference (\\1)"], ["foo(?=bar)", "(?=…)"]]) {
    const [output, isError] = await call({ pattern }, Deno.cwd());
    assert.equal(isError, true);
    assert.ok(output.includes(what), output);
    assert.match(output, /linear in the text \(as ripgrep does\)/);
    assert.match(output, /Write the repeated text out, or search for a looser pattern/);
  }
});
