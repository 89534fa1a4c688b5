/**
 * The interactive session under partial Deno grants, in a real terminal: Deno asks once for
 * what a tool needs, and the session says which flag the sandbox misses.
 */

import assert from "node:assert/strict";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { detectSandbox } from "../lib/sandbox/detect.ts";
import { childEnv, MOD, tempDir, Terminal } from "./terminal_support.ts";
import { EVERYTHING_RUN } from "./mcp_support.ts";

Deno.test("interactive: a command under a run prompt asks Deno once, and its output arrives", async () => {
  const cwd = await tempDir();
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      const last = messages.at(-1)!;
      if (last.role === "tool") return { text: `the command said: ${last.content}` };
      if (last.content === "run it") {
        return {
          toolCalls: [{ name: "bash", arguments: { command: "echo from-bash-$((6 * 7))" } }],
        };
      }
      return { text: "{}" };
    },
  });
  // Running programs is not granted: Deno asks at the command's first use.
  await using terminal = await Terminal.start(
    [
      Deno.execPath(),
      "run",
      "--allow-read",
      `--allow-write=${cwd}`,
      "--allow-net",
      "--allow-env",
      MOD,
      "-m",
      "openai/test",
    ],
    await childEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }),
    cwd,
  );
  const banner = await terminal.waitFor(/agent · openai\/test/);
  if ((await detectSandbox()).available) {
    // bubblewrap is there: what keeps it out is Deno's grant, and the notice says which.
    assert.match(banner, /commands run without a sandbox: .*add --allow-run=bwrap/);
  }

  await terminal.type("run it");
  await terminal.keys("Enter");
  await terminal.waitFor(/\? .*bash.*Allow\? \[y\]es \/ \[n\]o \/ \[a\]lways/);
  await terminal.type("y");
  await terminal.keys("Enter");
  await terminal.waitFor(/Deno requests run access to "bash"/);
  // Deno clears what was typed before its question was shown; answer as a person would.
  await new Promise((resolve) => setTimeout(resolve, 300));
  await terminal.type("y");
  await terminal.keys("Enter");

  const screen = await terminal.waitFor(/the command said: from-bash-42/);
  // Deno's answered question leaves one line; a second question would still be on the screen.
  const granted = screen.match(/Granted run access/g) ?? [];
  assert.equal(granted.length, 1, `Deno asked more than once:\n${screen}`);
  assert.doesNotMatch(screen, /Deno requests|Deno\.kill/);
  await terminal.keys("C-c");
  await terminal.waitFor(/\[exit 0\]/);
});

Deno.test("an MCP stdio server under partial run grants is closed without a Deno prompt", async () => {
  const cwd = await tempDir();
  // A program that starts the MCP reference server and closes it, as a session's end does.
  const script = `${cwd}/close_mcp.ts`;
  await Deno.writeTextFile(
    script,
    `import { connectMcpServers } from ${
      JSON.stringify(new URL("../lib/mcp/mod.ts", import.meta.url).href)
    };
const mcp = await connectMcpServers({ mcpServers: { everything: {
  command: Deno.execPath(), args: ${JSON.stringify([...EVERYTHING_RUN, "stdio"])} } } });
console.log("tools:", mcp.tools.length > 0);
await mcp.close();
console.log("closed");
`,
  );
  // Deno may run deno and nothing else: Deno.kill, which needs all of run, would ask.
  await using terminal = await Terminal.start(
    [
      Deno.execPath(),
      "run",
      "--allow-read",
      "--allow-env",
      "--allow-net",
      "--allow-sys",
      `--allow-run=${Deno.execPath()}`,
      "--config",
      new URL("../deno.json", import.meta.url).pathname,
      script,
    ],
    await childEnv(),
    cwd,
  );
  const screen = await terminal.waitFor(/closed\n|Deno requests|\[exit/, 60_000);
  assert.match(screen, /tools: true\nclosed\n/);
  assert.doesNotMatch(screen, /Deno requests|Deno\.kill/);
});

Deno.test("interactive: a file write Deno will ask about is asked about once, by Deno", async () => {
  const cwd = await tempDir();
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      if (messages.at(-1)!.role === "tool") return { text: "written" };
      return {
        toolCalls: [{ name: "write", arguments: { path: "note.txt", content: "hello\n" } }],
      };
    },
  });
  // Writing is not granted: Deno asks at the write.
  await using terminal = await Terminal.start(
    [
      Deno.execPath(),
      "run",
      "--allow-read",
      "--allow-net",
      "--allow-env",
      "--allow-run",
      MOD,
      "-m",
      "openai/test",
    ],
    await childEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }),
    cwd,
  );
  await terminal.waitFor(/agent · openai\/test/);
  await terminal.type("write the note");
  await terminal.keys("Enter");
  const asked = await terminal.waitFor(/Deno requests write access to .*note\.txt/);
  assert.doesNotMatch(
    asked,
    /Allow\? \[y\]es \/ \[n\]o \/ \[a\]lways/,
    "the session did not ask too",
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  await terminal.type("y");
  await terminal.keys("Enter");
  await terminal.waitFor(/written[\s\S]*out tokens/);
  assert.equal(await Deno.readTextFile(`${cwd}/note.txt`), "hello\n");
  await terminal.keys("C-c");
});
