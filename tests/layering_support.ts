/**
 * The package's import graph and the rules it keeps. {@link readImports} asks `deno info` for
 * every import between the package's own files; {@link checkLayering} counts them by unit (the
 * root of `lib/` is one unit, each folder under it another, the whole of `lib/cli/` one, `tools/`
 * one, each top-level file one) and names every import that breaks a rule of a {@link Layering}.
 *
 * @module
 */

import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** One import from a file of the package to another, as `deno info` reports it. */
export interface FileImport {
  /** The importing file, relative to the package root (`lib/loop/loop.ts`). */
  from: string;
  /** The imported file, relative to the package root. */
  to: string;
  /** Whether the import is an `import()` expression. */
  dynamic: boolean;
  /** The 1-based line of the import in `from`, when known. */
  line?: number;
}

/** The layers of the package and the rules between them. */
export interface Layering {
  /** Every unit's rank: an import between two units must go to a lower rank. */
  ranks: Readonly<Record<string, number>>;
  /** A line per rank saying what it holds, for messages. */
  rankNames: Readonly<Record<number, string>>;
  /** The units that make the program: nothing outside them imports them. */
  program: readonly string[];
  /** The one import into the program from outside it, allowed only as a dynamic import. */
  handOff: { from: string; to: string };
  /** Units that may import only the units listed (besides themselves). */
  importsOnly: Readonly<Record<string, readonly string[]>>;
  /** Units that must not import the units listed. */
  neverImports: Readonly<Record<string, readonly string[]>>;
  /** Units that no other unit of the package imports (test doubles). */
  importedByNone: readonly string[];
}

/**
 * The unit a file of the package belongs to: `lib` for the files at the root of `lib/`,
 * `lib/cli` for anything under `lib/cli/`, `lib/<name>` for a folder under `lib/`, the top
 * folder elsewhere (`tools`), and the file itself at the top (`mod.ts`).
 */
export function unitOf(path: string): string {
  const parts = path.split("/");
  if (parts.length === 1) return path;
  if (parts[0] !== "lib") return parts[0];
  return parts.length === 2 ? "lib" : `lib/${parts[1]}`;
}

/** The package's module files: `mod.ts`, `cli.ts` and those under `lib/` and `tools/`. */
export async function moduleFiles(root: string): Promise<string[]> {
  return [
    "mod.ts",
    "cli.ts",
    ...await _filesUnder(root, "lib"),
    ...await _filesUnder(root, "tools"),
  ];
}

/** Lists the module files under `dir` (relative to `root`), tests excepted. */
async function _filesUnder(root: string, dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(join(root, dir))) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) files.push(...await _filesUnder(root, path));
    else if (/\.(ts|js)$/.test(entry.name) && !/_test\.ts$/.test(entry.name)) files.push(path);
  }
  return files;
}

interface _InfoDependency {
  code?: { specifier?: string; span?: { start: { line: number } } };
  type?: { specifier?: string; span?: { start: { line: number } } };
  isDynamic?: boolean;
}

interface _Info {
  modules: { specifier: string; dependencies?: _InfoDependency[] }[];
}

/**
 * Reads every import between the package's files: one `deno info --json` (run by the tests' own
 * Deno, with the package's `deno.json`) of a module that imports each of `files`, so files
 * reached only by a `Worker` count too.
 */
export async function readImports(root: string, files: readonly string[]): Promise<FileImport[]> {
  const entry = await Deno.makeTempFile({ prefix: "layering_", suffix: ".ts" });
  try {
    const lines = files.map((file) => `import ${JSON.stringify(pathToFileURL(join(root, file)))};`);
    await Deno.writeTextFile(entry, lines.join("\n") + "\n");
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", "--config", join(root, "deno.json"), entry],
      cwd: root,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!output.success) {
      throw new Error(`deno info failed: ${new TextDecoder().decode(output.stderr)}`);
    }
    const info = JSON.parse(new TextDecoder().decode(output.stdout)) as _Info;
    return _importsOf(info, root);
  } finally {
    await Deno.remove(entry);
  }
}

function _importsOf(info: _Info, root: string): FileImport[] {
  const prefix = pathToFileURL(root).href.replace(/\/?$/, "/");
  const own = (specifier: string | undefined): string | undefined =>
    specifier?.startsWith(prefix) ? decodeURIComponent(specifier.slice(prefix.length)) : undefined;
  const imports: FileImport[] = [];
  for (const module of info.modules) {
    const from = own(module.specifier);
    if (from === undefined) continue;
    for (const dependency of module.dependencies ?? []) {
      for (const side of [dependency.code, dependency.type]) {
        const to = own(side?.specifier);
        if (to === undefined) continue;
        const line = side?.span === undefined ? undefined : side.span.start.line + 1;
        imports.push({ from, to, dynamic: dependency.isDynamic === true, line });
      }
    }
  }
  return imports;
}

function _where(edge: FileImport): string {
  const at = edge.line === undefined ? edge.from : `${edge.from}:${edge.line}`;
  return `${at} ${edge.dynamic ? "dynamically imports" : "imports"} ${edge.to}`;
}

function _isHandOff(edge: FileImport, layering: Layering): boolean {
  return edge.dynamic && edge.from === layering.handOff.from && edge.to === layering.handOff.to;
}

