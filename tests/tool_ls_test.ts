import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseRule } from "../lib/permissions/mod.ts";
import { runToolCall } from "../lib/tool_runner.ts";
import type { Tool, ToolOutput } from "../mod.ts";
import { toolRegistry } from "../lib/tool.ts";
import { permissionPolicy } from "../lib/permissions/policy.ts";
import { memoryFs } from "../lib/testing/mod.ts";
import { createLsTool, type LsInput } from "../tools/ls.ts";
import { call as callTool, execute } from "./tool_support.ts";

const ls = createLsTool();

function list(input: LsInput, cwd: string, tool = ls): Promise<ToolOutput> {
  return execute(tool, input, cwd);
}

/** Runs ls the way the loop does (errors become results). */
function call(input: unknown, cwd: string): Promise<[string, boolean]> {
  return callTool(ls as Tool, input, cwd);
}

Deno.test("ls lists directories first with /, then files with sizes, hidden ones too", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ls_test_" }));
  try {
    await Deno.mkdir(join(root, "src"));
    await Deno.mkdir(join(root, ".git"));
    await Deno.writeTextFile(join(root, "README.md"), "hello");
    await Deno.writeFile(join(root, "big.bin"), new Uint8Array(3 * 1024 * 1024 + 1));
    await Deno.writeFile(join(root, ".env"), new Uint8Array(1536));
    await Deno.writeTextFile(join(root, "src", "a.ts"), "");
    const result = await list({}, root);
    assert.equal(result.output, ".git/\nsrc/\n.env  1.5 KB\nREADME.md  5 B\nbig.bin  3.0 MB");
    assert.equal(result.display, "5 entries");
    assert.equal((await list({ path: "src" }, root)).output, "a.ts  0 B");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("ls shows where symlinks lead and marks broken ones", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ls_test_" }));
  const outside = await Deno.realPath(await Deno.makeTempDir({ prefix: "ls_outside_" }));
  try {
    await Deno.mkdir(join(root, "sub"));
    await Deno.writeTextFile(join(root, "sub", "a.txt"), "12345");
    await Deno.symlink(join(root, "sub"), join(root, "dirlink"));
    await Deno.symlink(join(root, "sub", "a.txt"), join(root, "filelink"));
    await Deno.symlink(join(root, "gone"), join(root, "broken"));
    await Deno.symlink(outside, join(root, "away"));
    assert.equal(
      (await list({}, root)).output,
      [
        `away@ -> ${outside}/`,
        "dirlink@ -> sub/",
        "sub/",
        "broken@ -> (broken link)",
        "filelink@ -> sub/a.txt  5 B",
      ].join("\n"),
    );
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("ls caps long listings with a note", async () => {
  const fs = memoryFs();
  for (let i = 0; i < 5; i++) fs.put(`/w/f${i}.txt`, "x");
  fs.put("/w/empty/.keep", "");
  const tool = createLsTool({ fs, limit: 3 });
  assert.equal(
    (await list({ path: "/w" }, "/", tool)).output,
    "empty/\nf0.txt  1 B\nf1.txt  1 B\n… 3 more entries (6 in all); use glob to find specific files",
  );
  assert.equal((await list({ path: "empty" }, "/w", tool)).output, ".keep  0 B");
});

Deno.test("ls explains a missing path and a file path; says when a directory is empty", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ls_test_" }));
  try {
    await Deno.writeTextFile(join(root, "a.txt"), "");
    await Deno.mkdir(join(root, "empty"));
    assert.deepEqual(await call({ path: "nope" }, root), [
      `Error: "nope" does not exist (looked for ${join(root, "nope")}). ` +
      "Check the path, or list its parent directory.",
      true,
    ]);
    assert.deepEqual(await call({ path: "a.txt" }, root), [
      'Error: "a.txt" is a file, not a directory: use the read tool to see its content.',
      true,
    ]);
    assert.deepEqual(await call({ path: "empty" }, root), ["(empty directory)", false]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("ls hides the entries the rules refuse, links into them too, and says so", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ls_test_" }));
  try {
    await Deno.mkdir(join(root, "secrets"));
    await Deno.writeTextFile(join(root, "secrets", "key.txt"), "TOPSECRET");
    await Deno.writeTextFile(join(root, "notes.txt"), "hi");
    await Deno.symlink(join(root, "secrets", "key.txt"), join(root, "link.txt"));
    const policy = permissionPolicy({
      rules: [parseRule("read(secrets/**)", "deny", "--deny")],
      mode: () => "default",
      roots: [root],
    });
    const run = async (input: LsInput) =>
      (await runToolCall(
        { type: "tool_call", id: "1", name: "ls", input },
        toolRegistry([ls as Tool]),
        { cwd: root, signal: new AbortController().signal, checks: policy.checks },
      )).output;
    assert.match((await list({}, root)).output, /link\.txt@ -> secrets\/key\.txt/);
    assert.equal(
      await run({}),
      "notes.txt  2 B\n(2 entries hidden: the permission rules refuse reading them)",
    );
    assert.equal(
      await run({ path: "secrets" }),
      "(1 entry hidden: the permission rules refuse reading it)",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
