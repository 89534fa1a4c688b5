/**
 * `read`, `write` and `edit` on the real file system: a file is opened once and what was opened
 * is what was checked (inside the workspace, allowed by the context's `checkPath`), symlinks are
 * followed from the directory held, FIFOs never block, and without every permission a call waits
 * for the sandboxed commands running at the same time.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createEditTool, createReadTool, createWriteTool, type ToolFs } from "../tools/mod.ts";
import { denoFs } from "../tools/fs.ts";
import { PathChangedError } from "../tools/open_file.ts";
import type { ToolContext } from "../lib/tool.ts";
import { tree } from "./tool_support.ts";

const CONFIG = fileURLToPath(new URL("../deno.json", import.meta.url));

function context(cwd: string, checkPath?: ToolContext["checkPath"]): ToolContext {
  return { cwd, toolCallId: "1", signal: new AbortController().signal, checkPath };
}

/** The output of a call, or its error's message. */
async function outcome(work: unknown): Promise<string> {
  try {
    const result = await work;
    return typeof result === "string" ? result : (result as { output: string }).output;
  } catch (error) {
    return `Error: ${(error as Error).message}`;
  }
}

async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

Deno.test("write creates missing directories, then replaces the file", async () => {
  const ws = await tree({ "keep.txt": "" });
  try {
    const write = createWriteTool({ roots: [ws] });
    const first = await write.execute({ path: "a/b/c.txt", content: "one\n" }, context(ws));
    const again = await write.execute({ path: "a/b/c.txt", content: "two\n" }, context(ws));
    assert.match(await outcome(first), /^Created a\/b\/c\.txt \(1 line, 4 bytes\)$/);
    assert.match(await outcome(again), /^Replaced a\/b\/c\.txt/);
    assert.equal(await Deno.readTextFile(join(ws, "a/b/c.txt")), "two\n");
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});

Deno.test("write follows a symlink to a file inside the workspace, to that file", async () => {
  const ws = await tree({ "real.txt": "old" });
  try {
    await Deno.symlink("real.txt", join(ws, "link.txt"));
    const write = createWriteTool({ roots: [ws] });
    const result = await write.execute({ path: "link.txt", content: "new" }, context(ws));
    assert.equal(typeof result !== "string" && result.metadata?.path, join(ws, "real.txt"));
    assert.equal(await Deno.readTextFile(join(ws, "real.txt")), "new");
    assert.ok((await Deno.lstat(join(ws, "link.txt"))).isSymlink);
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});

Deno.test("write and edit refuse what a symlink leads to outside, and create nothing there", async () => {
  const ws = await tree({ "keep.txt": "" });
  const outside = await tree({ "theirs.txt": "theirs" });
  try {
    await Deno.symlink(outside, join(ws, "out"));
    await Deno.symlink(join(outside, "theirs.txt"), join(ws, "theirs.txt"));
    const write = createWriteTool({ roots: [ws] });
    const edit = createEditTool({ roots: [ws] });
    for (const path of ["out/new.txt", "out/deep/new.txt", "theirs.txt"]) {
      const said = await outcome(write.execute({ path, content: "x" }, context(ws)));
      assert.match(said, /outside the workspace \(it leads to /, path);
    }
    const edited = await outcome(
      edit.execute(
        { path: "out/theirs.txt", old_string: "theirs", new_string: "mine" },
        context(ws),
      ),
    );
    assert.match(edited, /outside the workspace/);
    assert.deepEqual([...Deno.readDirSync(outside)].map((entry) => entry.name), ["theirs.txt"]);
    assert.equal(await Deno.readTextFile(join(outside, "theirs.txt")), "theirs");
  } finally {
    await Deno.remove(ws, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("checkPath sees the real path opened; its refusal is the error and nothing changes", async () => {
  const ws = await tree({ "secrets/key.txt": "k", "notes.txt": "a" });
  try {
    await Deno.symlink("secrets/key.txt", join(ws, "innocent.txt"));
    const asked: string[] = [];
    const checkPath = (path: string, access: "read" | "write") => {
      asked.push(`${access} ${path.slice(ws.length + 1)}`);
      return path.includes("/secrets/") ? "denied by read(secrets/**)" : undefined;
    };
    const ctx = context(ws, checkPath);
    const read = createReadTool();
    const write = createWriteTool({ roots: [ws] });
    const edit = createEditTool({ roots: [ws] });
    assert.equal(
      await outcome(read.execute({ path: "innocent.txt" }, ctx)),
      "Error: denied by read(secrets/**)",
    );
    assert.equal(
      await outcome(write.execute({ path: "secrets/new.txt", content: "x" }, ctx)),
      "Error: denied by read(secrets/**)",
    );
    assert.equal(
      await outcome(edit.execute({ path: "innocent.txt", old_string: "k", new_string: "x" }, ctx)),
      "Error: denied by read(secrets/**)",
    );
    assert.equal(await exists(join(ws, "secrets/new.txt")), false);
    assert.equal(await Deno.readTextFile(join(ws, "secrets/key.txt")), "k");
    await edit.execute({ path: "notes.txt", old_string: "a", new_string: "b" }, ctx);
    assert.deepEqual(asked, [
      "read innocent.txt",
      "read secrets/key.txt",
      "write secrets/new.txt",
      "read innocent.txt",
      "write innocent.txt",
      "read secrets/key.txt",
      "read notes.txt",
      "write notes.txt",
    ]);
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});

Deno.test("write, edit and read refuse a FIFO at once, without waiting for its other end", async () => {
  const ws = await tree({ "keep.txt": "" });
  try {
    const made = await new Deno.Command("mkfifo", { args: [join(ws, "pipe")] }).output();
    assert.ok(made.success, "mkfifo");
    const write = createWriteTool({ roots: [ws] });
    const edit = createEditTool({ roots: [ws] });
    const read = createReadTool();
    assert.match(
      await outcome(write.execute({ path: "pipe", content: "x" }, context(ws))),
      /"pipe" is not a regular file/,
    );
    assert.match(
      await outcome(edit.execute({ path: "pipe", old_string: "a", new_string: "b" }, context(ws))),
      /"pipe" is not a regular file/,
    );
    assert.match(
      await outcome(read.execute({ path: "pipe" }, context(ws))),
      /pipe is not a regular file/,
    );
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});

Deno.test("read shows a file whose size says 0, as the files of /proc do", async () => {
  const read = createReadTool();
  const said = await outcome(read.execute({ path: "/proc/self/status" }, context("/")));
  assert.match(said, /^\s+1\tName:/);
});

Deno.test("read refuses a file whose size says 0 yet holds gigabytes, without filling memory", async () => {
  // /proc/self/pagemap says 0 and holds 8 bytes per page of the address space: read whole, it
  // froze the agent for seconds, took gigabytes and ended in a RangeError.
  const read = createReadTool();
  const said = await outcome(read.execute({ path: "/proc/self/pagemap", limit: 5 }, context("/")));
  assert.match(said, /more than its size says/);
});

Deno.test("a path that keeps changing while it is opened is refused after three tries", async () => {
  let opened = 0;
  const changing: ToolFs = {
    ...denoFs,
    open(path) {
      opened++;
      return Promise.reject(new PathChangedError(path));
    },
  };
  const ws = await tree({ "a.txt": "a" });
  try {
    const write = createWriteTool({ fs: changing, roots: [ws] });
    const said = await outcome(write.execute({ path: "a.txt", content: "b" }, context(ws)));
    assert.match(
      said,
      /^Error: "a\.txt" kept changing while it was being opened .*nothing was changed/,
    );
    assert.equal(opened, 3);
    assert.equal(await Deno.readTextFile(join(ws, "a.txt")), "a");
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});

Deno.test({
  name:
    "without every permission, a file call waits for a sandboxed command, and a sandboxed server refuses it",
  async fn() {
    const ws = await tree({ "keep.txt": "" });
    const script = join(ws, "..", `${ws.split("/").at(-1)}_probe.ts`);
    try {
      await Deno.writeTextFile(
        script,
        `
import { createWriteTool } from "${import.meta.resolve("../tools/write.ts")}";
import { sandboxStarted } from "${import.meta.resolve("../lib/sandbox/running.ts")}";
const ws = Deno.args[0];
const write = createWriteTool({ roots: [ws] });
const ctx = { cwd: ws, toolCallId: "1", signal: new AbortController().signal };
const command = sandboxStarted("command", "make test");
let done = false;
const pending = write.execute({ path: "a.txt", content: "x" }, ctx).then(() => done = true);
await new Promise((resolve) => setTimeout(resolve, 300));
console.log("while the command runs:", done);
command.end();
await pending;
console.log("once it ended:", Deno.readTextFileSync(ws + "/a.txt"));
const server = sandboxStarted("server", "mcp-files --root .");
await write.execute({ path: "b.txt", content: "x" }, ctx).catch((e) => console.log(e.message));
server.end();
`,
      );
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--config", CONFIG, "--allow-read", `--allow-write=${ws}`, script, ws],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const said = new TextDecoder().decode(output.stdout);
      assert.ok(output.success, new TextDecoder().decode(output.stderr));
      assert.match(said, /^while the command runs: false\nonce it ended: x\n/);
      assert.match(
        said,
        /b\.txt was not opened: the MCP server "mcp-files --root \." runs in the sandbox .*--allow-all/,
      );
      assert.equal(await exists(join(ws, "b.txt")), false);
    } finally {
      await Deno.remove(ws, { recursive: true });
      await Deno.remove(script).catch(() => {});
    }
  },
});
