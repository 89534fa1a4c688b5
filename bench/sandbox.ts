/**
 * What the bubblewrap sandbox adds to starting a command: `deno run -A bench/sandbox.ts [runs]`.
 * The workspace is a git repository with some depth to it (nested directories, a nested
 * repository, a submodule's `.git` file) and, in the home directory, the credentials the sandbox
 * hides, so that the guards and hiding have their real work to do. Five variants, interleaved
 * run by run so that drift hits them all alike:
 *
 * - prepare: working out the mounts and holding the placeholders of absent protected entries,
 *   then letting them go (`prepareSandbox` and `release`), without starting anything;
 * - raw: `bash -c true` through `Deno.Command`;
 * - raw in bwrap: `bwrap <args> -- bash -c true` through `Deno.Command`, prepared each run;
 * - tool: the `bash` tool running `true`;
 * - tool in sandbox: the `bash` tool running `true` with the sandbox on.
 *
 * The added start-up time is (tool in sandbox − tool) at the median (target ≤ 20 ms).
 */

import { join } from "node:path";
import { createBashTool } from "../tools/mod.ts";
import { detectSandbox } from "../lib/sandbox/mod.ts";
import * as sandbox from "../lib/sandbox/bubblewrap.ts";
import type { SandboxArgsOptions } from "../lib/sandbox/bubblewrap.ts";

const RUNS = Number(Deno.args[0] ?? 200);
const WARMUP = 20;
const TARGET_MS = 20;

const found = await detectSandbox();
if (!found.available) {
  console.log(`bench/sandbox: skipped, no sandbox here: ${found.reason}`);
  Deno.exit(0);
}

// Where prepareSandbox is missing (an older tree), sandboxArgs does the same work but the release.
const prepared: Partial<typeof sandbox> = sandbox;
const prepare = (options: SandboxArgsOptions): { args: string[]; release(): void } =>
  prepared.prepareSandbox?.(options) ?? { args: sandbox.sandboxArgs(options), release() {} };

/** A workspace like a real one: a repository, 40 directories of 5 files, nested repositories. */
async function workspace(): Promise<string> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "bench_sandbox_" }));
  const git = (cwd: string, ...args: string[]) =>
    new Deno.Command("git", { args, cwd, stdout: "null", stderr: "null" }).output();
  await git(dir, "init", "-q");
  for (let i = 0; i < 40; i++) {
    const sub = join(dir, `pkg${i % 8}`, `mod${i}`);
    await Deno.mkdir(sub, { recursive: true });
    for (let j = 0; j < 5; j++) await Deno.writeTextFile(join(sub, `f${j}.ts`), "export {};\n");
  }
  await Deno.mkdir(join(dir, "vendor", "lib"), { recursive: true });
  await git(join(dir, "vendor", "lib"), "init", "-q");
  await Deno.mkdir(join(dir, "third_party", "dep"), { recursive: true });
  await Deno.writeTextFile(
    join(dir, "third_party", "dep", ".git"),
    "gitdir: ../../.git/modules/dep\n",
  );
  await Deno.writeTextFile(
    join(dir, ".gitmodules"),
    '[submodule "dep"]\n\tpath = third_party/dep\n',
  );
  await Deno.mkdir(join(dir, "node_modules", "x"), { recursive: true });
  return dir;
}

/** A home directory with the usual credentials in it. */
async function home(): Promise<string> {
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ dir: "/var/tmp", prefix: "bench_home_" }),
  );
  for (const path of [".ssh/id_ed25519", ".git-credentials", ".npmrc", ".bash_history"]) {
    await Deno.mkdir(join(dir, path, ".."), { recursive: true });
    await Deno.writeTextFile(join(dir, path), "secret\n");
  }
  return dir;
}

const ws = await workspace();
const homeDir = await home();
const options = {
  command: ["bash", "-c", "true"],
  cwd: ws,
  writable: [ws],
  net: false,
  home: homeDir,
  bwrap: found.path,
};
const plain = createBashTool();
const confined = createBashTool({
  sandbox: { bwrap: found.path, writable: [ws], net: false },
  env: { HOME: homeDir },
});
const ctx = { cwd: ws, signal: new AbortController().signal, toolCallId: "b" };

async function spawn(command: string, args: string[]): Promise<void> {
  const { success } = await new Deno.Command(command, {
    args,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  })
    .output();
  if (!success) throw new Error(`${command} failed`);
}

async function tool(bash: typeof plain): Promise<void> {
  const result = await bash.execute({ command: "true" }, ctx);
  if (typeof result === "string" || result.isError) throw new Error("the command failed");
}

const variants: Record<string, () => Promise<void>> = {
  "prepare": () => Promise.resolve(prepare(options).release()),
  "raw": () => spawn("bash", ["-c", "true"]),
  "raw in bwrap": async () => {
    const prepared = prepare(options);
    try {
      await spawn(found.path, prepared.args);
    } finally {
      prepared.release();
    }
  },
  "tool": () => tool(plain),
  "tool in sandbox": () => tool(confined),
};
const counted = prepare(options);
const mounts = counted.args.filter((arg) => /^--(ro-)?bind$|^--tmpfs$/.test(arg)).length;
counted.release();
const samples: Record<string, number[]> = Object.fromEntries(
  Object.keys(variants).map((name) => [name, []]),
);
try {
  for (let run = 0; run < WARMUP + RUNS; run++) {
    for (const [name, variant] of Object.entries(variants)) {
      const started = performance.now();
      await variant();
      if (run >= WARMUP) samples[name].push(performance.now() - started);
    }
  }
} finally {
  await Deno.remove(ws, { recursive: true });
  await Deno.remove(homeDir, { recursive: true });
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

console.log(`bubblewrap ${found.version} (${found.path}), ${RUNS} runs each, times in ms`);
console.log(`workspace: a repository, 40 directories, nested repositories; ${mounts} mounts`);
console.log(`${"variant".padEnd(16)} ${"median".padStart(7)} ${"p90".padStart(7)}`);
for (const [name, values] of Object.entries(samples)) {
  const median = quantile(values, 0.5).toFixed(2).padStart(7);
  console.log(`${name.padEnd(16)} ${median} ${quantile(values, 0.9).toFixed(2).padStart(7)}`);
}
const raw = quantile(samples["raw in bwrap"], 0.5) - quantile(samples["raw"], 0.5);
const added = quantile(samples["tool in sandbox"], 0.5) - quantile(samples["tool"], 0.5);
console.log(`bwrap adds ${raw.toFixed(2)} ms to a bare spawn (median, preparing included)`);
console.log(
  `the sandbox adds ${added.toFixed(2)} ms per bash tool call (median; target ≤ ${TARGET_MS} ms): ${
    added <= TARGET_MS ? "ok" : "OVER TARGET"
  }`,
);
