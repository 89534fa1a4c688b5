/**
 * The layering of ARCHITECTURE.md, checked on the real import graph (`deno info`): imports point
 * down the ranks below, never up, and never round in a cycle; nothing outside the program
 * imports it; the core vocabulary, the loop, providers and compaction import only what is
 * beneath them; permissions do not import the tools; nothing imports the test doubles.
 *
 * @module
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  checkLayering,
  describeGraph,
  type FileImport,
  type Layering,
  moduleFiles,
  readImports,
} from "./layering_support.ts";

/** What each rank holds, lowest first. */
const RANK_NAMES: Readonly<Record<number, string>> = {
  [-1]: "npm packages loaded on demand",
  0: "foundations",
  1: "the core vocabulary",
  2: "beneath the loop",
  3: "the loop",
  4: "the sandbox",
  5: "capabilities",
  6: "built on the loop and the tools",
  7: "the driver",
  8: "the service",
  9: "the library's root",
  10: "the program",
  11: "the program's entry",
};

/**
 * Every unit's rank. An import between two units goes to a lower rank. A new folder goes in
 * here (and in ARCHITECTURE.md) before the test passes.
 */
const RANKS: Readonly<Record<string, number>> = {
  "lib/lazy": -1,
  "deno.json": 0,
  "lib/files": 0,
  "lib/secrets": 0,
  "lib": 1,
  "lib/providers": 2,
  "lib/compaction": 2,
  "lib/loop": 3,
  "lib/sandbox": 4,
  "tools": 5,
  "lib/permissions": 5,
  "lib/session": 5,
  "lib/memory": 5,
  "lib/mcp": 5,
  "lib/runloop": 6,
  "lib/graph": 6,
  "lib/testing": 6,
  "lib/conversation": 7,
  "lib/service": 8,
  "mod.ts": 9,
  "lib/cli": 10,
  "cli.ts": 11,
};

const FOUNDATIONS = ["lib/files", "lib/secrets"];

const LAYERING: Layering = {
  ranks: RANKS,
  rankNames: RANK_NAMES,
  program: ["lib/cli", "cli.ts"],
  handOff: { from: "mod.ts", to: "cli.ts" },
  importsOnly: {
    "lib": [],
    "lib/loop": ["lib", "lib/providers", "lib/compaction", ...FOUNDATIONS],
    "lib/providers": ["lib", ...FOUNDATIONS, "lib/lazy"],
    "lib/compaction": ["lib", ...FOUNDATIONS],
  },
  neverImports: { "lib/permissions": ["tools"] },
  importedByNone: ["lib/testing"],
};

const ROOT = fileURLToPath(new URL("..", import.meta.url));

Deno.test("the package's imports keep the layering of ARCHITECTURE.md", async () => {
  const files = await moduleFiles(ROOT);
  const imports = await readImports(ROOT, files);
  assert(imports.some((edge) => edge.from === "lib/loop/loop.ts"), "deno info saw no imports");
  const problems = checkLayering(imports, LAYERING, files);
  assert.deepEqual(problems, [], `the folder-level graph:\n${describeGraph(imports)}`);
});

Deno.test("the package's imports: mod.ts reaches cli.ts by import() alone", async () => {
  const imports = await readImports(ROOT, ["mod.ts"]);
  const handOff = imports.filter((edge) => edge.from === "mod.ts" && edge.to === "cli.ts");
  assert.deepEqual(handOff.map((edge) => edge.dynamic), [true]);
});

// The rules themselves, each on a small made-up graph that breaks it.

function edge(from: string, to: string, dynamic = false): FileImport {
  return { from, to, dynamic, line: 1 };
}

/** A made-up graph that keeps every rule. */
const GOOD: FileImport[] = [
  edge("cli.ts", "lib/cli/args.ts"),
  edge("lib/cli/args.ts", "lib/service/mod.ts"),
  edge("mod.ts", "cli.ts", true),
  edge("mod.ts", "lib/loop/agent.ts"),
  edge("lib/loop/agent.ts", "lib/providers/resolve.ts"),
  edge("lib/loop/loop.ts", "lib/compaction/compact.ts"),
  edge("lib/compaction/compact.ts", "lib/messages.ts"),
  edge("lib/permissions/policy.ts", "lib/sandbox/protected.ts"),
  edge("tools/bash.ts", "lib/sandbox/env.ts"),
  edge("lib/sandbox/env.ts", "lib/secrets/redact.ts"),
  edge("lib/testing/memory_fs.ts", "tools/fs.ts"),
];

function problemsWith(...extra: FileImport[]): string[] {
  return checkLayering([...GOOD, ...extra], LAYERING);
}

function assertCaught(problems: string[], rule: string, where: string): void {
  assert(
    problems.some((problem) => problem.startsWith(`${rule}: `) && problem.includes(where)),
    `expected a "${rule}" problem naming ${where}, got:\n${problems.join("\n")}`,
  );
}

Deno.test("checkLayering() finds nothing wrong in a graph that keeps the rules", () => {
  assert.deepEqual(problemsWith(), []);
});

Deno.test("checkLayering() names a folder-level cycle and the imports that close it", () => {
  const problems = problemsWith(
    edge("lib/session/store.ts", "lib/memory/mod.ts"),
    edge("lib/memory/memory.ts", "lib/session/mod.ts"),
  );
  assertCaught(
    problems,
    "cycle",
    "lib/memory → lib/session → lib/memory: lib/memory/memory.ts:1 imports lib/session/mod.ts; " +
      "lib/session/store.ts:1 imports lib/memory/mod.ts",
  );
});