/** Gives the folder-level graph: for each unit, the units it imports and one import for each. */
export function unitGraph(imports: readonly FileImport[]): Map<string, Map<string, FileImport>> {
  const graph = new Map<string, Map<string, FileImport>>();
  for (const edge of imports) {
    const from = unitOf(edge.from);
    const to = unitOf(edge.to);
    if (from === to) continue;
    const targets = graph.get(from) ?? new Map<string, FileImport>();
    if (!targets.has(to)) targets.set(to, edge);
    graph.set(from, targets);
  }
  return graph;
}

/** Finds one cycle through each strongly connected group of units (Tarjan's algorithm). */
function _cycles(graph: Map<string, Map<string, FileImport>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (unit: string): void => {
    index.set(unit, index.size);
    low.set(unit, index.get(unit)!);
    stack.push(unit);
    onStack.add(unit);
    for (const next of graph.get(unit)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(unit, Math.min(low.get(unit)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(unit, Math.min(low.get(unit)!, index.get(next)!));
    }
    if (low.get(unit) !== index.get(unit)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== unit);
    if (group.length > 1) groups.push(group);
  };
  for (const unit of [...graph.keys()].sort()) if (!index.has(unit)) visit(unit);
  return groups.map((group) => _cycleThrough(graph, new Set(group)));
}

/** The shortest way from the group's first unit back to itself, staying in the group. */
function _cycleThrough(graph: Map<string, Map<string, FileImport>>, group: Set<string>): string[] {
  const start = [...group].sort()[0];
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const unit = queue.shift()!;
    for (const next of [...graph.get(unit)?.keys() ?? []].sort()) {
      if (!group.has(next) || previous.has(next)) continue;
      previous.set(next, unit);
      if (next === start) {
        const path = [start];
        for (let at = unit; at !== start; at = previous.get(at)!) path.unshift(at);
        return [start, ...path];
      }
      queue.push(next);
    }
  }
  return [start, start];
}

/**
 * Names every import that breaks a rule of `layering`, one message each (none when the graph
 * keeps them all). Each message starts with the rule it breaks, then the file-to-file import.
 * `files` adds units that import nothing and that nothing imports, so they are placed too.
 */
export function checkLayering(
  imports: readonly FileImport[],
  layering: Layering,
  files: readonly string[] = [],
): string[] {
  const problems: string[] = [];
  const program = new Set(layering.program);
  const rankOf = (unit: string): string =>
    `${unit} (rank ${layering.ranks[unit]}: ${layering.rankNames[layering.ranks[unit]] ?? "?"})`;

  const units = new Set([
    ...files.map(unitOf),
    ...imports.flatMap((edge) => [unitOf(edge.from), unitOf(edge.to)]),
  ]);
  for (const unit of [...units].sort()) {
    if (layering.ranks[unit] !== undefined) continue;
    problems.push(
      `unplaced: ${unit} is in no layer: place it in the ranks table of tests/layering_test.ts ` +
        `(and in ARCHITECTURE.md) below every unit that imports it and above every unit it imports`,
    );
  }

  const layered: FileImport[] = [];
  for (const edge of imports) {
    const from = unitOf(edge.from);
    const to = unitOf(edge.to);
    if (from === to) continue;
    if (program.has(to) && !program.has(from)) {
      if (_isHandOff(edge, layering)) continue;
      const only = edge.from === layering.handOff.from && edge.to === layering.handOff.to
        ? ` (${layering.handOff.from} may reach ${layering.handOff.to} only by import())`
        : "";
      problems.push(`program: ${_where(edge)}: nothing outside the program imports it${only}`);
    }
    layered.push(edge);
    const allowed = layering.importsOnly[from];
    if (allowed !== undefined && !allowed.includes(to)) {
      const list = allowed.length === 0 ? "nothing of the package" : allowed.join(", ");
      problems.push(`imports-only: ${_where(edge)}: ${from} may import only ${list}`);
    }
    if (layering.neverImports[from]?.includes(to)) {
      problems.push(`never-imports: ${_where(edge)}: ${from} must not import ${to}`);
    }
    if (layering.importedByNone.includes(to)) {
      problems.push(`imported-by-none: ${_where(edge)}: nothing in the package imports ${to}`);
    }
    const fromRank = layering.ranks[from];
    const toRank = layering.ranks[to];
    if (fromRank !== undefined && toRank !== undefined && toRank >= fromRank) {
      problems.push(
        `rank: ${_where(edge)}: ${rankOf(from)} may import only lower ranks, not ${rankOf(to)}`,
      );
    }
  }

  const graph = unitGraph(layered);
  for (const cycle of _cycles(graph)) {
    const hops = cycle.slice(1).map((to, i) => _where(graph.get(cycle[i])!.get(to)!));
    problems.push(`cycle: ${cycle.join(" → ")}: ${hops.join("; ")}`);
  }
  return problems;
}

/** Prints the folder-level graph, one line per unit: `lib/loop → lib, lib/compaction`. */
export function describeGraph(imports: readonly FileImport[]): string {
  const graph = unitGraph(imports);
  return [...graph.keys()].sort().map((unit) =>
    `${unit} → ${[...graph.get(unit)!.keys()].sort().join(", ")}`
  ).join("\n");
}
