import "./isolated_env.ts";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import {
  AgentBuilder,
  type Checkpoint,
  fileCheckpoints,
  GraphError,
  type GraphEvent,
  type GraphState,
  memoryCheckpoints,
} from "../lib/graph/mod.ts";
import { defineTool } from "../mod.ts";
import { scriptedModel } from "../lib/testing/mod.ts";

const noop = () => {};
const events = async (iterable: AsyncIterable<GraphEvent>) => {
  const seen: GraphEvent[] = [];
  for await (const event of iterable) seen.push(event);
  return seen;
};

Deno.test("AgentBuilder.build() refuses unknown nodes, unreachable nodes, and nodes with no way to an end", () => {
  const base = () =>
    new AgentBuilder("g").addNode("a", noop).addNode("b", noop).setEntryPoint("a").setEndPoints(
      "b",
    );
  assert.throws(
    () => base().addEdge("a", "c").build(),
    GraphError,
    'The edge a → c names an unknown node "c"',
  );
  assert.throws(
    () => base().addEdge("a", "b").setEntryPoint("z").build(),
    /The entry point names an unknown node "z"/,
  );
  assert.throws(
    () => base().addEdge("a", "b").setEndPoints("y").build(),
    /An end point names an unknown node "y"/,
  );
  assert.throws(
    () => base().addNode("c", noop).addEdge("a", "b").build(),
    /Unreachable from the entry point "a": c/,
  );
  assert.throws(
    () =>
      base().addNode("c", noop).addEdge("a", "c").addEdge("c", "c").addConditionalEdge(
        "a",
        "b",
        () => false,
      ).build(),
    /No path to an end point \(b\) from: c/,
  );
  assert.throws(
    () => new AgentBuilder("g").addNode("a", noop).setEndPoints("a").build(),
    /has no entry point/,
  );
  assert.throws(
    () => new AgentBuilder("g").addNode("a", noop).setEntryPoint("a").build(),
    /has no end point/,
  );
  assert.throws(() => base().addNode("a", noop), /Two nodes are named "a"/);
  assert.throws(
    () => base().addConditionalEdge("a", "b", "the work is done").build(),
    /condition in words after a code node: set a model to judge it with judge\(\)/,
  );
});

Deno.test("AgentGraph: conditions are tried in order, an edge without one is the default", async () => {
  const graph = new AgentBuilder("route")
    .addNode("start", (state) => ({ data: { size: state.data.size } }))
    .addNode("small", () => ({ output: "small" }))
    .addNode("large", () => ({ output: "large" }))
    .addNode("other", () => ({ output: "other" }))
    .addConditionalEdge("start", "small", (state) => Number(state.data.size) < 10)
    .addConditionalEdge("start", "large", (state) => Number(state.data.size) >= 100)
    .addEdge("start", "other")
    .setEntryPoint("start")
    .setEndPoints("small", "large", "other")
    .build();
  for (
    const [size, expected, kind] of [[3, "small", "code"], [500, "large", "code"], [
      50,
      "other",
      "default",
    ]] as const
  ) {
    const outcome = await graph.execute("start", { data: { size } }).result;
    assert.equal(outcome.finalMessage, expected);
    assert.deepEqual(outcome.path.map((step) => step.node), ["start", expected]);
    assert.equal(outcome.path[0].edge?.kind, kind);
  }
});

Deno.test("AgentGraph: LLM nodes run the agent loop with their own tools and prompts", async () => {
  const search = defineTool({
    name: "search",
    description: "Searches notes",
    parameters: z.object({ q: z.string() }),
    execute: ({ q }) => `notes about ${q}: the launch is on 12 May`,
  });
  const researcherModel = scriptedModel([
    { toolCalls: [{ name: "search", input: { q: "launch" } }] },
    { text: "Found: launch on 12 May." },
  ]);
  const writerModel = scriptedModel([{ text: "Announcement: we launch on 12 May!" }]);
  const graph = new AgentBuilder("newsroom")
    .addLLMNode("research", "Find the facts", researcherModel, [search], "You research.")
    .addLLMNode("write", "Write the announcement", writerModel, [], "You write announcements.")
    .addEdge("research", "write")
    .setEntryPoint("research")
    .setEndPoints("write")
    .build();
  const execution = graph.execute("research", "Announce the launch");
  const [outcome, seen] = await Promise.all([execution.result, events(execution.events)]);
  assert.equal(outcome.status, "completed");
  assert.equal(outcome.success, true);
  assert.equal(outcome.finalMessage, "Announcement: we launch on 12 May!");
  assert.equal(writerModel.requests[0].system, "You write announcements.");
  assert.equal(researcherModel.requests[0].tools[0].name, "search");
  assert.equal(writerModel.requests[0].tools.length, 0);
  // The writer works from the research, with its task stated.
  const writerSaw = writerModel.requests[0].messages;
  assert.deepEqual(writerSaw.map((m) => m.role), [
    "user",
    "assistant",
    "tool",
    "assistant",
    "user",
  ]);
  assert.equal(
    writerSaw.at(-1)?.role === "user" && writerSaw.at(-1)?.content,
    "[write] Write the announcement",
  );
  assert.equal(outcome.finalState.history.length, 6);
  assert.deepEqual(execution.context.getToolCalls().map((call) => [call.node, call.name]), [[
    "research",
    "search",
  ]]);
  // Events per node: the agent's events inside.
  const kinds = seen.map((e) => e.type === "node_event" ? `${e.node}:${e.event.type}` : e.type);
  assert.equal(kinds[0], "node_start");
  assert.ok(kinds.includes("research:tool_call"));
  assert.ok(kinds.indexOf("node_end") < kinds.lastIndexOf("node_start"));
  assert.equal(seen.filter((e) => e.type === "checkpoint").length, 2);
});