Deno.test("checkLayering() refuses an import of the program from outside it", () => {
  assertCaught(
    problemsWith(edge("mod.ts", "lib/cli/capabilities.ts")),
    "program",
    "mod.ts:1 imports lib/cli/capabilities.ts",
  );
  assertCaught(
    problemsWith(edge("lib/service/run.ts", "cli.ts", true)),
    "program",
    "lib/service/run.ts:1 dynamically imports cli.ts",
  );
});

Deno.test("checkLayering() lets mod.ts reach cli.ts by import() only", () => {
  assertCaught(
    problemsWith(edge("mod.ts", "cli.ts")),
    "program",
    "mod.ts:1 imports cli.ts: nothing outside the program imports it (mod.ts may reach cli.ts only",
  );
});

Deno.test("checkLayering() keeps the core vocabulary free of every folder", () => {
  assertCaught(
    problemsWith(edge("lib/events.ts", "lib/sandbox/policy.ts")),
    "imports-only",
    "lib/events.ts:1 imports lib/sandbox/policy.ts: lib may import only nothing of the package",
  );
  assertCaught(
    problemsWith(edge("lib/tool.ts", "tools/paths.ts")),
    "imports-only",
    "lib/tool.ts:1 imports tools/paths.ts",
  );
});

Deno.test("checkLayering() keeps the loop to the core, providers, compaction and foundations", () => {
  assertCaught(
    problemsWith(edge("lib/loop/tool_phase.ts", "lib/permissions/policy.ts")),
    "imports-only",
    "lib/loop/tool_phase.ts:1 imports lib/permissions/policy.ts: lib/loop may import only lib, " +
      "lib/providers, lib/compaction, lib/files, lib/secrets",
  );
});

Deno.test("checkLayering() keeps providers and compaction to the core and foundations", () => {
  assertCaught(
    problemsWith(edge("lib/providers/openai.ts", "lib/loop/options.ts")),
    "imports-only",
    "lib/providers/openai.ts:1 imports lib/loop/options.ts",
  );
  assertCaught(
    problemsWith(edge("lib/compaction/compact.ts", "lib/providers/resolve.ts")),
    "imports-only",
    "lib/compaction/compact.ts:1 imports lib/providers/resolve.ts",
  );
});

Deno.test("checkLayering() keeps permissions from importing the tools", () => {
  assertCaught(
    problemsWith(edge("lib/permissions/policy.ts", "tools/paths.ts")),
    "never-imports",
    "lib/permissions/policy.ts:1 imports tools/paths.ts: lib/permissions must not import tools",
  );
});

Deno.test("checkLayering() keeps the test doubles out of the package", () => {
  assertCaught(
    problemsWith(edge("lib/cli/prepare.ts", "lib/testing/scripted_model.ts")),
    "imported-by-none",
    "lib/cli/prepare.ts:1 imports lib/testing/scripted_model.ts",
  );
});

Deno.test("checkLayering() refuses an import up the ranks", () => {
  assertCaught(
    problemsWith(edge("lib/session/store.ts", "lib/conversation/conversation.ts")),
    "rank",
    "lib/session/store.ts:1 imports lib/conversation/conversation.ts: lib/session " +
      "(rank 5: capabilities) may import only lower ranks, not lib/conversation (rank 7",
  );
  assertCaught(
    problemsWith(edge("tools/bash.ts", "lib/permissions/shell.ts")),
    "rank",
    "tools/bash.ts:1 imports lib/permissions/shell.ts",
  );
});

Deno.test("checkLayering() asks for a new folder to be placed in the ranks", () => {
  const problems = checkLayering(
    [...GOOD, edge("lib/plugins/load.ts", "lib/errors.ts")],
    LAYERING,
    [
      "lib/hooks_extra/empty.ts",
    ],
  );
  assertCaught(problems, "unplaced", "lib/plugins is in no layer: place it in the ranks table");
  assertCaught(problems, "unplaced", "lib/hooks_extra is in no layer");
});

Deno.test("importing the package loads no provider SDK: they come by import() on first use", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--config", `${ROOT}/deno.json`, `${ROOT}/mod.ts`],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert(output.success, new TextDecoder().decode(output.stderr));
  const info = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    roots: string[];
    modules: {
      specifier: string;
      dependencies?: { code?: { specifier?: string }; isDynamic?: boolean }[];
    }[];
  };
  const byName = new Map(info.modules.map((module) => [module.specifier, module]));
  // Every module reached from mod.ts by static imports alone, and the npm packages they name.
  const seen = new Set<string>();
  const packages = new Set<string>();
  const stack = [...info.roots];
  while (stack.length > 0) {
    const specifier = stack.pop()!;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    for (const dependency of byName.get(specifier)?.dependencies ?? []) {
      const to = dependency.code?.specifier;
      if (!to || dependency.isDynamic) continue;
      if (to.startsWith("npm:")) packages.add(to.replace(/^npm:\/?/, "").replace(/@[^@/]*$/, ""));
      else stack.push(to);
    }
  }
  assert(seen.size > 10, "deno info saw no imports");
  assert(packages.has("zod"), `the static npm imports: ${[...packages].join(", ")}`);
  for (const sdk of ["openai", "@anthropic-ai/sdk"]) {
    assert(!packages.has(sdk), `${sdk} is imported statically from mod.ts`);
  }
});
