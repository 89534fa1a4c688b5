/**
 * What the permission rules cost where they stand on what a call reaches:
 * `deno bench --allow-all bench/rules_bench.ts`. A bash line read through its runners and a
 * here-document, a path rule matched on the real path, the check of one walked path, and a
 * `grep` over 2,000 files with a deny rule against none.
 */

import { evaluateRules, parseRule, toolChecks } from "../lib/permissions/mod.ts";
import { runToolCall } from "../lib/tool_runner.ts";
import { toolRegistry } from "../lib/tool.ts";
import { permissionPolicy } from "../lib/permissions/policy.ts";
import { createGrepTool } from "../tools/grep.ts";

const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "rules_bench_" }));
for (let dir = 0; dir < 40; dir++) {
  await Deno.mkdir(`${root}/src/d${dir}`, { recursive: true });
  for (let file = 0; file < 50; file++) {
    await Deno.writeTextFile(
      `${root}/src/d${dir}/f${file}.ts`,
      `export const value${file} = ${dir * file};\n`.repeat(20),
    );
  }
}
await Deno.mkdir(`${root}/secrets`);
await Deno.writeTextFile(`${root}/secrets/key.txt`, "value = secret\n");
await Deno.symlink(`${root}/secrets/key.txt`, `${root}/link.txt`);
globalThis.addEventListener("unload", () => Deno.removeSync(root, { recursive: true }));

const bashRules = [
  parseRule("bash(rm *)", "deny", "--deny"),
  parseRule("bash(git *)", "allow", "--allow"),
];
const pathRules = [parseRule("read(secrets/**)", "deny", "--deny")];
const line = "taskset -c 0 nice -n 5 flock /tmp/l bash <<'EOF'\ngit status && rm -rf build\nEOF\n";
const call = { type: "tool_call" as const, id: "1", name: "grep", input: {} };
const { checkPath } = await toolChecks(pathRules, call, { cwd: root });
const grep = createGrepTool();

Deno.bench("bash rule: a line through three runners and a here-document", async () => {
  await evaluateRules(bashRules, { name: "bash", input: { command: line } }, { cwd: root });
});

Deno.bench("path rule: a read through a symlink, matched on its real path", async () => {
  await evaluateRules(pathRules, { name: "read", input: { path: "link.txt" } }, { cwd: root });
});

Deno.bench("checkPath: one walked path", () => {
  checkPath!(`${root}/src/d7/f3.ts`, "read");
});

for (const rules of [[], pathRules]) {
  const policy = permissionPolicy({ rules, mode: () => "default", roots: [root] });
  Deno.bench({
    name: `grep over 2,000 files, ${rules.length ? "with a deny rule" : "no rule"}`,
    group: "grep",
    baseline: rules.length === 0,
    async fn() {
      const result = await runToolCall(
        { type: "tool_call", id: "g", name: "grep", input: { pattern: "value7 =" } },
        toolRegistry([grep]),
        { cwd: root, signal: new AbortController().signal, checks: policy.checks },
      );
      if (result.isError) throw new Error(result.output);
    },
  });
}
