/**
 * Text from the model reaches a terminal without the control characters the terminal would act
 * on (a title set, the screen cleared); an answer printed for a program stays as written.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import type { AgentEvent } from "../mod.ts";
import { textRenderer } from "../lib/cli/render.ts";
import { childEnv, MOD, tempDir, Terminal } from "./terminal_support.ts";

/** What a hostile reply could carry: set the terminal's title, clear the screen, go home. */
const HOSTILE = "\x1b]0;PWNED\x07\x1b[2J\x1b[H";
/** The same, as the terminal shows it once its control characters are gone. */
const DEFUSED = "]0;PWNED[2J[H";

/** Renders `events` as the headless CLI does, and gives what went to stdout and stderr. */
function render(events: AgentEvent[], stream: boolean): { out: string; err: string } {
  let out = "";
  let err = "";
  const draw = textRenderer({ out: (t) => out += t, err: (t) => err += t }, {
    color: false,
    stream,
  });
  for (const event of events) draw(event);
  return { out, err };
}

const RUN: AgentEvent[] = [
  { type: "turn_start", turn: 1 },
  { type: "text_delta", text: `a\r${HOSTILE}b\x9b2J\x7f\tc\n` },
  { type: "tool_call", id: "1", name: `ls${HOSTILE}`, input: { path: `\x9b2J${HOSTILE}` } },
  {
    type: "tool_result",
    id: "1",
    name: `ls${HOSTILE}`,
    output: `x${HOSTILE}`,
    display: `shown${HOSTILE}`,
    isError: false,
    durationMs: 1,
  },
  { type: "retry", attempt: 1, delayMs: 500, error: `reset${HOSTILE}` },
  { type: "notice", kind: "doom_loop", message: `careful${HOSTILE}` },
  {
    type: "result",
    status: "error",
    text: `a\r${HOSTILE}b\x9b2J\x7f\tc\n`,
    error: { name: "Error", message: `failed${HOSTILE}` },
    turns: 1,
    toolCalls: 1,
    usage: { inputTokens: 1, outputTokens: 1 },
    durationMs: 5,
  } as AgentEvent,
];

Deno.test("textRenderer() streams the answer to a terminal without control characters, and says the rest on stderr without them", () => {
  const { out, err } = render(RUN, true);
  assert.equal(out, `a${DEFUSED}b2J\tc\n`);
  // deno-lint-ignore no-control-regex -- control characters are what is looked for
  assert.doesNotMatch(err, /[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  for (const said of ["ls", "shown", "reset", "careful", "failed"]) {
    assert.ok(err.includes(`${said}${DEFUSED}`), `${said}: ${JSON.stringify(err)}`);
  }
});

Deno.test("textRenderer() prints the final answer for a program exactly as the model wrote it", () => {
  const { out } = render(RUN, false);
  assert.equal(out, `a\r${HOSTILE}b\x9b2J\x7f\tc\n`);
});

Deno.test("agent -p on a terminal: escape sequences in the answer and the tool calls are shown as text", async () => {
  const cwd = await tempDir();
  await using server = startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      if (messages.at(-1)!.role === "tool") return { text: `done ${HOSTILE}after the tool` };
      return {
        text: [`before ${HOSTILE}`, "after"],
        toolCalls: [{ name: "bash", arguments: { command: `echo '${HOSTILE}'` } }],
      };
    },
  });
  await using terminal = await Terminal.start(
    [Deno.execPath(), "run", "-A", MOD, "-m", "openai/test", "--sandbox", "off", "-p", "go"],
    await childEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }),
    cwd,
  );
  const title = await terminal.title();
  const screen = await terminal.waitFor(/\[exit \d+\]/, 60_000);
  assert.equal(await terminal.title(), title, "the title was left alone");
  const lines = screen.split("\n");
  // Nothing was cleared: the answer, the tool's lines and the rest of the answer, in order.
  const first = lines.indexOf(`before ${DEFUSED}after`);
  assert.ok(first >= 0, screen);
  // The input is shown as JSON, its control characters escaped.
  assert.equal(
    lines[first + 1],
    String.raw`→ bash {"command":"echo '\u001b]0;PWNED\u0007\u001b[2J\u001b[H'"}`,
  );
  assert.match(
    lines[first + 2],
    new RegExp(String.raw`^  ✓ bash \d+ ms \$ echo '\]0;PWNED\[2J\[H'`),
  );
  assert.ok(lines.includes(`done ${DEFUSED}after the tool`), screen);
  assert.match(screen, /\[exit 0\]/);
});
