/**
 * The form an MCP server asks the user to fill in, in the terminal session: one line per field
 * (its name, title, description, default and choices), and what a typed line gives for it.
 *
 * @module
 */

import {
  _choices,
  checkElicitationContent,
  type McpElicitationField,
} from "../../mcp/elicitation.ts";
import { terminalText } from "../terminal_text.ts";

/**
 * The question for one field: `name (Title: description) [one|two] [default: one]`, with
 * nothing in it the terminal would act on.
 *
 * @example
 * ```ts
 * import { fieldQuestion } from "./form.ts";
 * const line = fieldQuestion("age", { type: "integer", description: "Your age", default: 30 }, false);
 * if (line !== "age (Your age) [default: 30]") throw new Error(line);
 * ```
 */
export function fieldQuestion(
  name: string,
  field: McpElicitationField,
  required: boolean,
): string {
  const about = [field.title, field.description].filter(Boolean).join(": ");
  const choices = _choices(field);
  const parts = [
    terminalText(name) + (required ? "*" : ""),
    about ? `(${terminalText(about)})` : "",
    choices ? `[${terminalText(choices.join("|"))}]` : field.type === "boolean" ? "[y|n]" : "",
    field.default !== undefined ? `[default: ${terminalText(_shown(field.default))}]` : "",
  ];
  return parts.filter(Boolean).join(" ");
}

/**
 * What a line typed for a field gives: its `value` (none for an empty line: the default then
 * applies), `decline` for an empty line where the field is required and has no default, or an
 * `error` to show before asking again. A yes/no field takes `y`, `yes`, `n`, `no`, `true` or
 * `false`; a multi-select takes choices separated by commas; a select takes a choice or its
 * number.
 *
 * @example
 * ```ts
 * import { fieldAnswer } from "./form.ts";
 * const status = { type: "string" as const, enum: ["active", "inactive"] };
 * if (fieldAnswer(status, "2", false).value !== "inactive") throw new Error("unexpected");
 * if (!fieldAnswer(status, "gone", false).error) throw new Error("unexpected");
 * if (!fieldAnswer({ type: "string" }, "", true).decline) throw new Error("unexpected");
 * ```
 */
export function fieldAnswer(
  field: McpElicitationField,
  line: string,
  required: boolean,
): { value?: unknown; decline?: true; error?: string } {
  const text = line.trim();
  if (text === "") {
    return required && field.default === undefined ? { decline: true } : {};
  }
  const choices = _choices(field);
  let value: unknown = text;
  switch (field.type) {
    case "boolean": {
      const yes = ["y", "yes", "true"].includes(text.toLowerCase());
      const no = ["n", "no", "false"].includes(text.toLowerCase());
      if (!yes && !no) return { error: "answer y or n" };
      value = yes;
      break;
    }
    case "number":
    case "integer":
      value = Number(text);
      break;
    case "array":
      value = text.split(",").map((item) => _choice(item.trim(), choices)).filter(Boolean);
      break;
    default:
      value = _choice(text, choices);
  }
  const wrong = checkElicitationContent(
    { type: "object", properties: { value: field } },
    { value },
  );
  return wrong ? { error: wrong.replace(/^"value" /, "it ") } : { value };
}

/** A choice typed by its number (1-based) or as it is. */
function _choice(text: string, choices: readonly string[] | undefined): string {
  const index = /^\d+$/.test(text) ? Number(text) - 1 : -1;
  return choices && !choices.includes(text) && choices[index] !== undefined ? choices[index] : text;
}

function _shown(value: unknown): string {
  return Array.isArray(value) ? value.join(", ") : String(value);
}
