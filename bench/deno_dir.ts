/**
 * What a run left in a `DENO_DIR`: the npm packages it downloaded (extracted), those of which it
 * fetched the metadata alone, and the apparent size of each and of the whole. For
 * `bench/size.ts`.
 *
 * @module
 */

import { join } from "node:path";

/** What a run left in its `DENO_DIR`. */
export interface Measure {
  /** `name@version` of each package downloaded (extracted). */
  packages: string[];
  /** Packages whose metadata alone was fetched (optional peers, say). */
  metadataOnly: string[];
  /** The apparent size of everything in `DENO_DIR`. */
  diskBytes: number;
  /** The apparent size of `DENO_DIR/npm`. */
  npmBytes: number;
  /** Each package's apparent size (its versions and its metadata), largest first. */
  largest: Array<{ name: string; label: string; bytes: number }>;
}

/**
 * The apparent size of a tree (symlinks not followed).
 *
 * @example
 * ```ts
 * import { apparentSize } from "./deno_dir.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/a`, "12345");
 * if (await apparentSize(dir) !== 5) throw new Error("unexpected");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function apparentSize(path: string): Promise<number> {
  const info = await Deno.lstat(path).catch(() => undefined);
  if (!info) return 0;
  if (!info.isDirectory) return info.size;
  let total = 0;
  for await (const entry of Deno.readDir(path)) total += await apparentSize(join(path, entry.name));
  return total;
}

/**
 * The packages and bytes a run left in `denoDir`.
 *
 * @example
 * ```ts
 * import { measureDenoDir } from "./deno_dir.ts";
 * const dir = await Deno.makeTempDir();
 * const zod = `${dir}/npm/registry.npmjs.org/zod`;
 * await Deno.mkdir(`${zod}/4.6.7`, { recursive: true });
 * await Deno.writeTextFile(`${zod}/registry.json`, "{}");
 * await Deno.mkdir(`${dir}/npm/registry.npmjs.org/@types/ws`, { recursive: true });
 * const measure = await measureDenoDir(dir);
 * if (measure.packages.join() !== "zod@4.6.7" || measure.metadataOnly.join() !== "@types/ws") {
 *   throw new Error("unexpected");
 * }
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function measureDenoDir(denoDir: string): Promise<Measure> {
  const packages: string[] = [];
  const metadataOnly: string[] = [];
  const largest: Array<{ name: string; label: string; bytes: number }> = [];
  const npm = join(denoDir, "npm");
  const registries = await Array.fromAsync(Deno.readDir(npm)).catch(() => []);
  for (const registry of registries) {
    const names: string[] = [];
    for await (const entry of Deno.readDir(join(npm, registry.name))) {
      if (!entry.isDirectory) continue;
      if (!entry.name.startsWith("@")) names.push(entry.name);
      else {
        for await (const inner of Deno.readDir(join(npm, registry.name, entry.name))) {
          if (inner.isDirectory) names.push(`${entry.name}/${inner.name}`);
        }
      }
    }
    for (const name of names) {
      const dir = join(npm, registry.name, name);
      const versions = (await Array.fromAsync(Deno.readDir(dir)))
        .filter((entry) => entry.isDirectory).map((entry) => entry.name);
      if (versions.length === 0) metadataOnly.push(name);
      for (const version of versions) packages.push(`${name}@${version}`);
      const label = versions.length ? `${name}@${versions.join(",")}` : `${name} (metadata)`;
      largest.push({ name, label, bytes: await apparentSize(dir) });
    }
  }
  largest.sort((a, b) => b.bytes - a.bytes);
  return {
    packages: packages.sort(),
    metadataOnly: metadataOnly.sort(),
    diskBytes: await apparentSize(denoDir),
    npmBytes: await apparentSize(npm),
    largest,
  };
}
