import "./isolated_env.ts";
import assert from "node:assert/strict";
import { z } from "zod";
import { type AgentEvent, defineTool } from "../mod.ts";
import type { RunLoopEvent } from "../lib/runloop/events.ts";
import { openMemory } from "../lib/memory/sqlite.ts";
import type { RunLoop } from "../lib/memory/types.ts";
import type { RetrieveOptions } from "../lib/memory/memory.ts";
import { runLoops } from "../lib/runloop/manager.ts";
import { fallbackRoute, routeMessage } from "../lib/runloop/router.ts";
import { memoryContext } from "../lib/runloop/recall.ts";
import { runInLoop, type RunInLoopOptions, type RunInLoopResult } from "../lib/runloop/run.ts";
import { createAgentService } from "../lib/service/service.ts";
import type { Model } from "../lib/model.ts";
import { type ScriptedModel, scriptedModel } from "../lib/testing/mod.ts";

async function collect(
  options: RunInLoopOptions,
): Promise<{ events: RunLoopEvent[]; result: RunInLoopResult }> {
  const events: RunLoopEvent[] = [];
  const run = runInLoop(options);
  let step = await run.next();
  while (!step.done) {
    events.push(step.value);
    step = await run.next();
  }
  return { events, result: step.value };
}

const loop = (id: string, goal: string, response = ""): RunLoop => ({
  id,
  goal,
  status: "active",
  createdAt: `2026-01-0${id.length}T00:00:00Z`,
  iterations: response
    ? [{
      index: 0,
      userMessage: goal,
      reasoning: [],
      toolCalls: [],
      toolResults: [],
      response,
      startedAt: "",
    }]
    : [],
});

Deno.test("router: with no active run loop, a message starts a new one without asking the model", async () => {
  const model = scriptedModel([]);
  const decision = await routeMessage("Refactor the parser", [], { model });
  assert.deepEqual(decision, { action: "new", reason: "no run loop is active" });
  assert.equal(model.calls, 0);
});

Deno.test("router: the model's structured answer decides when it is confident", async () => {
  const active = [loop("a", "Fix the login bug"), loop("bb", "Write the release notes")];
  const sure = scriptedModel([{
    text: '{"decision":"continue","runLoopId":"bb","confidence":0.92,"reason":"same notes"}',
    usage: { inputTokens: 120, outputTokens: 30 },
  }]);
  assert.deepEqual(await routeMessage("Mention the new flag too", active, { model: sure }), {
    action: "continue",
    runLoopId: "bb",
    confidence: 0.92,
    reason: "same notes",
    usage: { inputTokens: 120, outputTokens: 30 },
  });
  const request = sure.requests[0];
  assert.equal(request.tools.length, 0);
  assert.match(
    request.messages[0].role === "user" ? request.messages[0].content : "",
    /id: bb\n {2}goal: Write the release notes/,
  );

  const fresh = scriptedModel([{
    text: 'Sure: {"decision": "new", "confidence": 0.8, "reason": "unrelated"}',
  }]);
  const decision = await routeMessage("Translate the manual", active, { model: fresh });
  assert.equal(decision.action, "new");
  assert.equal(decision.confidence, 0.8);
});

Deno.test("router: low confidence or an unusable answer falls back to the deterministic rule", async () => {
  const active = [loop("a", "Fix the login bug in auth.ts", "Fixed the token check in auth.ts.")];
  const unsure = scriptedModel([{ text: '{"decision":"new","confidence":0.3,"reason":"maybe"}' }]);
  const low = await routeMessage("Also add a test for the token check", active, { model: unsure });
  assert.equal(low.action, "continue");
  assert.equal(low.runLoopId, "a");
  assert.match(low.reason, /shares words.*; the model was unsure \(0\.30 < 0\.6\)/);

  const garbage = scriptedModel([{
    text: "I think it is a continuation. {not json}",
    usage: { inputTokens: 80, outputTokens: 9 },
  }]);
  const fallback = await routeMessage("Plan the team offsite in Lisbon", active, {
    model: garbage,
  });
  assert.equal(fallback.action, "new");
  assert.match(fallback.reason, /the model gave no usable answer/);
  // The call was paid for, even though its answer was not taken.
  assert.deepEqual(fallback.usage, { inputTokens: 80, outputTokens: 9 });

  const wrongId = scriptedModel([{
    text: '{"decision":"continue","runLoopId":"zzz","confidence":0.99}',
  }]);
  assert.match((await routeMessage("x", active, { model: wrongId })).reason, /no usable answer/);
});

