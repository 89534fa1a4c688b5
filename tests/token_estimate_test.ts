/**
 * The token estimate against the exact count of `o200k_base` (gpt-tokenizer): how far it strays
 * on code, prose, JSON and CJK, and on long runs without spaces; the exact counter kept linear;
 * counting in slices that let other work run and stop when asked.
 */

import "./isolated_env.ts";
import assert from "node:assert/strict";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import {
  countTokensInSlices,
  ESTIMATE_COUNTER,
  EXACT_RUN_CHARS,
  loadTokenCounter,
} from "../lib/compaction/tokens.ts";
import { estimateTokens, textSlices } from "../lib/compaction/token_estimate.ts";

const special = { disallowedSpecial: new Set<string>() };
const exact = (text: string) => countTokens(text, special);

/** How far the estimate strays from the exact count, as a share (+0.05: 5% more). */
function stray(text: string): number {
  return estimateTokens(text) / exact(text) - 1;
}

async function sources(dir: URL, suffix: string): Promise<string> {
  let text = "";
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && entry.name.endsWith(suffix)) {
      text += await Deno.readTextFile(new URL(entry.name, dir));
    }
  }
  return text;
}

/** `length` characters drawn from `alphabet`, the same ones on every run. */
function drawn(alphabet: string, length: number): string {
  let seed = 7;
  let text = "";
  for (let i = 0; i < length; i++) {
    seed = (seed * 1_103_515_245 + 12_345) >>> 0;
    text += alphabet[(seed >>> 16) % alphabet.length];
  }
  return text;
}

const CHINESE = "这个代理在终端里运行，读取和修改项目中的文件，并在沙箱中执行命令。" +
  "每次运行开始时，它会读取项目的设置和说明，然后把任务交给模型。模型可以调用工具：" +
  "读取文件、搜索代码、编辑内容、运行测试。当对话太长、超出上下文窗口时，较早的工具输出会被省略，" +
  "必要时较早的对话会被总结，这样请求始终能放进窗口。用户可以随时按下 Ctrl+C 中断运行，" +
  "会话会被保存，以后可以继续。作为服务运行时，它只接受带有令牌的请求，并且每个项目的会话互相隔离。";

const JAPANESE =
  "このエージェントはターミナルで動き、プロジェクトのファイルを読んだり書き換えたり、" +
  "サンドボックスの中でコマンドを実行したりします。会話が長くなってコンテキストウィンドウに" +
  "収まらなくなると、古いツールの出力を省き、必要なら古い会話を要約します。" +
  "ユーザーはいつでも Ctrl+C で実行を止めることができ、セッションは保存されるので後から続けられます。" +
  "サービスとして動かすときは、トークンを持つリクエストだけを受け付けます。";

const KOREAN = "이 에이전트는 터미널에서 실행되며 프로젝트의 파일을 읽고 고치고, 샌드박스 안에서 " +
  "명령을 실행합니다. 대화가 길어져 컨텍스트 창을 넘으면 오래된 도구 출력을 생략하고, " +
  "필요하면 이전 대화를 요약합니다. 사용자는 언제든지 Ctrl+C 로 실행을 멈출 수 있으며, " +
  "세션은 저장되어 나중에 이어서 할 수 있습니다. 서비스로 실행할 때는 토큰이 있는 요청만 받습니다.";

const RUSSIAN = "Агент работает в терминале: читает и изменяет файлы проекта и выполняет команды " +
  "в песочнице. Когда разговор становится слишком длинным для контекстного окна, старые " +
  "результаты инструментов опускаются, а при необходимости ранние части разговора " +
  "пересказываются кратко. Пользователь может в любой момент прервать работу клавишами Ctrl+C; " +
  "сессия сохраняется, и её можно продолжить позже.";

Deno.test("estimateTokens() strays by 10% at most on code, prose and JSON", async () => {
  const root = new URL("../", import.meta.url);
  const texts = {
    code: await sources(new URL("lib/", root), ".ts") +
      await sources(new URL("tools/", root), ".ts"),
    prose: await Deno.readTextFile(new URL("README.md", root)),
    json: await Deno.readTextFile(new URL("deno.lock", root)),
    "tool call JSON": JSON.stringify(
      Array.from({ length: 200 }, (_, i) => ({
        name: "edit",
        input: { path: `lib/module_${i}.ts`, old_string: `const value${i} = ${i};`, limit: i * 7 },
      })),
    ),
  };
  for (const [kind, text] of Object.entries(texts)) {
    assert.ok(text.length > 10_000, `${kind}: too little text to judge`);
    const off = stray(text);
    assert.ok(Math.abs(off) <= 0.1, `${kind}: ${(off * 100).toFixed(1)}%`);
  }
});

