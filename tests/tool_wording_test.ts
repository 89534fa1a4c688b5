/**
 * What the tools say of what they did: counts agree with their nouns ("1 line", "2 lines").
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { createLsTool, createReadTool, createWriteTool } from "../tools/mod.ts";
import { createFetchTool } from "../tools/fetch.ts";
import { call, execute, tree } from "./tool_support.ts";

Deno.test("write says 1 line and 1 byte in the singular", async () => {
  const cwd = await tree({});
  const write = createWriteTool();
  const one = await execute(write, { path: "a.txt", content: "hello\n" }, cwd);
  assert.equal(one.display, "Created a.txt (1 line, 6 bytes)");
  const tiny = await execute(write, { path: "b.txt", content: "x" }, cwd);
  assert.equal(tiny.display, "Created b.txt (1 line, 1 byte)");
  const more = await execute(write, { path: "a.txt", content: "a\nb\n" }, cwd);
  assert.equal(more.display, "Replaced a.txt (2 lines, 4 bytes)");
});

Deno.test("read says how many lines it showed, singular for one", async () => {
  const cwd = await tree({ "one.txt": "only\n", "three.txt": "a\nb\nc\n" });
  const read = createReadTool();
  assert.equal((await execute(read, { path: "one.txt" }, cwd)).display, "one.txt (1 line)");
  assert.equal((await execute(read, { path: "three.txt" }, cwd)).display, "three.txt (3 lines)");
  assert.equal(
    (await execute(read, { path: "three.txt", offset: 3 }, cwd)).display,
    "three.txt (1 of 3 lines)",
  );
  const [past, isError] = await call(read, { path: "one.txt", offset: 5 }, cwd);
  assert.ok(isError);
  assert.match(past, /one\.txt has 1 line; offset 5 is past the end/);
});

Deno.test("ls says 1 more entry when one is left out", async () => {
  const cwd = await tree({ "a.txt": "", "b.txt": "" });
  const result = await execute(createLsTool({ limit: 1 }), {}, cwd);
  assert.match(result.output, /… 1 more entry \(2 in all\)/);
});

Deno.test("fetch says 1 byte for a body of one", async () => {
  const fetch = () =>
    Promise.resolve(new Response("x", { headers: { "content-type": "text/plain" } }));
  const tool = createFetchTool({ fetch });
  const checked = tool.parse!({ url: "https://example.com/one" });
  assert.ok(checked.success);
  const result = await execute(tool, checked.data, ".");
  assert.match(result.display ?? "", /, 1 byte$/);
});