Deno.test("router: the deterministic rule continues follow-ups and word-sharing messages", () => {
  const active = [loop("a", "Write the release notes"), loop("bb", "Fix the flaky upload test")];
  assert.deepEqual(
    fallbackRoute("and make it shorter", active).runLoopId,
    "bb",
    "follow-up → latest",
  );
  assert.equal(fallbackRoute("the upload test still flakes", active).runLoopId, "bb");
  assert.equal(fallbackRoute("release notes need a date", active).runLoopId, "a");
  assert.equal(fallbackRoute("Book a table for four", active).action, "new");
});

Deno.test("run loops: a named active run loop is continued; events come in order; result stays last", async () => {
  const loops = runLoops();
  const model = scriptedModel([{ text: "Notes drafted." }, { text: "Date added." }]);
  const first = await collect({ model, loops, message: "Draft the release notes" });
  assert.deepEqual(first.events.slice(0, 2).map((e) => e.type), ["start", "run_loop_start"]);
  assert.equal(first.events.at(-1)?.type, "result");
  const start = first.events[1];
  assert.ok(start.type === "run_loop_start" && start.decision === "new");

  const second = await collect({
    model,
    loops,
    message: "add the date",
    runLoopId: first.result.runLoopId.slice(0, 8),
  });
  const named = second.events[1];
  assert.ok(named.type === "run_loop_start" && named.decision === "named");
  assert.equal(second.result.runLoopId, first.result.runLoopId);
  // The run loop's own conversation went on.
  assert.deepEqual(model.requests[1].messages.map((m) => m.role), ["user", "assistant", "user"]);
  const [active] = loops.active();
  assert.deepEqual(active.iterations.map((i) => [i.index, i.userMessage, i.response]), [
    [0, "Draft the release notes", "Notes drafted."],
    [1, "add the date", "Date added."],
  ]);
});

Deno.test("run loops: a failed run fails its run loop; too many active ones complete the oldest", async () => {
  const memory = await openMemory({ path: ":memory:" });
  const loops = runLoops({ memory });
  const failing = scriptedModel([{ error: new TypeError("broken") }]);
  const failed = await collect({ model: failing, loops, memory, message: "Do the impossible" });
  const end = failed.events.find((e) => e.type === "run_loop_end");
  assert.ok(end?.type === "run_loop_end" && end.status === "failed");
  assert.equal((await memory.runLoop(failed.result.runLoopId))?.status, "failed");
  assert.equal(failed.events.at(-1)?.type, "result");

  const model = scriptedModel(() => ({ text: "ok" }));
  const goals = ["Paint the fence", "Bake bread", "Tune the piano"];
  let last: RunLoopEvent[] = [];
  for (const goal of goals) {
    last = (await collect({ model, loops, memory, message: goal, maxActive: 2 })).events;
  }
  assert.equal(loops.active().length, 2);
  const ended = last.filter((e) => e.type === "run_loop_end");
  assert.ok(ended[0]?.type === "run_loop_end" && ended[0].status === "completed");
  assert.equal((await memory.runLoop(ended[0].runLoopId))?.goal, "Paint the fence");
  await memory.close();
});

