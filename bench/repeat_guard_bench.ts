/**
 * What the doom-loop guard costs per tool call: `deno bench -A bench/repeat_guard_bench.ts`.
 * Each call's name, input and result are digested (SHA-256) once; nothing of the result is kept,
 * so a huge result costs one pass over its text.
 */

import { repeatGuard } from "../lib/loop/repeat_guard.ts";

const call = {
  type: "tool_call" as const,
  id: "1",
  name: "bash",
  input: { command: "gh run view 123 --json status", timeout: 60 },
};

for (const [label, size] of [["1 KB", 1_000], ["50 KB", 50_000], ["5 MB", 5_000_000]] as const) {
  const outputs = ["a", "b"].map((fill) => fill.repeat(size));
  const guard = repeatGuard();
  let i = 0;
  Deno.bench(`observe() a call with a ${label} result`, { group: label }, () => {
    // Results alternate, as a polled status changes: the guard never says stop.
    guard.observe(call, { output: outputs[i++ % 2], isError: false });
  });
}
