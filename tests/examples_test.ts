import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { runToolCall, toolRegistry } from "../mod.ts";
import { startMockOpenAIServer } from "../testing.ts";
import { calculator, evaluate } from "../examples/calculator.ts";
import { createWeatherTool } from "../examples/weather.ts";

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

Deno.test("examples/basic.ts runs against an OpenAI-compatible server", async () => {
  await using server = startMockOpenAIServer({
    replies: [
      { toolCalls: [{ name: "calculator", arguments: { expression: "(17 + 4) * 3" } }] },
      { text: "(17 + 4) * 3 = 63" },
    ],
  });
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      fileURLToPath(new URL("../examples/basic.ts", import.meta.url)),
      "What is (17 + 4) * 3?",
    ],
    env: { AGENT_MODEL: "openai/test", OPENAI_BASE_URL: server.url, OPENAI_API_KEY: "sk-test" },
    stdin: "null",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, stderr);
  assert.equal(stdout, "(17 + 4) * 3 = 63\n");
  assert.match(stderr, /→ calculator \{"expression":"\(17 \+ 4\) \* 3"\}\n← 63/);
  const tools = (server.requests[0].body.tools as Array<{ function: { name: string } }>).map((t) =>
    t.function.name
  );
  assert.deepEqual(tools, ["calculator", "get_weather"]);
});

Deno.test("examples/graph: research, write, review until approved, then publish", async () => {
  const { reviewGraph } = await import("../examples/graph.ts");
  const { scriptedModel } = await import("../testing.ts");
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