Deno.test("run loops: a run loop memory cannot archive still ends, its run keeps its answer, and its end says why", async () => {
  const memory = await openMemory({ path: ":memory:" });
  await memory.close(); // archiving now fails, as it does on a full disk or a damaged file
  const loops = runLoops({ memory });
  const model = scriptedModel(() => ({ text: "Fixed it." }));
  const { events, result } = await collect({
    model,
    loops,
    memory,
    message: "Fix the build",
    complete: true,
  });
  assert.equal(result.status, "success");
  assert.equal(result.text, "Fixed it.");
  const last = events.at(-1);
  assert.ok(last?.type === "result" && last.text === "Fixed it.");
  const end = events.find((e) => e.type === "run_loop_end");
  assert.ok(end?.type === "run_loop_end" && end.status === "completed");
  assert.match(end.archiveError ?? "", /memory is closed/);
  assert.equal(loops.active().length, 0);

  // A run loop that is archived says nothing of the kind.
  const working = await openMemory({ path: ":memory:" });
  const fine = await collect({
    model,
    loops: runLoops({ memory: working }),
    memory: working,
    message: "Fix the build",
    complete: true,
  });
  const archived = fine.events.find((e) => e.type === "run_loop_end");
  assert.ok(archived?.type === "run_loop_end" && !("archiveError" in archived));
  await working.close();
});

Deno.test("run loops: one memory could not archive is kept, reopened when named, and archived once memory works", async () => {
  const memory = await openMemory({ path: ":memory:" });
  let full = true; // memory fails as on a full disk until the test frees it
  const archive = memory.archive.bind(memory);
  memory.archive = (loop) => full ? Promise.reject(new Error("")) : archive(loop);
  const heard: string[] = [];
  const loops = runLoops({ memory, onArchiveError: (id, error) => heard.push(`${id}: ${error}`) });
  const model = scriptedModel(() => ({ text: "Done." }));
  const first = await collect({ model, loops, memory, message: "Fix the build", complete: true });
  const id = first.result.runLoopId;
  const end = first.events.find((e) => e.type === "run_loop_end");
  // An error without a message is still said.
  assert.ok(end?.type === "run_loop_end" && end.archiveError === "Error");
  assert.deepEqual(heard, [`${id}: Error`]);
  assert.equal((await loops.get(id.slice(0, 8)))?.status, "completed");
  assert.equal(await memory.runLoop(id), undefined);

  // Named, it goes on as a new run loop seeded from it; a run loop not known at all, as a new
  // one, never in another that is active.
  const other = await loops.place("Paint the fence");
  const reopened = await loops.place("And the tests", { runLoopId: id });
  assert.equal(reopened.event.decision, "reopened");
  assert.equal(reopened.event.seededFrom, id);
  assert.match(String(reopened.seed?.content), /Fix the build/);
  const unknown = await loops.place("Paint the fence again", { runLoopId: "ffffffff" });
  assert.equal(unknown.event.decision, "new");
  assert.notEqual(unknown.runLoop.id, other.runLoop.id);
  assert.match(unknown.event.reason, /ffffffff is not known/);

  // A prefix that another run loop has too finds neither.
  assert.equal(await loops.get(""), undefined);

  // The next archive that works takes the kept one too, off the path of the run that ended.
  full = false;
  await loops.end(other.runLoop.id, "completed");
  assert.equal((await memory.runLoop(other.runLoop.id))?.goal, "Paint the fence");
  await loops.archivePending(); // the pass under way
  assert.equal((await memory.runLoop(id))?.goal, "Fix the build");
  assert.equal(heard.length, 1);
  await memory.close();
});

Deno.test("run loops: a kept run loop memory never takes holds up no other; past 100 the oldest is given up, and said", async () => {
  const memory = await openMemory({ path: ":memory:" });
  let full = true;
  const archive = memory.archive.bind(memory);
  // One run loop memory refuses whatever happens; the others, only while it is full.
  memory.archive = (loop) =>
    full || loop.goal === "Refused" ? Promise.reject(new Error("disk full")) : archive(loop);
  const heard: string[] = [];
  const loops = runLoops({ memory, onArchiveError: (id, error) => heard.push(`${id}: ${error}`) });
  const ended = async (goal: string) => {
    const { runLoop } = await loops.place(goal, { fresh: true });
    await loops.end(runLoop.id, "completed");
    return runLoop.id;
  };
  const refused = await ended("Refused");
  const kept = await ended("Kept");
  full = false;
  await ended("Works");
  await loops.archivePending(); // the pass: the refused one fails, and goes last
  await ended("Works again"); // the next pass takes the others
  await loops.archivePending();
  assert.equal((await memory.runLoop(kept))?.goal, "Kept");
  assert.equal(await memory.runLoop(refused), undefined);
  assert.equal((await loops.get(refused))?.goal, "Refused");

  // 100 kept at most: the oldest beyond it is given up, and the listener hears of it.
  full = true;
  for (let i = 0; i < 100; i++) await ended(`Goal ${i}`);
  assert.equal(await loops.get(refused), undefined);
  assert.ok(heard.includes(`${refused}: given up: more than 100 run loops wait to be archived`));
  await memory.close();
});