Deno.test("AgentGraph: a condition in words is judged by a model, and the verdicts are recorded", async () => {
  let drafts = 0;
  const writer = scriptedModel(() => ({ text: `Draft ${++drafts}` }));
  const judge = scriptedModel([
    { text: '{"answer": "no", "reason": "draft 1 lacks a date"}' },
    { text: '{"answer": "yes", "reason": "draft 2 is complete"}' },
  ]);
  const graph = new AgentBuilder("review")
    .judge(judge)
    .addLLMNode("write", "Write a draft", writer)
    .addNode("publish", (state) => ({ output: `Published: ${state.output}` }))
    .addConditionalEdge("write", "publish", "the draft is complete")
    .addEdge("write", "write")
    .setEntryPoint("write")
    .setEndPoints("publish")
    .build();
  const outcome = await graph.execute("write", "Write the note").result;
  assert.equal(outcome.finalMessage, "Published: Draft 2");
  const [first, second] = outcome.path;
  assert.deepEqual(first.rejected, [{
    to: "publish",
    condition: "the draft is complete",
    reason: "draft 1 lacks a date",
  }]);
  assert.deepEqual(first.edge, { to: "write", kind: "default", reason: "the default edge" });
  assert.deepEqual(second.edge, {
    to: "publish",
    kind: "model",
    condition: "the draft is complete",
    reason: "draft 2 is complete",
  });
  assert.equal(judge.requests[0].tools.length, 0);
  assert.match(
    judge.requests[0].messages[0].role === "user" ? judge.requests[0].messages[0].content : "",
    /Statement: the draft is complete/,
  );
});

Deno.test("AgentGraph: maxIterations and the timeout end an execution with a clear outcome", async () => {
  const looping = new AgentBuilder("loop")
    .maxIterations(5)
    .addNode("spin", noop)
    .addNode("end", noop)
    .addConditionalEdge("spin", "end", () => false)
    .addEdge("spin", "spin")
    .setEntryPoint("spin")
    .setEndPoints("end")
    .build();
  const capped = await looping.execute().result;
  assert.equal(capped.status, "error");
  assert.equal(capped.iterations, 5);
  assert.match(capped.error ?? "", /may run 5 at most \(maxIterations\); it stopped before "spin"/);

  const slow = new AgentBuilder("slow")
    .timeout(50)
    .addNode(
      "wait",
      (_state, ctx) =>
        new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve())),
    )
    .setEntryPoint("wait")
    .setEndPoints("wait")
    .build();
  const started = performance.now();
  const timedOut = await slow.execute().result;
  assert.equal(timedOut.status, "error");
  assert.equal(timedOut.error, "The execution timed out after 50 ms.");
  assert.ok(performance.now() - started < 2_000);
});

Deno.test("AgentGraph: pause, resume and abort; status goes pending → running → completed", async () => {
  const gate = Promise.withResolvers<void>();
  const ran: string[] = [];
  const graph = new AgentBuilder("steps")
    .addNode("one", async () => {
      ran.push("one");
      await gate.promise;
    })
    .addNode("two", () => void ran.push("two"))
    .addEdge("one", "two")
    .setEntryPoint("one")
    .setEndPoints("two")
    .build();
  const execution = graph.execute();
  assert.equal(execution.context.status(), "pending");
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(execution.context.status(), "running");
  execution.context.pause();
  gate.resolve();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(execution.context.status(), "paused");
  assert.deepEqual(ran, ["one"]);
  assert.equal(execution.context.iterationCount(), 1);
  execution.context.resume();
  const outcome = await execution.result;
  assert.equal(outcome.status, "completed");
  assert.equal(execution.context.status(), "completed");
  assert.deepEqual(ran, ["one", "two"]);

  const forever = new AgentBuilder("forever")
    .addNode(
      "hang",
      (_s, ctx) =>
        new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => reject(new Error("stopped")))
        ),
    )
    .setEntryPoint("hang")
    .setEndPoints("hang")
    .build();
  const running = forever.execute();
  setTimeout(() => running.context.abort(), 10);
  const aborted = await running.result;
  assert.equal(aborted.status, "cancelled");
  assert.equal(running.context.status(), "cancelled");
});

