/**
 * What watching a sandbox's leftovers costs per sandboxed command (see
 * `lib/sandbox/leftovers.ts`): `deno bench -A bench/leftovers_bench.ts`.
 *
 * - the watch of git's index when it did not change (a `stat` at the start and at the end; and
 *   for each gitlink the reading of its repository's `.git`, `config` and `commondir`);
 * - the same when it changed: read and parsed again (10,000 entries, about 1 MB);
 * - parsing alone, for 1,000 and 100,000 entries, versions 2 and 4;
 * - the look for repositories the command made (a workspace of 81 directories within three
 *   levels), and the whole watch as the `bash` tool pays it when nothing happened;
 * - undoing: a gitlink taken out of the index by git in a sandbox of its own (bwrap).
 *
 * The indexes are made a few seconds before the runs: one changed in the last second or two is
 * read again at every check (its change time is only known to the second).
 */

import { join } from "node:path";
import { detectSandbox } from "../lib/sandbox/detect.ts";
import { indexGitlinks } from "../lib/sandbox/git_index.ts";
import { watchGitlinks } from "../lib/sandbox/gitlinks.ts";
import { watchLeftovers } from "../lib/sandbox/leftovers.ts";
import { madeRepositories } from "../lib/sandbox/made_repositories.ts";
import { guardPlan } from "../lib/sandbox/protected.ts";

const found = await detectSandbox();
const bwrap = found.available ? found.path : undefined;

function git(cwd: string, ...args: string[]): void {
  const output = new Deno.Command("git", {
    args: ["-c", "user.name=a", "-c", "user.email=a@b", ...args],
    cwd,
    stdout: "null",
    stderr: "piped",
  }).outputSync();
  if (!output.success) throw new Error(new TextDecoder().decode(output.stderr));
}

/** A repository of `files` tracked files (index version `version`) and `links` gitlinks. */
async function repository(files: number, links: number, version = 2): Promise<string> {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "bench_leftovers_" }));
  git(dir, "init", "-q");
  git(dir, "config", "index.version", String(version));
  const blob = new TextDecoder().decode(
    new Deno.Command("git", { args: ["hash-object", "-w", "--stdin"], cwd: dir, stdin: "null" })
      .outputSync().stdout,
  ).trim();
  // Entries straight into the index: the files need not exist for it to be read.
  const lines = ["100644 " + blob + "\tREADME.md"];
  for (let i = 0; i < files; i++) {
    lines.push(`100644 ${blob}\tpkg${i % 40}/mod${i % 400}/file${i}.ts`);
  }
  const info = new Deno.Command("git", {
    args: ["update-index", "--index-info"],
    cwd: dir,
    stdin: "piped",
  }).spawn();
  const writer = info.stdin.getWriter();
  await writer.write(new TextEncoder().encode(`${lines.join("\n")}\n`));
  await writer.close();
  if (!(await info.status).success) throw new Error("git update-index failed");
  for (let i = 0; i < links; i++) {
    const sub = join(dir, `vendor${i}`);
    Deno.mkdirSync(sub);
    git(sub, "init", "-q");
    git(sub, "commit", "-q", "--allow-empty", "-m", "x");
    git(dir, "add", `vendor${i}`);
  }
  for (let i = 0; i < 40; i++) Deno.mkdirSync(join(dir, `pkg${i}`, "src"), { recursive: true });
  return dir;
}

const small = await repository(0, 0);
const linked = await repository(0, 3);
const big = await repository(10_000, 0);
const parse1k = await repository(1_000, 0);
const parse100k = await repository(100_000, 0);
const parse100kV4 = await repository(100_000, 0, 4);
const undone = await repository(0, 1);
const all = [small, linked, big, parse1k, parse100k, parse100kV4, undone];
await new Promise((resolve) => setTimeout(resolve, 2_500));

const repo = (dir: string) => ({ workTree: dir, gitDir: join(dir, ".git") });

Deno.bench("index unchanged, no gitlinks: watch at the start, check at the end", {
  group: "unchanged",
  baseline: true,
}, async () => {
  await watchGitlinks([repo(small)], { bwrap }).check();
});

Deno.bench("index unchanged, 3 gitlinks: watch at the start, check at the end", {
  group: "unchanged",
}, async () => {
  await watchGitlinks([repo(linked)], { bwrap }).check();
});

let tick = 0;
Deno.bench("index changed, 10,000 entries: watch, check (read and parsed again)", {
  group: "changed",
}, async (b) => {
  const watch = watchGitlinks([repo(big)], { bwrap });
  // A change the key sees: the modification time.
  Deno.utimeSync(join(big, ".git", "index"), 1_000_000 + ++tick, 1_000_000 + tick);
  b.start();
  await watch.check();
  b.end();
});

for (const [label, dir] of [["1,000", parse1k], ["100,000", parse100k]] as const) {
  const bytes = Deno.readFileSync(join(dir, ".git", "index"));
  Deno.bench(`parse an index of ${label} entries (version 2, ${bytes.length} bytes)`, {
    group: "parse",
  }, () => {
    indexGitlinks(bytes);
  });
}
const v4 = Deno.readFileSync(join(parse100kV4, ".git", "index"));
Deno.bench(`parse an index of 100,000 entries (version 4, ${v4.length} bytes)`, {
  group: "parse",
}, () => {
  indexGitlinks(v4);
});

Deno.bench("look for repositories made (81 directories, depth 3)", { group: "whole" }, () => {
  madeRepositories({ roots: [big], since: Date.now() });
});

Deno.bench("the whole watch, nothing happened (what a bash call pays)", {
  group: "whole",
}, async (b) => {
  const plan = guardPlan({ cwd: big, writable: [big] });
  b.start();
  await watchLeftovers({ cwd: big, roots: [big], plan, bwrap }).check();
  b.end();
});

if (bwrap) {
  // The repository at vendor0 is registered again before each run, after the watch started.
  git(undone, "rm", "-qf", "--cached", "vendor0");
  Deno.bench("undo: one gitlink taken out by git in its own sandbox, and the index read again", {
    group: "undo",
    n: 50,
    warmup: 5,
  }, async (b) => {
    const watch = watchGitlinks([repo(undone)], { bwrap });
    git(undone, "add", "vendor0");
    b.start();
    const [finding] = await watch.check();
    b.end();
    if (!finding?.removed) throw new Error(`not undone: ${JSON.stringify(finding)}`);
  });
}

globalThis.addEventListener("unload", () => {
  for (const dir of all) Deno.removeSync(dir, { recursive: true });
});
