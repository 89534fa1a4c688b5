import "./isolated_env.ts";
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { parseRule } from "../lib/permissions/mod.ts";
import { runToolCall } from "../lib/tool_runner.ts";
import type { Tool } from "../mod.ts";
import { toolRegistry } from "../lib/tool.ts";
import { permissionPolicy } from "../lib/permissions/policy.ts";
import { memoryFs } from "../lib/testing/mod.ts";
import { createGlobTool } from "../tools/glob.ts";
import { rebasePattern, walk, type WalkOptions } from "../tools/walk.ts";
import { call, tree } from "./tool_support.ts";

async function paths(root: string, options: WalkOptions = {}): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of walk(root, options)) {
    found.push(entry.isDirectory ? `${entry.path}/` : entry.path);
  }
  return found;
}

const ignored = {
  ".gitignore": "*.log\nbuild/\n/top.txt\n!keep.log\n",
  ".git/HEAD": "ref: refs/heads/main\n",
  "a.ts": "",
  "top.txt": "",
  "debug.log": "",
  "keep.log": "",
  "build/out.ts": "",
  "src/top.txt": "",
  "src/b.ts": "",
  "src/c.js": "",
  "src/build": "a file named build is not a directory",
  "src/gen/.gitignore": "*.ts\n!keep.ts\n/local/\n",
  "src/gen/x.ts": "",
  "src/gen/keep.ts": "",
  "src/gen/local/y.js": "",
  "src/gen/sub/local/z.js": "",
};