Deno.test("run loops: kept run loops are archived once each, off the path of the runs that end, and a prefix they share finds none", async () => {
  const memory = await openMemory({ path: ":memory:" });
  let full = true;
  const gate = Promise.withResolvers<void>();
  const calls: string[] = [];
  const archive = memory.archive.bind(memory);
  memory.archive = async (loop) => {
    calls.push(loop.goal);
    if (full) throw new Error("disk full");
    if (loop.goal.startsWith("Kept")) await gate.promise; // the retries wait for the test
    return await archive(loop);
  };
  const loops = runLoops({ memory });
  const ended = async (goal: string) => {
    const { runLoop } = await loops.place(goal, { fresh: true });
    await loops.end(runLoop.id, "completed");
    return runLoop.id;
  };
  const kept = [await ended("Kept 1"), await ended("Kept 2")];
  // One active, one kept: the prefix both have (here, the empty one) finds neither.
  const { runLoop: live } = await loops.place("Going", { fresh: true });
  assert.equal(await loops.get(""), undefined);
  assert.equal((await loops.get(live.id))?.goal, "Going");
  full = false;
  calls.length = 0;
  // Two run loops end at once while the retries wait: both end, and the kept ones are tried once.
  const ending = [
    await loops.place("Now A", { fresh: true }),
    await loops.place("Now B", { fresh: true }),
  ];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error("the runs' ends waited for the retries")), 5_000);
  });
  await Promise.race([
    Promise.all(ending.map(({ runLoop }) => loops.end(runLoop.id, "completed"))),
    stuck,
  ]).finally(() => clearTimeout(timer));
  await loops.end(live.id, "completed");
  assert.deepEqual(calls.filter((goal) => goal.startsWith("Now")).sort(), ["Now A", "Now B"]);
  gate.resolve();
  await loops.archivePending();
  assert.deepEqual(calls.filter((goal) => goal.startsWith("Kept")), ["Kept 1", "Kept 2"]);
  for (const id of kept) assert.ok(await memory.runLoop(id));
  assert.deepEqual(loops.kept(), []);
  await memory.close();
});

