/**
 * A calculator tool with a small, safe expression parser: numbers, + - * / % ^, parentheses,
 * the constants pi and e, and common functions. Nothing is ever evaluated as code.
 *
 * @module
 */

import { z } from "zod";
import { defineTool, type Tool } from "@x/agent";

const FUNCTIONS: Record<string, (...args: number[]) => number> = {
  abs: Math.abs,
  sqrt: Math.sqrt,
  cbrt: Math.cbrt,
  exp: Math.exp,
  ln: Math.log,
  log: Math.log10,
  log2: Math.log2,
  sin: Math.sin,
  cos: Math.cos,
  tan: Math.tan,
  asin: Math.asin,
  acos: Math.acos,
  atan: Math.atan,
  round: Math.round,
  floor: Math.floor,
  ceil: Math.ceil,
  min: Math.min,
  max: Math.max,
};
const CONSTANTS: Record<string, number> = { pi: Math.PI, e: Math.E };

/**
 * Evaluates an arithmetic expression.
 *
 * @example
 * ```ts
 * import { evaluate } from "./calculator.ts";
 * if (evaluate("(17 + 4) * 3 - 2^3") !== 55) throw new Error("unexpected");
 * ```
 */
export function evaluate(expression: string): number {
  const tokens = expression.match(/\d+\.?\d*(?:e[+-]?\d+)?|\.\d+|[a-z_]\w*|\S/gi) ?? [];
  let at = 0;
  const peek = () => tokens[at];
  const take = (expected?: string) => {
    const token = tokens[at++];
    if (expected !== undefined && token !== expected) {
      throw new SyntaxError(
        `expected "${expected}" but found ${token === undefined ? "the end" : `"${token}"`}`,
      );
    }
    return token;
  };
  // sum := product (("+" | "-") product)*
  const sum = (): number => {
    let value = product();
    while (peek() === "+" || peek() === "-") {
      value = take() === "+" ? value + product() : value - product();
    }
    return value;
  };
  // product := unary (("*" | "/" | "%") unary)*
  const product = (): number => {
    let value = unary();
    while (peek() === "*" || peek() === "/" || peek() === "%") {
      const op = take();
      const right = unary();
      value = op === "*" ? value * right : op === "/" ? value / right : value % right;
    }
    return value;
  };
  // unary := ("-" | "+") unary | power
  const unary = (): number => {
    const sign = peek();
    if (sign !== "-" && sign !== "+") return power();
    take();
    return sign === "-" ? -unary() : unary();
  };
  // power := atom ("^" unary)?   (right-associative)
  const power = (): number => {
    const base = atom();
    if (peek() !== "^") return base;
    take();
    return base ** unary();
  };
  // atom := number | constant | function "(" args ")" | "(" sum ")"
  const atom = (): number => {
    const token = take();
    if (token === undefined) throw new SyntaxError("the expression ends too early");
    if (token === "(") {
      const value = sum();
      take(")");
      return value;
    }
    if (/^[\d.]/.test(token)) return Number(token);
    const name = token.toLowerCase();
    // Own properties only: "constructor" and friends are not names here.
    if (Object.hasOwn(CONSTANTS, name)) return CONSTANTS[name];
    if (!Object.hasOwn(FUNCTIONS, name)) throw new SyntaxError(`unknown name "${token}"`);
    const fn = FUNCTIONS[name];
    take("(");
    const args = [sum()];
    while (peek() === ",") {
      take();
      args.push(sum());
    }
    take(")");
    return fn(...args);
  };
  const value = sum();
  if (at < tokens.length) throw new SyntaxError(`unexpected "${tokens[at]}"`);
  return value;
}

/** The calculator tool. */
export const calculator: Tool<{ expression: string }> = defineTool({
  name: "calculator",
  description: "Evaluate an arithmetic expression exactly, e.g. `(17 + 4) * 3`, `2^10`, " +
    "`sqrt(2) * pi`. Supports + - * / % ^, parentheses, pi, e, and abs, sqrt, cbrt, exp, ln, " +
    "log (base 10), log2, sin, cos, tan, asin, acos, atan, round, floor, ceil, min, max.",
  parameters: z.object({ expression: z.string().describe("The expression to evaluate") }),
  execute: ({ expression }) => {
    try {
      return String(evaluate(expression));
    } catch (error) {
      throw new Error(`Cannot evaluate "${expression}": ${(error as Error).message}`);
    }
  },
});