Deno.test("walk() yields files by path, skipping .git and what .gitignore files exclude", async () => {
  const root = await tree(ignored);
  try {
    assert.deepEqual(await paths(root), [
      ".gitignore",
      "a.ts",
      "keep.log",
      "src/b.ts",
      "src/build",
      "src/c.js",
      "src/gen/.gitignore",
      "src/gen/keep.ts",
      "src/gen/sub/local/z.js",
      "src/top.txt",
    ]);
    assert.deepEqual(await paths(root, { gitignore: false, ignore: ["*.log", "src/gen/"] }), [
      ".gitignore",
      "a.ts",
      "build/out.ts",
      "src/b.ts",
      "src/build",
      "src/c.js",
      "src/top.txt",
      "top.txt",
    ]);
    assert.deepEqual(await paths(root, { start: "src/gen", includeDirs: true }), [
      "src/gen/.gitignore",
      "src/gen/keep.ts",
      "src/gen/sub/",
      "src/gen/sub/local/",
      "src/gen/sub/local/z.js",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("walk() applies the repository's .gitignore and info/exclude above its root", async () => {
  const root = await tree({
    ".gitignore": "*.tmp\nvendor/\n",
    ".git/info/exclude": "secret.txt\n",
    "pkg/a.ts": "",
    "pkg/b.tmp": "",
    "pkg/secret.txt": "",
    "pkg/vendor/v.ts": "",
    "vendor/lib/x.ts": "",
  });
  try {
    assert.deepEqual(await paths(join(root, "pkg")), ["a.ts"]);
    // A directory the rules exclude is still searched when it is the one asked for.
    assert.deepEqual(await paths(join(root, "vendor")), ["lib/x.ts"]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("walk() yields file symlinks but does not follow directory symlinks", async () => {
  const root = await tree({ "dir/a.txt": "a" });
  try {
    await Deno.symlink(root, join(root, "dir", "loop"));
    await Deno.symlink(join(root, "dir", "a.txt"), join(root, "link.txt"));
    await Deno.symlink(join(root, "missing"), join(root, "broken"));
    assert.deepEqual(await paths(root), ["dir/a.txt", "link.txt"]);
    assert.deepEqual(await paths(root, { includeDirs: true }), [
      "dir/",
      "dir/a.txt",
      "dir/loop/",
      "link.txt",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("walk() stops when its signal is aborted", async () => {
  const fs = memoryFs();
  for (let i = 0; i < 50; i++) fs.put(`/w/d${i}/f.txt`, "");
  const controller = new AbortController();
  const seen: string[] = [];
  await assert.rejects(async () => {
    for await (const entry of walk("/w", { fs, signal: controller.signal })) {
      seen.push(entry.path);
      if (seen.length === 3) controller.abort(new Error("stop"));
    }
  }, /stop/);
  assert.equal(seen.length, 3);
  await assert.rejects(() => paths("/w", { fs, signal: AbortSignal.abort() }));
});

Deno.test("walk() works on any ToolFs, with nested .gitignore rules", async () => {
  const fs = memoryFs();
  fs.put("/w/.gitignore", "dist/\n");
  fs.put("/w/dist/x.js", "");
  fs.put("/w/lib/.gitignore", "*.js\n!main.js\n");
  fs.put("/w/lib/main.js", "");
  fs.put("/w/lib/util.js", "");
  fs.put("/w/lib/dist/y.ts", "");
  assert.deepEqual(await paths("/w", { fs }), [".gitignore", "lib/.gitignore", "lib/main.js"]);
});

Deno.test("rebasePattern() keeps a nested .gitignore line's meaning from the top", () => {
  assert.equal(rebasePattern("*.js", "a/b"), "a/b/**/*.js");
  assert.equal(rebasePattern("/dist/", "a"), "a/dist/");
  assert.equal(rebasePattern("x/y", "a"), "a/x/y");
  assert.equal(rebasePattern("!keep/", "a"), "!a/**/keep/");
  assert.equal(rebasePattern("*.js", ""), "*.js");
  assert.equal(rebasePattern("*", "[x]"), "\\[x\\]/**/*");
  assert.equal(rebasePattern("# comment", "a"), undefined);
  assert.equal(rebasePattern("  \r", "a"), undefined);
});

Deno.test("glob finds files at any depth with **, sorted by path, respecting .gitignore", async () => {
  const root = await tree(ignored);
  const glob = createGlobTool();
  try {
    assert.deepEqual(await call(glob, { pattern: "**/*.ts" }, root), [
      "a.ts\nsrc/b.ts\nsrc/gen/keep.ts",
      false,
    ]);
    // Relative to the working directory, also when searching below it.
    assert.deepEqual(await call(glob, { pattern: "**/*.js", path: "src" }, root), [
      "src/c.js\nsrc/gen/sub/local/z.js",
      false,
    ]);
    assert.deepEqual(await call(glob, { pattern: "*.ts", path: "src" }, root), [
      "src/b.ts",
      false,
    ]);
    assert.deepEqual(await call(glob, { pattern: "**/HEAD" }, root), [
      'No files match "**/HEAD" in the working directory.',
      false,
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("glob matches braces and single-directory stars", async () => {
  const root = await tree({
    "src/a.ts": "",
    "src/b.js": "",
    "src/c.md": "",
    "src/deep/d.ts": "",
    "lib/e.ts": "",
  });
  const glob = createGlobTool();
  try {
    assert.deepEqual(await call(glob, { pattern: "src/*.{ts,js}" }, root), [
      "src/a.ts\nsrc/b.js",
      false,
    ]);
    assert.deepEqual(await call(glob, { pattern: "./{src,lib}/*.ts" }, root), [
      "lib/e.ts\nsrc/a.ts",
      false,
    ]);
    assert.deepEqual(await call(glob, { pattern: "src/deep/d.ts" }, root), [
      "src/deep/d.ts",
      false,
    ]);
    assert.deepEqual(await call(glob, { pattern: `${root}/src/**/*.ts`, path: "lib" }, root), [
      "src/a.ts\nsrc/deep/d.ts",
      false,
    ]);
    assert.deepEqual(await call(glob, { pattern: "../src/*.md", path: "lib" }, root), [
      "src/c.md",
      false,
    ]);
    assert.deepEqual(await call(glob, { pattern: "*.ts" }, root), [
      'No files match "*.ts" in the working directory (to search all directories, use "**/*.ts").',
      false,
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("glob matches dot files only when the pattern names the dot", async () => {
  const root = await tree({
    ".env": "",
    ".github/workflows/ci.yml": "",
    "app.yml": "",
    "config/.hidden.yml": "",
  });
  const glob = createGlobTool();
  try {
    assert.deepEqual(await call(glob, { pattern: "**/*.yml" }, root), ["app.yml", false]);
    assert.deepEqual(await call(glob, { pattern: ".env" }, root), [".env", false]);
    assert.deepEqual(await call(glob, { pattern: "**/.*" }, root), [
      ".env\nconfig/.hidden.yml",
      false,
    ]);
    assert.deepEqual(await call(glob, { pattern: ".github/**/*.yml" }, root), [
      ".github/workflows/ci.yml",
      false,
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("glob caps its results with a note of how many more matched", async () => {
  const fs = memoryFs();
  for (let i = 0; i < 5; i++) fs.put(`/w/f${i}.txt`, "");
  const glob = createGlobTool({ fs, limit: 2 });
  const result = await glob.execute({ pattern: "*.txt" }, {
    cwd: "/w",
    signal: new AbortController().signal,
    toolCallId: "1",
  });
  assert.deepEqual(result, {
    output: "f0.txt\nf1.txt\n… 3 more files; narrow the pattern or the path",
    display: "5 files",
    metadata: { files: 5 },
  });
});

Deno.test("glob explains a missing directory and a file given as the path", async () => {
  const fs = memoryFs();
  fs.put("/w/a.ts", "");
  const glob = createGlobTool({ fs });
  const [missing, missingIsError] = await call(glob, { pattern: "*", path: "nope" }, "/w");
  assert.equal(missingIsError, true);
  assert.equal(
    missing,
    'Error: "nope" does not exist (looked for /w/nope). Check the path, or search its parent directory.',
  );
  const [file, fileIsError] = await call(glob, { pattern: "*", path: "a.ts" }, "/w");
  assert.equal(fileIsError, true);
  assert.match(file, /^Error: "a\.ts" is a file, not a directory/);
});

const hasGit = await new Deno.Command("git", { args: ["--version"], stdout: "null" }).output()
  .then((status) => status.success, () => false);

Deno.test({
  name: "walk() agrees with git ls-files on generated trees of nested .gitignore files",
  ignore: !hasGit,
  async fn() {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
    const names = ["a", "b", "c", "x.log", "y.txt"];
    const patterns = ["a", "b/", "/c", "*.log", "!x.log", "!b/", "b/c", "**/c", "a/**/b", "*"];
    for (let round = 0; round < 25; round++) {
      const files: Record<string, string> = {};
      for (let i = 0; i < 20; i++) {
        files[Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(names)).join("/")] =
          "";
      }
      // A path cannot be both a file and a directory.
      for (const path of Object.keys(files)) {
        if (Object.keys(files).some((other) => other.startsWith(`${path}/`))) delete files[path];
      }
      const dirs = new Set([""]);
      for (const path of Object.keys(files)) {
        for (let dir = dirname(path); dir !== "."; dir = dirname(dir)) dirs.add(dir);
      }
      for (const dir of dirs) {
        if (random() < 0.5) {
          files[join(dir, ".gitignore")] = `${pick(patterns)}\n${pick(patterns)}\n`;
        }
      }
      const root = await tree(files);
      try {
        await new Deno.Command("git", { args: ["init", "-q"], cwd: root }).output();
        const git = await new Deno.Command("git", {
          args: ["ls-files", "--others", "--exclude-standard"],
          cwd: root,
        }).output();
        const expected = new TextDecoder().decode(git.stdout).split("\n").filter(Boolean).sort();
        const found = (await paths(root)).sort();
        assert.deepEqual(found, expected, `tree: ${JSON.stringify(files)}`);
      } finally {
        await Deno.remove(root, { recursive: true });
      }
    }
  },
});

Deno.test("walk() leaves out a directory that fails to list on another file system", async () => {
  const fs = memoryFs();
  fs.put("/w/a.txt", "");
  fs.put("/w/bad/b.txt", "");
  const failing = {
    ...fs,
    readDir: (path: string) => {
      if (path === "/w/bad") throw new Error("EIO");
      return fs.readDir(path);
    },
  };
  assert.deepEqual(await paths("/w", { fs: failing }), ["a.txt"]);
  await assert.rejects(() => paths("/w/bad", { fs: failing }), /EIO/);
});

/** Runs glob as the loop does, with the checks of a policy of these deny rules. */
async function globRuled(input: unknown, cwd: string, ...deny: string[]): Promise<string> {
  const policy = permissionPolicy({
    rules: deny.map((text) => parseRule(text, "deny", "--deny")),
    mode: () => "default",
    roots: [cwd],
  });
  const result = await runToolCall(
    { type: "tool_call", id: "1", name: "glob", input },
    toolRegistry([createGlobTool() as Tool]),
    { cwd, signal: new AbortController().signal, checks: policy.checks },
  );
  return result.output;
}

Deno.test("glob leaves out what the rules refuse, through a symlinked directory too", async () => {
  const root = await tree({
    "secrets/key.txt": "k",
    "secrets/sub/id_rsa": "k",
    "src/a.ts": "",
  });
  try {
    await Deno.symlink(`${root}/secrets/key.txt`, `${root}/src/key.txt`);
    await Deno.symlink("secrets", `${root}/innocent`);
    // Without rules the names show, through the link and the symlinked directory.
    assert.equal(
      (await call(createGlobTool() as Tool, { pattern: "innocent/*" }, root))[0],
      "innocent/key.txt",
    );
    const deny = "read(secrets/**)";
    assert.equal(
      await globRuled({ pattern: "**/*" }, root, deny),
      "src/a.ts\n(2 paths left out: the permission rules refuse reading them)",
    );
    assert.equal(
      await globRuled({ pattern: "innocent/**" }, root, deny),
      'No files match "innocent/**" in the working directory.\n' +
        "(1 path left out: the permission rules refuse reading it)",
    );
    assert.equal(await globRuled({ pattern: "**/*.ts" }, root, "read(other/**)"), "src/a.ts");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("glob refuses a pattern whose matching could take minutes, saying why", async () => {
  // picomatch makes each `*` a lazy run: this pattern against one long name took over a minute,
  // the agent frozen beyond the reach of Ctrl+C.
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "a".repeat(200)), "");
    await Deno.writeTextFile(join(dir, "notes.md"), "");
    const glob = createGlobTool();
    const [output, isError] = await call(glob, { pattern: "*a*a*a*a*a*a*b" }, dir);
    assert.ok(isError, output);
    assert.match(output, /7 "\*" in one path segment.*at most 3/s);
    const [found] = await call(glob, { pattern: "*o*e*.md" }, dir);
    assert.match(found, /notes\.md/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
