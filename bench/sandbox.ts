/**
 * What the bubblewrap sandbox adds to starting a command: `deno run -A bench/sandbox.ts [runs]`.
 * Four variants, interleaved run by run so that drift hits them all alike:
 *
 * - raw: `bash -c true` through `Deno.Command`;
 * - raw in bwrap: `bwrap <sandboxArgs> -- bash -c true` through `Deno.Command`;
 * - tool: the `bash` tool running `true`;
 * - tool in sandbox: the `bash` tool running `true` with the sandbox on.
 *
 * The added start-up time is (tool in sandbox − tool) at the median (target ≤ 20 ms).
 */

import { createBashTool, detectSandbox, sandboxArgs } from "../mod.ts";

const RUNS = Number(Deno.args[0] ?? 200);
const WARMUP = 20;
const TARGET_MS = 20;

const found = await detectSandbox();
if (!found.available) {
  console.log(`bench/sandbox: skipped, no sandbox here: ${found.reason}`);
  Deno.exit(0);
}
const workspace = await Deno.realPath(await Deno.makeTempDir({ prefix: "bench_sandbox_" }));
const home = Deno.env.get("HOME");
const args = sandboxArgs({
  command: ["bash", "-c", "true"],
  cwd: workspace,
  writable: [workspace],
  net: false,
  home,
});
const plain = createBashTool();
const confined = createBashTool({
  sandbox: { bwrap: found.path, writable: [workspace], net: false },
});
const ctx = { cwd: workspace, signal: new AbortController().signal, toolCallId: "b" };

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
  "raw": () => spawn("bash", ["-c", "true"]),
  "raw in bwrap": () => spawn(found.path, args),
  "tool": () => tool(plain),
  "tool in sandbox": () => tool(confined),
};
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
  await Deno.remove(workspace, { recursive: true });
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

console.log(`bubblewrap ${found.version} (${found.path}), ${RUNS} runs each, times in ms`);
console.log(`${"variant".padEnd(16)} ${"median".padStart(7)} ${"p90".padStart(7)}`);
for (const [name, values] of Object.entries(samples)) {
  const median = quantile(values, 0.5).toFixed(2).padStart(7);
  console.log(`${name.padEnd(16)} ${median} ${quantile(values, 0.9).toFixed(2).padStart(7)}`);
}
const raw = quantile(samples["raw in bwrap"], 0.5) - quantile(samples["raw"], 0.5);
const added = quantile(samples["tool in sandbox"], 0.5) - quantile(samples["tool"], 0.5);
console.log(`bwrap adds ${raw.toFixed(2)} ms to a bare spawn (median)`);
console.log(
  `the sandbox adds ${added.toFixed(2)} ms per bash tool call (median; target ≤ ${TARGET_MS} ms): ${
    added <= TARGET_MS ? "ok" : "OVER TARGET"
  }`,
);