Deno.test("AgentGraph: a fan-out runs branches in parallel and the join gets their states", async () => {
  const windows: Array<[string, number, number]> = [];
  const branch = (name: string) => async (): Promise<Partial<GraphState>> => {
    const start = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 40));
    windows.push([name, start, performance.now()]);
    return { output: `${name} done`, data: { [name]: true } };
  };
  const graph = new AgentBuilder("fan")
    .addNode("plan", () => ({ output: "planned" }))
    .addNode("frontend", branch("frontend"))
    .addNode("backend", branch("backend"))
    .addNode("merge", (state) => ({ output: Object.keys(state.branches ?? {}).sort().join("+") }))
    .addFanOut("plan", ["frontend", "backend"], "merge")
    .setEntryPoint("plan")
    .setEndPoints("merge")
    .build();
  const outcome = await graph.execute().result;
  assert.equal(outcome.finalMessage, "backend+frontend");
  assert.deepEqual(outcome.finalState.data, { frontend: true, backend: true });
  const [a, b] = windows;
  assert.ok(a[1] < b[2] && b[1] < a[2], "the branches overlapped in time");
  assert.deepEqual(outcome.path.map((step) => step.node), [
    "plan",
    "[frontend | backend]",
    "merge",
  ]);
  assert.equal(outcome.iterations, 4);
});

Deno.test("AgentGraph: a node's retry policy tries it again; past it, the execution fails clearly", async () => {
  let calls = 0;
  const graph = (attempts: number) =>
    new AgentBuilder("retry")
      .addNode("flaky", () => {
        if (++calls % 3 !== 0) throw new Error(`attempt ${calls} failed`);
        return { output: "finally" };
      }, { retry: { maxAttempts: attempts, backoffMs: 1 } })
      .setEntryPoint("flaky")
      .setEndPoints("flaky")
      .build();
  const ok = await graph(3).execute().result;
  assert.equal(ok.finalMessage, "finally");
  assert.equal(ok.path[0].attempts, 3);
  calls = 0;
  const failed = await graph(2).execute().result;
  assert.equal(failed.status, "error");
  assert.equal(failed.error, "attempt 2 failed");
});

Deno.test("AgentGraph: a checkpoint after every node; an execution goes on from one", async () => {
  const memory = memoryCheckpoints();
  const saved: Checkpoint[] = [];
  const store = {
    save: (
      checkpoint: Checkpoint,
    ) => (saved.push(structuredClone(checkpoint)), memory.save(checkpoint)),
    load: memory.load,
  };
  const graph = new AgentBuilder("steps")
    .addNode("a", () => ({ data: { a: 1 } }))
    .addNode("b", (state) => ({ data: { ...state.data, b: 2 } }))
    .addNode("c", (state) => ({ output: JSON.stringify(state.data) }))
    .addEdge("a", "b")
    .addEdge("b", "c")
    .setEntryPoint("a")
    .setEndPoints("c")
    .build();
  const first = graph.execute("a", {}, { checkpoints: store });
  await first.result;
  assert.deepEqual(saved.map((checkpoint) => checkpoint.next), [["b"], ["c"], []]);
  assert.equal(saved[0].schemaVersion, 1);
  assert.deepEqual((await store.load(first.context.executionId))?.next, []);
  const resumed = await graph.resume(saved[0]).result;
  assert.equal(resumed.finalMessage, '{"a":1,"b":2}');
  assert.deepEqual(resumed.path.map((step) => step.node), ["a", "b", "c"]);
  assert.equal(resumed.iterations, 3);
  assert.throws(() => graph.resume({ ...saved[0], graph: "other" }), /of graph "other"/);
});

Deno.test("AgentGraph: an execution killed mid-way goes on from its checkpoint in a new process", async () => {
  const dir = await Deno.makeTempDir();
  const script = fileURLToPath(new URL("./graph_crash_child.ts", import.meta.url));
  const crash = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script, dir, "crash"],
  }).output();
  assert.equal(crash.code, 42, new TextDecoder().decode(crash.stderr));
  const [file] = [...Deno.readDirSync(dir)].map((entry) => entry.name);
  const checkpoint = await fileCheckpoints(dir).load(file.replace(/\.json$/, ""));
  assert.deepEqual(checkpoint?.next, ["second"]);
  const resumed = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script, dir, "resume"],
    stdout: "piped",
  }).output();
  const outcome = JSON.parse(new TextDecoder().decode(resumed.stdout));
  assert.equal(outcome.status, "completed");
  assert.deepEqual(outcome.path, ["first", "second", "third"]);
  assert.deepEqual(outcome.data, { first: "done", second: "done", third: "done" });
});

Deno.test("AgentGraph is immutable once built", () => {
  const builder = new AgentBuilder("frozen").addNode("a", noop).setEntryPoint("a").setEndPoints(
    "a",
  );
  const graph = builder.build();
  builder.addNode("b", noop);
  assert.equal(graph.definition.nodes.size, 1);
  assert.throws(() => {
    (graph.definition as { maxIterations: number }).maxIterations = 1;
  }, TypeError);
});