Deno.test("estimateTokens() strays by 30% at most on a paragraph of Chinese, Japanese, Korean or Russian", () => {
  for (const [kind, text] of Object.entries({ CHINESE, JAPANESE, KOREAN, RUSSIAN })) {
    const off = stray(text);
    assert.ok(Math.abs(off) <= 0.3, `${kind}: ${(off * 100).toFixed(1)}%`);
  }
});

Deno.test("estimateTokens() on long runs without spaces: close on random text, never far under", () => {
  const bytes = Uint8Array.from(
    drawn("\x00\x01\x02\x03\x04\x05\x06\x07", 30_000),
    (c, i) => (c.charCodeAt(0) * 37 + i * 11) & 255,
  );
  const random = {
    "random letters": drawn("abcdefghijklmnopqrstuvwxyz", 40_000),
    "base64": btoa(String.fromCharCode(...bytes)),
    "hex": Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join(""),
  };
  for (const [kind, text] of Object.entries(random)) {
    const off = stray(text);
    assert.ok(Math.abs(off) <= 0.15, `${kind}: ${(off * 100).toFixed(1)}%`);
  }
  // Runs of one ASCII character: never under the exact count by much, at most 4 times over it.
  for (const char of ["x", "=", "~", "!", " ", "\n"]) {
    const off = stray(char.repeat(8_000));
    assert.ok(
      off >= -0.1 && off <= 3,
      `${JSON.stringify(char)} × 8,000: ${(off * 100).toFixed(1)}%`,
    );
  }
});

Deno.test("estimateTokens() is the sum over slices, wherever a text is cut", () => {
  const text = "word ".repeat(50_000) + "x".repeat(200_000) + " 中文".repeat(50_000);
  const whole = estimateTokens(text);
  const slices = [...textSlices(text, 10_000)];
  assert.equal(slices.join(""), text);
  assert.ok(slices.every((slice) => slice.length <= 10_000));
  const summed = slices.reduce((sum, slice) => sum + estimateTokens(slice), 0);
  assert.ok(Math.abs(summed - whole) <= slices.length, `${summed} vs ${whole}`);
  // A surrogate pair is never cut in two.
  const emoji = [..."😀".repeat(10_000)];
  for (const slice of textSlices(emoji.join(""), 999)) {
    assert.ok(!/^[\udc00-\udfff]|[\ud800-\udbff]$/.test(slice));
  }
});

Deno.test("loadTokenCounter() with a tokenizer counts exactly, long runs in pieces", async () => {
  const counter = await loadTokenCounter(() => import("gpt-tokenizer/encoding/o200k_base"));
  assert.equal(counter.name, "exact");
  const prose = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  assert.equal(counter.count(prose), exact(prose));
  // A run longer than EXACT_RUN_CHARS is counted in pieces: a token more per piece at most.
  const run = drawn("abcdefghijklmnopqrstuvwxyz", 20 * EXACT_RUN_CHARS);
  const pieces = 20;
  assert.ok(counter.count(run) >= exact(run) && counter.count(run) <= exact(run) + pieces);
});

Deno.test("countTokensInSlices() lets timers run between slices, and stops when aborted", async () => {
  const text = "lorem ipsum dolor sit amet ".repeat(400_000); // 10.8 MB
  let ticks = 0;
  const timer = setInterval(() => ticks++, 0);
  try {
    const tokens = await countTokensInSlices(text, ESTIMATE_COUNTER);
    assert.equal(tokens, estimateTokens(text));
    assert.ok(ticks > 0, "no timer ran while counting");

    const controller = new AbortController();
    const counting = countTokensInSlices(text, ESTIMATE_COUNTER, controller.signal);
    controller.abort(new Error("stop"));
    await assert.rejects(counting, /stop/);
  } finally {
    clearInterval(timer);
  }
});
