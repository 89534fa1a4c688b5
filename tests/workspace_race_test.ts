/**
 * The file tools against a workspace that changes under them: through the real CLI with
 * `--sandbox required` (real bubblewrap), a scripted model runs, in one turn, a sandboxed command
 * that swaps a workspace directory with a symlink to `$HOME` (renameat2 RENAME_EXCHANGE, in a
 * loop) while over a thousand `write`, `edit` and `read` calls go into that directory. Nothing may
 * land outside the workspace, every write reported as done must be found inside, and no read may
 * show what lies outside. Run with every permission, and with Deno's grants narrowed to the
 * workspace.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { type MockReply, type MockToolCall, startMockOpenAIServer } from "../lib/testing/mod.ts";
import { detectSandbox } from "../lib/sandbox/detect.ts";
import { runCli, tempDir } from "./terminal_support.ts";

// deno-lint-ignore no-explicit-any
type Event = { type: string } & Record<string, any>;

const sandbox = await detectSandbox();
const python = ["/usr/bin/python3", "/usr/local/bin/python3"].find((path) => _isFile(path));
const ignore = !sandbox.available || !python;
if (!sandbox.available) console.warn(`workspace race tests skipped: ${sandbox.reason}`);
else if (!python) console.warn("workspace race tests skipped: no python3 to swap directories with");

/** How many rounds of calls: each writes a new file, replaces one, edits it and reads one. */
const ROUNDS = 550;
const SECRET = "THE-USER-SECRET-4f1c";
const USERS = "export A=1\n# the user's own\n";

/**
 * Swaps `d` (a directory) and `l` (a symlink to $HOME) until `stop` appears or the seconds given
 * have passed, then leaves `d` the directory again. It says when it starts (the file `flipping`),
 * and how many swaps it made.
 */
const FLIPPER = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
def swap():
    if libc.renameat2(AT_FDCWD, b"d", AT_FDCWD, b"l", RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
open("flipping", "w").close()
swaps, deadline = 0, time.time() + float(sys.argv[1])
while time.time() < deadline:
    for _ in range(64):
        swap()
    swaps += 64
    if os.path.exists("stop"):
        break
if os.path.islink("d"):
    swap()
    swaps += 1
print("swaps", swaps)
`;

/** The one turn: the swapping command, waiters until it runs, then the file calls. */
function attack(seconds: number): MockToolCall[] {
  const calls: MockToolCall[] = [
    { name: "bash", arguments: { command: `${python} flip.py ${seconds}`, timeout: 300_000 } },
  ];
  // The other slots of the turn wait until the swapping has begun, so no file call runs before.
  for (let i = 0; i < 7; i++) {
    const command = `while [ ! -e flipping ]; do sleep 0.01; done # waiter ${i}`;
    calls.push({ name: "bash", arguments: { command } });
  }
  for (let i = 0; i < ROUNDS; i++) {
    calls.push(
      { name: "write", arguments: { path: `d/f${i}.txt`, content: `file ${i}\n` } },
      { name: "write", arguments: { path: "d/notes.txt", content: `export A=1 # write ${i}\n` } },
      {
        name: "edit",
        arguments: { path: `d/e${i}.md`, old_string: "export A=1", new_string: `export A=1 #${i}` },
      },
      { name: "read", arguments: { path: "d/private/secret.txt", limit: i + 1 } },
    );
  }
  calls.push({ name: "write", arguments: { path: "stop", content: "" } });
  return calls;
}

/** Every file below `dir`, by path relative to it, with its content. */
function _files(dir: string, prefix = ""): Map<string, string> {
  const found = new Map<string, string>();
  for (const entry of Deno.readDirSync(join(dir, prefix))) {
    const path = join(prefix, entry.name);
    if (entry.isDirectory) { for (const [key, text] of _files(dir, path)) found.set(key, text); }
    else if (entry.isFile) found.set(path, Deno.readTextFileSync(join(dir, path)));
  }
  return found;
}

function _isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** What came of an attack. */
interface Outcome {
  /** How many times the directory was swapped. */
  swaps: number;
  /** The file calls reported as done (each checked to be inside). */
  done: number;
  /** The file calls refused. */
  refused: number;
}

/**
 * Runs the attack with these Deno permissions (`[]`: every permission), the swapping going on for
 * `seconds` at most, and checks that nothing went outside; says how the calls fared.
 */
