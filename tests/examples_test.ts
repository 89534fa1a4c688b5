import "./isolated_env.ts";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { runToolCall } from "../lib/tool_runner.ts";
import { toolRegistry } from "../lib/tool.ts";
import { startMockOpenAIServer } from "../lib/testing/mod.ts";
import { calculator, evaluate } from "../examples/calculator.ts";
import { createWeatherTool } from "../examples/weather.ts";
import { outputOf } from "./cli_run_support.ts";

Deno.test("examples/calculator: evaluates arithmetic with precedence and functions", () => {
  const cases: Array<[string, number]> = [
    ["1 + 2 * 3", 7],
    ["(1 + 2) * 3", 9],
    ["2 ^ 3 ^ 2", 512],
    ["-2 ^ 2", -4],
    ["10 % 4 - -1", 3],
    ["sqrt(16) + abs(-2)", 6],
    ["max(1, 7, 3) * min(2, 5)", 14],
    ["round(pi * 100) / 100", 3.14],
    ["1.5e3 / .5", 3000],
  ];
  for (const [expression, value] of cases) assert.equal(evaluate(expression), value, expression);
});

Deno.test("examples/calculator: refuses anything that is not arithmetic", async () => {
  for (const bad of ["2 +", "constructor", "alert(1)", "1; 2", "(1 + 2", "x => 1", "this"]) {
    assert.throws(() => evaluate(bad), SyntaxError, bad);
  }
  const result = await runToolCall(
    { type: "tool_call", id: "1", name: "calculator", input: { expression: "process.exit(1)" } },
    toolRegistry([calculator]),
    { cwd: ".", signal: new AbortController().signal },
  );
  assert.equal(result.isError, true);
  assert.match(result.output, /Cannot evaluate "process\.exit\(1\)": unknown name "process"/);
});

Deno.test("examples/weather: geocodes the city, then reads its current weather", async () => {
  const seen: string[] = [];
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request) => {
      const url = new URL(request.url);
      seen.push(`${url.pathname}?${url.searchParams}`);
      if (url.pathname === "/v1/search") {
        return Response.json({
          results: url.searchParams.get("name") === "Paris"
            ? [{ name: "Paris", country: "France", latitude: 48.85, longitude: 2.35 }]
            : undefined,
        });
      }
      return Response.json({
        current: { temperature_2m: 21.5, wind_speed_10m: 9, weather_code: 2 },
      });
    },
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  const weather = createWeatherTool({ geocodingURL: base, forecastURL: base });
  const run = (city: string) =>
    runToolCall(
      { type: "tool_call", id: "1", name: "get_weather", input: { city } },
      toolRegistry([weather]),
      { cwd: ".", signal: new AbortController().signal },
    );
  const paris = await run("Paris");
  assert.equal(paris.output, "Paris, France: 21.5°C, wind 9 km/h, partly cloudy");
  assert.match(seen[1], /latitude=48\.85&longitude=2\.35&current=temperature_2m/);
  const nowhere = await run("Atlantis");
  assert.equal(nowhere.isError, true);
  assert.match(nowhere.output, /No place called "Atlantis"/);
});

/** Runs an example in a child process, pointed at `baseURL` for its model. */
function runExample(name: string, args: string[], baseURL: string) {
  return outputOf(
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", fileURLToPath(new URL(`../examples/${name}`, import.meta.url)), ...args],
      env: { AGENT_MODEL: "openai/test", OPENAI_BASE_URL: baseURL, OPENAI_API_KEY: "sk-test" },
      stdin: "null",
    }),
  );
}

/** The examples that run as programs; each has a test of its exit code on success and failure. */
const PROGRAMS = ["basic.ts", "graph.ts"];

Deno.test("examples: every example that runs as a program has its exit codes tested", async () => {
  const programs: string[] = [];
  for await (const entry of Deno.readDir(new URL("../examples/", import.meta.url))) {
    if (!entry.isFile || !entry.name.endsWith(".ts")) continue;
    const text = await Deno.readTextFile(new URL(`../examples/${entry.name}`, import.meta.url));
    if (/import\.meta\.main|Deno\.args/.test(text)) programs.push(entry.name);
  }
  assert.deepEqual(programs.sort(), PROGRAMS);
});

