/**
 * The file tools per call on the real file system: `write` replacing a file, `write` creating
 * one in a new directory, `edit` of a small file, and `read` of a small file. Each opens its file
 * once and checks what it opened; how it names the opened file depends on Deno's grants (the
 * kernel's `/proc/self/fd` link under `--allow-all`, the working directory otherwise), so run it
 * both ways:
 *
 * ```sh
 * deno bench --allow-all bench/file_tools.ts
 * deno bench --allow-read --allow-write bench/file_tools.ts
 * ```
 */

import { createEditTool, createReadTool, createWriteTool } from "../tools/mod.ts";

const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "agent_bench_files_" }));
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
const ctx = { cwd: dir, toolCallId: "1", signal: new AbortController().signal };
const write = createWriteTool({ roots: [dir] });
const edit = createEditTool({ roots: [dir] });
const read = createReadTool();

const text = "export const answer = 42;\n".repeat(80); // 2 KB, a small source file
Deno.mkdirSync(`${dir}/src`);
Deno.writeTextFileSync(`${dir}/src/replace.ts`, text);
Deno.writeTextFileSync(`${dir}/src/edit.ts`, text.replace("answer = 42", "value = 0"));
Deno.writeTextFileSync(`${dir}/src/read.ts`, text);
Deno.mkdirSync(`${dir}/made`);

let n = 0;
Deno.bench("write: replace a 2 KB file", { group: "files", baseline: true }, async () => {
  await write.execute({ path: "src/replace.ts", content: text }, ctx);
});

Deno.bench("write: create a file", { group: "files" }, async () => {
  n++;
  await write.execute({ path: `made/${n}.ts`, content: text }, ctx);
});

Deno.bench("write: create a file in a new directory", { group: "files" }, async () => {
  n++;
  await write.execute({ path: `new/${n}/file.ts`, content: text }, ctx);
});

let flip = 0;
Deno.bench("edit: replace one line of a 2 KB file", { group: "files" }, async () => {
  const [from, to] = flip++ % 2 ? ["value = 1", "value = 0"] : ["value = 0", "value = 1"];
  await edit.execute({ path: "src/edit.ts", old_string: from, new_string: to }, ctx);
});

Deno.bench("read: a 2 KB file", { group: "files" }, async () => {
  await read.execute({ path: "src/read.ts" }, ctx);
});
