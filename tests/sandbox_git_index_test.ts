/**
 * Git's index read for its gitlinks without running git (`lib/sandbox/git_index.ts`): the same
 * gitlinks as `git ls-files --stage` lists, whatever the index's version, object names and paths.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { indexGitlinks } from "../lib/sandbox/git_index.ts";
import { Scratch } from "./cli_sandbox_support.ts";

function git(cwd: string, ...args: string[]): Uint8Array {
  const output = new Deno.Command("git", {
    args: ["-c", "user.name=a", "-c", "user.email=a@b", ...args],
    cwd,
    stdin: "null",
  }).outputSync();
  if (!output.success) throw new Error(new TextDecoder().decode(output.stderr));
  return output.stdout;
}

/** The gitlinks `git ls-files --stage -z` lists, as bytes joined by commas. */
function listed(dir: string): string[] {
  const data = git(dir, "ls-files", "--stage", "-z");
  const found: string[] = [];
  for (let at = 0; at < data.length;) {
    const end = data.indexOf(0, at);
    const line = data.subarray(at, end);
    if (new TextDecoder().decode(line.subarray(0, 7)) === "160000 ") {
      found.push([...line.subarray(line.indexOf(9) + 1)].join(","));
    }
    at = end + 1;
  }
  return found;
}

/**
 * A repository with files, gitlinks at ordinary, nested, non-ASCII and very long paths (past the
 * 4,095 bytes the entry's flags can hold), and from version 3 an entry added with intent to add
 * (extended flags).
 */
function repository(dir: string, version: number, format: "sha1" | "sha256"): void {
  git(dir, "init", "-q", `--object-format=${format}`);
  git(dir, "config", "index.version", String(version));
  const sub = join(dir, "inner");
  Deno.mkdirSync(sub);
  git(sub, "init", "-q", `--object-format=${format}`);
  git(sub, "commit", "-q", "--allow-empty", "-m", "x");
  const object = new TextDecoder().decode(git(sub, "rev-parse", "HEAD")).trim();
  Deno.mkdirSync(join(dir, "a", "b"), { recursive: true });
  for (const name of ["a/b/one.ts", "a/two.ts", "zz.txt"]) {
    Deno.writeTextFileSync(join(dir, name), name);
  }
  git(dir, "add", "a", "zz.txt", "inner");
  const long = Array.from({ length: 17 }, () => "n".repeat(250)).join("/");
  for (const path of ["a/b/é sub", "a/link", `${long}/deep`, "m/x"]) {
    git(dir, "update-index", "--add", "--cacheinfo", `160000,${object},${path}`);
  }
  // Extended flags exist from version 3 on: git writes 3 for 2 when an entry has them.
  if (version >= 3) {
    Deno.writeTextFileSync(join(dir, "later.txt"), "later");
    git(dir, "add", "-N", "later.txt");
  }
}

for (const version of [2, 3, 4]) {
  for (const format of ["sha1", "sha256"] as const) {
    Deno.test(`indexGitlinks() finds what git lists in an index of version ${version}, ${format}`, async () => {
      await using scratch = new Scratch();
      const dir = await scratch.temp("agent_git_index_");
      repository(dir, version, format);
      const index = Deno.readFileSync(join(dir, ".git", "index"));
      assert.equal(new DataView(index.buffer).getUint32(4), version);
      const found = indexGitlinks(index, {
        hashBytes: format === "sha256" ? 32 : 20,
      });
      assert.equal(found.split, false);
      if (found.split) return;
      assert.deepEqual(found.gitlinks.map((link) => [...link.bytes].join(",")), listed(dir));
      assert.equal(found.gitlinks.length, 5);
      assert.ok(found.gitlinks.some((link) => link.path === "a/b/é sub"));
    });
  }
}

Deno.test("indexGitlinks() says a split index is split, and a cut one is refused", async () => {
  await using scratch = new Scratch();
  const dir = await scratch.temp("agent_git_index_");
  repository(dir, 2, "sha1");
  const whole = Deno.readFileSync(join(dir, ".git", "index"));
  assert.throws(() => indexGitlinks(whole.subarray(0, 200)), /cut short|malformed/);
  assert.throws(() => indexGitlinks(new TextEncoder().encode("not an index at all, no")), /DIRC/);
  git(dir, "update-index", "--split-index");
  assert.deepEqual(indexGitlinks(Deno.readFileSync(join(dir, ".git", "index"))), { split: true });
});