Deno.test("long-term memory: a second run finds what the first one learned", async () => {
  const memory = await openMemory({ path: ":memory:" });
  const readConfig = defineTool({
    name: "read_config",
    description: "Reads the config",
    parameters: z.object({}),
    execute: () => "listen_port = 4711\nlog_level = debug",
  });
  const first = scriptedModel([
    { toolCalls: [{ name: "read_config" }] },
    { text: "The service listens on port 4711." },
  ]);
  await collect({
    model: first,
    loops: runLoops({ memory }),
    memory,
    message: "Find out which port the service listens on",
    tools: [readConfig],
    complete: true,
  });

  // Another process: new run loops, same memory.
  const second = scriptedModel([
    { toolCalls: [{ name: "recall", input: { query: "listen port" } }] },
    { text: "Port 4711, as found before." },
  ]);
  const { result } = await collect({
    model: second,
    loops: runLoops({ memory }),
    memory,
    message: "Which port does the service listen on?",
  });
  const offered = second.requests[0].messages.find((m) =>
    m.role === "user" && m.content.startsWith("[Memories")
  );
  assert.ok(offered?.role === "user");
  assert.match(offered.content, /listen_port = 4711/);
  assert.match(offered.content, /\[[0-9a-f-]{36}#\d+ tool_result /);
  const recalled = second.requests[1].messages.at(-1);
  assert.ok(recalled?.role === "tool" && recalled.name === "recall");
  assert.match(recalled.content, /4711/);
  assert.equal(result.text, "Port 4711, as found before.");
  await memory.close();
});

Deno.test("long-term memory: the memories offered leave out the run loop's own, and only as many are read", async () => {
  const memory = await openMemory({ path: ":memory:" });
  const loop = (id: string, texts: string[]): RunLoop => ({
    id,
    goal: texts[0],
    status: "completed",
    createdAt: "2025-01-01T00:00:00.000Z",
    completedAt: "2025-01-01T00:01:00.000Z",
    iterations: texts.map((text, index) => ({
      index,
      userMessage: text,
      reasoning: [],
      toolCalls: [],
      toolResults: [],
      response: `Answered: ${text}`,
      startedAt: "2025-01-01T00:00:00.000Z",
      endedAt: "2025-01-01T00:01:00.000Z",
    })),
  });
  await memory.archive(loop("own", ["The database is locked", "Still locked: the database"]));
  await memory.archive(loop("other", ["Was the database locked?", "The database lock is gone"]));
  const asked: Array<RetrieveOptions | undefined> = [];
  const retrieve = (query: string, options?: RetrieveOptions) => {
    asked.push(options);
    return memory.retrieve(query, options);
  };
  const watched = new Proxy(memory, {
    get: (target, key) => key === "retrieve" ? retrieve : Reflect.get(target, key),
  });
  const offered = await memoryContext(watched, "database locked", { limit: 3, exclude: "own" });
  assert.ok(offered?.role === "user" && typeof offered.content === "string");
  const lines = offered.content.split("\n").filter((line) => /^\[[^\]]*#\d+ /.test(line));
  assert.equal(lines.length, 3);
  assert.ok(lines.every((line) => line.startsWith("[other#")), offered.content);
  assert.deepEqual(asked, [{ limit: 3, excludeRunLoop: "own" }]);
  assert.equal(await memoryContext(watched, "database locked", { limit: 0 }), undefined);
  await memory.close();
});

Deno.test("run loops: naming a completed run loop starts a new one seeded with its memory", async () => {
  const memory = await openMemory({ path: ":memory:" });
  const model = scriptedModel(() => ({ text: "Deployed version 2.3 to staging." }));
  const loops = runLoops({ memory });
  const done = await collect({
    model,
    loops,
    memory,
    message: "Deploy 2.3 to staging",
    complete: true,
  });
  const again = await collect({
    model,
    loops,
    memory,
    message: `loop:${done.result.runLoopId} now to production`,
  });
  const start = again.events.find((e) => e.type === "run_loop_start");
  assert.ok(start?.type === "run_loop_start");
  assert.equal(start.decision, "reopened");
  assert.equal(start.seededFrom, done.result.runLoopId);
  assert.notEqual(again.result.runLoopId, done.result.runLoopId);
  const seed = model.requests[1].messages[0];
  assert.ok(seed.role === "user");
  assert.match(seed.content, /^\[Memory of run loop [0-9a-f]{8}, completed/);
  assert.match(
    seed.content,
    /Goal: Deploy 2\.3 to staging\n- Deploy 2\.3 to staging\n {2}→ Deployed version 2\.3 to staging\./,
  );
  await memory.close();
});

/**
 * A model with prices: as the router, it says a message continues the first active run loop;
 * as the agent, it answers "Done." slowly.
 */
function pricedModel(): Model {
  const model = scriptedModel((request) => {
    const prompt = request.messages[0]?.role === "user" ? request.messages[0].content : "";
    if (!request.system?.startsWith("You route messages to tasks")) {
      return {
        text: ["Do", "ne."],
        usage: { inputTokens: 100, outputTokens: 20 },
        deltaDelayMs: 50,
      };
    }
    const id = /- id: (\S+)/.exec(prompt)?.[1];
    return {
      text: `{"decision":"continue","runLoopId":"${id}","confidence":0.9,"reason":"same bug"}`,
      usage: { inputTokens: 50, outputTokens: 10 },
    };
  });
  return Object.assign(model, {
    info: { contextWindow: 100_000, maxOutputTokens: 1_000, pricing: { input: 1, output: 2 } },
  });
}

/** What `usage` costs at the prices of {@link pricedModel}. */
const priced = (input: number, output: number) => (input * 1 + output * 2) / 1_000_000;

Deno.test("run loops: the router's call shows in run_loop_start and counts in the run's usage and cost", async () => {
  const model = pricedModel();
  const loops = runLoops({ router: model });
  await collect({ model, loops, message: "Fix the login bug" });
  const { events, result } = await collect({ model, loops, message: "also test the login bug" });
  const start = events.find((event) => event.type === "run_loop_start");
  assert.ok(start?.type === "run_loop_start");
  assert.equal(start.decision, "continue");
  assert.deepEqual(start.usage, { inputTokens: 50, outputTokens: 10 });
  assert.equal(start.costUsd, priced(50, 10));
  assert.deepEqual(result.usage, { inputTokens: 150, outputTokens: 30 });
  // The sum to a billionth of a dollar: 0.00021, not the floats' 0.00020999999999999998.
  assert.equal(result.costUsd, 0.00021);
  const summary = events.at(-1);
  assert.ok(summary?.type === "result");
  assert.deepEqual(summary.usage, result.usage);
  assert.equal(summary.costUsd, result.costUsd);
});

Deno.test("service: a routed message's router call counts in the usage and cost of the run it joins", async () => {
  const model = pricedModel();
  const service = createAgentService({ model });
  const first = await service.start({ message: "Fix the login bug" });
  await first.done;

  // Idle run loop: the routed message starts a run there.
  const started = await service.send({ message: "also test the login bug" });
  assert.equal(started.delivery, "started");
  assert.equal(started.run.runLoopId, first.runLoopId);
  assert.deepEqual(started.placement?.usage, { inputTokens: 50, outputTokens: 10 });
  const info = await started.run.done;
  assert.deepEqual(info.result?.usage, { inputTokens: 150, outputTokens: 30 });
  assert.equal(info.result?.costUsd, 0.00021);

  // Busy run loop: the routed message joins the run going there, and so does its cost.
  const agentCalls = () =>
    (model as ScriptedModel).requests.filter((request) => !request.system?.startsWith("You route"))
      .length;
  const before = agentCalls();
  const going = await service.start({
    message: "Fix the logout bug too",
    runLoopId: first.runLoopId,
  });
  // Sent once the run's first model call is under way: it joins at the next turn boundary.
  const { promise: turning, resolve: turned } = Promise.withResolvers<void>();
  const stop = going.listen(0, {
    event: (_, event) => event.type === "turn_start" && turned(),
    end: () => {},
  });
  await turning;
  stop();
  const queued = await service.send({ message: "and the login bug once more" });
  assert.equal(queued.delivery, "queued");
  assert.equal(queued.run, going);
  assert.deepEqual(queued.placement?.usage, { inputTokens: 50, outputTokens: 10 });
  const results: Extract<AgentEvent, { type: "result" }>[] = [];
  going.listen(0, {
    event: (_, event) => void (event.type === "result" && results.push(event)),
    end: () => {},
  });
  await going.done;
  const calls = agentCalls() - before;
  assert.ok(calls >= 2, "the queued message was answered");
  const sum = (key: "inputTokens" | "outputTokens") =>
    results.reduce((total, event) => total + event.usage[key], 0);
  assert.deepEqual([sum("inputTokens"), sum("outputTokens")], [100 * calls + 50, 20 * calls + 10]);
  const cost = results.reduce((total, event) => total + event.costUsd!, 0);
  assert.ok(Math.abs(cost - (priced(100 * calls, 20 * calls) + priced(50, 10))) < 1e-12);
  await service.close();
});
