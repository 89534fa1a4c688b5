/**
 * Prints the loop's figures: the heap at 10,000 tool-call steps, overhead per turn, memory per
 * turn of history, and text-delta throughput. Run with `deno task bench` (it needs
 * `--v8-flags=--expose-gc`).
 */

import { deltaRun, toolRun } from "./common.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --v8-flags=--expose-gc");

/** Heap in use once garbage, finalizers included, has been collected. */
async function heap(): Promise<number> {
  for (let i = 0; i < 4; i++) {
    gc!();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Deno.memoryUsage().heapUsed;
}

// The heap at 10,000 steps: the whole heap (the modules' included) after a full collection the
// moment a 10,000-step run ends, its result held. Measured first, in a heap nothing else has
// used yet.
{
  const result = await toolRun(10_000);
  gc();
  const used = Deno.memoryUsage().heapUsed;
  console.log(
    `heap at 10,000 steps: ${(used / 1e6).toFixed(1)} MB after a full GC (${
      result.messages.length.toLocaleString("en-US")
    } messages held; target ≤ 16 MB)`,
  );
}

// Warm up the JIT.
for (let i = 0; i < 5; i++) await toolRun(1_000);
await deltaRun(100_000);

// Overhead per turn over a 1,000-turn run (median of 15 runs).
const times: number[] = [];
for (let i = 0; i < 15; i++) {
  const started = performance.now();
  await toolRun(1_000);
  times.push(performance.now() - started);
}
times.sort((a, b) => a - b);
const perTurn = times[7] / 1_000;
console.log(
  `loop overhead: ${perTurn.toFixed(4)} ms/turn (median 1,000-turn run ${
    times[7].toFixed(1)
  } ms; target ≤ 0.1 ms/turn)`,
);

// Memory: the history a run returns, measured at several lengths.
const sizes = [250, 500, 1_000, 2_000];
const base = await heap();
const rows: string[] = [];
let previous = { turns: 0, bytes: 0 };
for (const turns of sizes) {
  const result = await toolRun(turns);
  const bytes = (await heap()) - base;
  const slope = (bytes - previous.bytes) / (turns - previous.turns);
  rows.push(
    `  ${String(turns).padStart(5)} turns: ${(bytes / 1024).toFixed(0).padStart(6)} KiB retained, ${
      (bytes / turns).toFixed(0)
    } B/turn, marginal ${slope.toFixed(0)} B/turn (${result.messages.length} messages)`,
  );
  previous = { turns, bytes };
  // Keep `result` alive until measured.
  if (result.messages.length === 0) throw new Error("unreachable");
}
console.log(
  `memory per turn of history (linear when the marginal cost stays flat):\n${rows.join("\n")}`,
);

// Text-delta throughput through the loop (median of 7 runs of 100,000 deltas).
const rates: number[] = [];
for (let i = 0; i < 7; i++) {
  const started = performance.now();
  const count = await deltaRun(100_000);
  rates.push(count / ((performance.now() - started) / 1000));
}
rates.sort((a, b) => a - b);
console.log(
  `text-delta throughput: ${
    Math.round(rates[3]).toLocaleString("en-US")
  } deltas/s (target ≥ 100,000)`,
);