async function raceUnder(
  permissions: (dirs: Record<string, string>) => string[],
  seconds: number,
): Promise<Outcome> {
  const cwd = await tempDir("agent_race_ws_");
  const home = await tempDir("agent_race_home_");
  const data = await tempDir("agent_race_data_");
  try {
    Deno.mkdirSync(join(cwd, "d"));
    Deno.mkdirSync(join(cwd, "d/private"));
    Deno.writeTextFileSync(join(cwd, "d/notes.txt"), "export A=1\n");
    for (let i = 0; i < ROUNDS; i++) {
      Deno.writeTextFileSync(join(cwd, `d/e${i}.md`), "export A=1\n");
      Deno.writeTextFileSync(join(home, `e${i}.md`), USERS);
    }
    Deno.writeTextFileSync(join(cwd, "d/private/secret.txt"), "nothing to see inside\n");
    Deno.symlinkSync(home, join(cwd, "l"));
    Deno.writeTextFileSync(join(cwd, "flip.py"), FLIPPER);
    Deno.mkdirSync(join(home, "private"));
    Deno.writeTextFileSync(join(home, "notes.txt"), USERS);
    Deno.writeTextFileSync(join(home, "private/secret.txt"), `${SECRET}\n`);
    const before = _files(home);

    const calls = attack(seconds);
    // The attack, then "done" to whatever else is asked (a summary, the next turn).
    const replies = (_body: unknown, index: number): MockReply =>
      index === 0 ? { toolCalls: calls } : { text: "done" };
    await using server = startMockOpenAIServer({ replies });
    const granted = permissions({ cwd, home, data });
    const narrow = granted.length > 0;
    const run = await runCli(
      ["-m", "openai/test", "--output", "stream-json", "--sandbox", "required", "--no-session"]
        .concat(["race"]),
      {
        cwd,
        env: {
          HOME: home,
          AGENT_DATA_DIR: data,
          OPENAI_API_KEY: "sk-race-test",
          OPENAI_BASE_URL: server.url,
        },
        permissions: granted.length ? granted : ["-A"],
      },
    );
    assert.equal(run.code, 0, `${run.stderr}\n${run.stdout.slice(-3000)}`);
    const events: Event[] = run.stdout.trim().split("\n").map((line) => JSON.parse(line));
    const results = new Map(
      events.filter((e) => e.type === "tool_result").map((e) => [e.id as string, e]),
    );
    const resultOf = (index: number) => results.get(`call_${index + 1}`)!;
    assert.equal(results.size, calls.length, "every call was answered");

    // The attack ran the whole time: the directory was swapped thousands of times.
    const swaps = Number(/swaps (\d+)/.exec(resultOf(0).output)?.[1] ?? 0);
    assert.ok(
      swaps > 10_000,
      `the directory was swapped only ${swaps} times: ${resultOf(0).output}`,
    );

    // Each call reported as done did its work inside; each refusal says why.
    assert.ok(!Deno.lstatSync(join(cwd, "d")).isSymlink, "d is the directory again");
    let done = 0;
    let refused = 0;
    const notInside: string[] = [];
    const leaked: string[] = [];
    calls.forEach((call, index) => {
      const result = resultOf(index);
      const input = call.arguments as Record<string, string>;
      if (call.name === "bash") return;
      if (result.isError) {
        refused++;
        assert.match(
          result.output,
          /outside the workspace|kept changing|does not exist|runtime refused/,
          `${call.name} ${input.path}: ${result.output}`,
        );
        return;
      }
      done++;
      const inside = (path: string) => {
        try {
          return Deno.readTextFileSync(join(cwd, path));
        } catch {
          return undefined;
        }
      };
      if (call.name === "write" && input.path.startsWith("d/f")) {
        if (inside(input.path) !== input.content) notInside.push(input.path);
      }
      if (call.name === "edit" && inside(input.path) !== `${input.new_string}\n`) {
        notInside.push(input.path);
      }
      // With every permission, reading $HOME is no escape; where Deno denies it, it is.
      if (call.name === "read" && narrow && result.output.includes(SECRET)) {
        leaked.push(`call_${index + 1}`);
      }
    });
    // Nothing outside the workspace was written, created or changed, nor read where denied.
    const after = _files(home);
    const changed = [...new Set([...before.keys(), ...after.keys()])]
      .filter((path) => before.get(path) !== after.get(path));
    assert.deepEqual(
      { changedOutside: changed.length, reportedDoneButNotInside: notInside, leaked },
      { changedOutside: 0, reportedDoneButNotInside: [], leaked: [] },
      `changed outside: ${changed.slice(0, 20).join(", ")}`,
    );

    const writes = calls.filter((call) => call.name === "write").length;
    assert.ok(writes >= 1_000, `${writes} writes`);
    console.log(`${swaps} swaps; ${done} file calls done inside, ${refused} refused`);
    return { swaps, done, refused };
  } finally {
    for (const dir of [cwd, home, data]) await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name: "a directory swapped with a symlink to $HOME during 1,100 writes: nothing lands outside",
  ignore,
  async fn() {
    // The file calls run while the directory is being swapped; those that went through are inside.
    const { done } = await raceUnder(() => [], 100);
    assert.ok(done > ROUNDS, `only ${done} calls went through`);
  },
});

Deno.test({
  name: "the same race with writes granted in the workspace only: nothing lands outside or is read",
  ignore,
  async fn() {
    const grants = ({ cwd, home, data }: Record<string, string>) => [
      "--allow-read",
      `--deny-read=${join(home, "private")}`,
      `--allow-write=${cwd},${data}`,
      "--allow-run=bwrap,bash",
      "--allow-net=127.0.0.1",
      "--allow-env",
    ];
    // The file calls wait for the swapping command to end, then all go through.
    const { refused } = await raceUnder(grants, 5);
    assert.equal(refused, 0);
  },
});
