/**
 * Token counting of 1 MB: without a space (one letter, random letters, base64, JSON), of prose,
 * code and Chinese; the estimate the agent uses, beside the exact count of `o200k_base`
 * (gpt-tokenizer) kept linear by counting long runs in pieces, and that exact count left whole
 * on a 40 KB word, where byte-pair merging is quadratic. Prints how far the estimate strays
 * from the exact count on each text first.
 */

import { clearMergeCache, countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { estimateTokens } from "../lib/compaction/token_estimate.ts";
import {
  countTokensInSlices,
  ESTIMATE_COUNTER,
  loadTokenCounter,
} from "../lib/compaction/tokens.ts";

const MB = 1_000_000;

/** `length` characters drawn from `alphabet`, the same ones on every run. */
function drawn(alphabet: string, length: number): string {
  const codes = new Uint16Array(length);
  let seed = 3;
  for (let i = 0; i < length; i++) {
    seed = (seed * 1_103_515_245 + 12_345) >>> 0;
    codes[i] = alphabet.charCodeAt((seed >>> 16) % alphabet.length);
  }
  let text = "";
  for (let i = 0; i < length; i += 8_192) {
    text += String.fromCharCode(...codes.subarray(i, i + 8_192));
  }
  return text;
}

/** `text` repeated up to `length` characters. */
function upTo(text: string, length: number): string {
  return text.repeat(Math.ceil(length / text.length)).slice(0, length);
}

async function sources(dir: URL): Promise<string> {
  let text = "";
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && entry.name.endsWith(".ts")) {
      text += await Deno.readTextFile(new URL(entry.name, dir));
    }
  }
  return text;
}

const root = new URL("../", import.meta.url);
const BASE64 =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const TEXTS: Record<string, string> = {
  "1 MB of one letter": "x".repeat(MB),
  "1 MB of random letters": drawn("abcdefghijklmnopqrstuvwxyz", MB),
  "1 MB of base64": drawn(BASE64, MB),
  "1 MB of JSON without spaces": upTo(
    JSON.stringify(
      Array.from({ length: 2_000 }, (_, i) => ({ id: i, path: `lib/file_${i}.ts`, ok: i % 2 })),
    ),
    MB,
  ),
  "1 MB of prose": upTo(await Deno.readTextFile(new URL("README.md", root)), MB),
  "1 MB of code": upTo(await sources(new URL("lib/", root)), MB),
  "1 MB of Chinese": upTo(
    "这个代理在终端里运行，读取和修改项目中的文件，并在沙箱中执行命令。当对话太长、超出上下文窗口时，" +
      "较早的工具输出会被省略，必要时较早的对话会被总结，这样请求始终能放进窗口。",
    MB / 3,
  ),
};

const exact = await loadTokenCounter(() => import("gpt-tokenizer/encoding/o200k_base"));

console.log("How far the estimate strays from the exact count (o200k_base, long runs in pieces):");
for (const [name, text] of Object.entries(TEXTS)) {
  const estimated = estimateTokens(text);
  const counted = exact.count(text);
  const off = (estimated / counted - 1) * 100;
  console.log(
    `  ${name.padEnd(28)} exact ${String(counted).padStart(8)}  estimate ${
      String(estimated).padStart(8)
    }  ${off >= 0 ? "+" : ""}${off.toFixed(1)}%`,
  );
}

for (const [name, text] of Object.entries(TEXTS)) {
  Deno.bench(`estimate: ${name}`, { group: name, baseline: true }, () => {
    estimateTokens(text);
  });
  Deno.bench(`exact, long runs in pieces: ${name}`, { group: name, n: 5, warmup: 1 }, (b) => {
    clearMergeCache(); // each word is merged again, as in a new text
    b.start();
    exact.count(text);
    b.end();
  });
}

const WORD = drawn("abcdefghijklmnopqrstuvwxyz", 40_000);
const special = { disallowedSpecial: new Set<string>() };
Deno.bench("estimate: a 40 KB word", { group: "40 KB word", baseline: true }, () => {
  estimateTokens(WORD);
});
Deno.bench(
  "exact, whole: a 40 KB word (quadratic)",
  { group: "40 KB word", n: 3, warmup: 0 },
  (b) => {
    clearMergeCache();
    b.start();
    countTokens(WORD, special);
    b.end();
  },
);

const TEN_MB = drawn("abcdefghijklmnopqrstuvwxyz", 10 * MB);
Deno.bench(
  "estimate in slices, with pauses: 10 MB of random letters",
  { n: 3, warmup: 1 },
  async () => {
    await countTokensInSlices(TEN_MB, ESTIMATE_COUNTER);
  },
);