Deno.test("examples/basic.ts runs against an OpenAI-compatible server and exits 0", async () => {
  await using server = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ name: "calculator", arguments: { expression: "(17 + 4) * 3" } }] },
      { text: "(17 + 4) * 3 = 63" },
    ],
  });
  const { code, stdout, stderr } = await runExample(
    "basic.ts",
    ["What is (17 + 4) * 3?"],
    server.url,
  );
  assert.equal(code, 0, stderr);
  assert.equal(stdout, "(17 + 4) * 3 = 63\n");
  assert.match(stderr, /→ calculator \{"expression":"\(17 \+ 4\) \* 3"\}\n← 63/);
  const tools = (server.requests[0].body.tools as Array<{ function: { name: string } }>).map((t) =>
    t.function.name
  );
  assert.deepEqual(tools, ["calculator", "get_weather"]);
});

Deno.test("examples/basic.ts exits 1 when its run fails", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ status: 401 }) });
  const { code, stderr } = await runExample("basic.ts", ["Hi"], server.url);
  assert.equal(code, 1, stderr);
  assert.match(stderr, /^error: .*401/m);
});

/** A mock model for the graph example: the review approves the second draft. */
function reviewingServer() {
  let reviews = 0;
  return startMockOpenAIServer({
    replies: (body) => {
      const messages = body.messages as Array<{ role: string; content: string }>;
      const system = messages[0].role === "system" ? messages[0].content : "";
      if (system.startsWith("You judge")) {
        return {
          text: reviews >= 2
            ? '{"answer":"yes","reason":"approved"}'
            : '{"answer":"no","reason":"fixes asked"}',
        };
      }
      if (system.startsWith("You are a researcher")) {
        return messages.at(-1)?.role === "tool"
          ? { text: "A leap year has 31,622,400 seconds." }
          : {
            toolCalls: [{ name: "calculator", arguments: { expression: "366 * 24 * 60 * 60" } }],
          };
      }
      if (system.startsWith("You are a writer")) {
        return { text: `Draft ${reviews + 1}: 31,622,400 seconds.` };
      }
      reviews++;
      return { text: reviews >= 2 ? "APPROVED" : "Say that it is for a leap year." };
    },
  });
}

Deno.test("examples/graph.ts prints the published answer and exits 0", async () => {
  await using server = reviewingServer();
  const { code, stdout, stderr } = await runExample(
    "graph.ts",
    ["Seconds in a leap year?"],
    server.url,
  );
  assert.equal(code, 0, stderr);
  assert.equal(stdout, "Draft 2: 31,622,400 seconds.\n");
  assert.match(stderr, /▶ research\n[^]*▶ publish/);
});

Deno.test("examples/graph.ts exits 1 when its graph fails", async () => {
  await using server = startMockOpenAIServer({ replies: () => ({ status: 401 }) });
  const { code, stdout, stderr } = await runExample(
    "graph.ts",
    ["Seconds in a leap year?"],
    server.url,
  );
  assert.equal(code, 1, stderr);
  assert.equal(stdout, "");
  assert.match(stderr, /^error: .*LLM node "research" failed/m);
});

Deno.test("examples/graph: research, write, review until approved, then publish", async () => {
  const { reviewGraph } = await import("../examples/graph.ts");
  const { scriptedModel } = await import("../lib/testing/mod.ts");
  let reviews = 0;
  const model = scriptedModel((request) => {
    const system = request.system ?? "";
    if (system.startsWith("You judge")) {
      return {
        text: reviews >= 2
          ? '{"answer":"yes","reason":"approved"}'
          : '{"answer":"no","reason":"fixes asked"}',
      };
    }
    if (system.startsWith("You are a researcher")) {
      const last = request.messages.at(-1);
      return last?.role === "tool"
        ? { text: "A leap year has 31,622,400 seconds." }
        : { toolCalls: [{ name: "calculator", input: { expression: "366 * 24 * 60 * 60" } }] };
    }
    if (system.startsWith("You are a writer")) {
      return { text: `Draft ${reviews + 1}: 31,622,400 seconds.` };
    }
    reviews++;
    return { text: reviews >= 2 ? "APPROVED" : "Say that it is for a leap year." };
  });
  const outcome = await reviewGraph(model).execute("research", "Seconds in a leap year?").result;
  assert.equal(outcome.status, "completed", outcome.error);
  assert.equal(outcome.finalMessage, "Draft 2: 31,622,400 seconds.");
  assert.deepEqual(outcome.path.map((step) => step.node), [
    "research",
    "write",
    "keep",
    "review",
    "write",
    "keep",
    "review",
    "publish",
  ]);
  assert.equal(outcome.path[3].edge?.to, "write");
  assert.equal(outcome.path[6].edge?.kind, "model");
});
