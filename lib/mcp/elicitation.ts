/**
 * What a server asks of the user (`elicitation/create`, form mode): the request as the caller's
 * callback gets it, the answer it gives, the schema's defaults applied to the fields the answer
 * leaves out, and the answer checked against the schema before it goes to the server. Without a
 * callback nobody can answer, and the request is declined.
 *
 * @module
 */

/** One field of a form a server asks the user to fill in: a flat JSON Schema property. */
export interface McpElicitationField {
  /** `string`, `number`, `integer`, `boolean`, or `array` (a multi-select of strings). */
  type: "string" | "number" | "integer" | "boolean" | "array";
  /** A short name for it. */
  title?: string;
  /** What it is for. */
  description?: string;
  /** What the field holds when the answer leaves it out. */
  default?: unknown;
  /** The strings allowed (a single select). */
  enum?: string[];
  /** The strings allowed, each with a title (a titled single select). */
  oneOf?: { const: string; title?: string }[];
  /** A multi-select's items: the strings allowed (`enum`, or `anyOf` with titles). */
  items?: { type?: "string"; enum?: string[]; anyOf?: { const: string; title?: string }[] };
  /** Bounds of a string's length. */
  minLength?: number;
  /** Bounds of a string's length. */
  maxLength?: number;
  /** A string's format (`email`, `uri`, `date`, `date-time`). */
  format?: string;
  /** Bounds of a number. */
  minimum?: number;
  /** Bounds of a number. */
  maximum?: number;
  /** Bounds of a multi-select's count. */
  minItems?: number;
  /** Bounds of a multi-select's count. */
  maxItems?: number;
}

/** The form a server asks the user to fill in. */
export interface McpElicitationSchema {
  /** Always `object`. */
  type: "object";
  /** The fields, by name. */
  properties: Record<string, McpElicitationField>;
  /** The fields an accepted answer must hold. */
  required?: string[];
}

/** A server's request for input, as {@link ConnectMcpOptions.onElicitation} gets it. */
export interface McpElicitationRequest {
  /** What the server says it needs, to show the user. */
  message: string;
  /** The fields it asks for. */
  requestedSchema: McpElicitationSchema;
}

/**
 * The user's answer: `accept` with the fields filled in (those left out take their schema's
 * `default`), `decline` (the user said no), or `cancel` (the user dismissed the question).
 */
export type McpElicitationAnswer =
  | { action: "accept"; content: Record<string, unknown> }
  | { action: "decline" }
  | { action: "cancel" };

/**
 * The accepted `content` with each field it leaves out that has a `default` in `schema` set to
 * that default (a new object; `content` is not changed).
 *
 * @example
 * ```ts
 * import { applyElicitationDefaults } from "./elicitation.ts";
 * const content = applyElicitationDefaults({
 *   type: "object",
 *   properties: { name: { type: "string", default: "Ada" }, age: { type: "integer" } },
 * }, { age: 36 });
 * if (content.name !== "Ada" || content.age !== 36) throw new Error("unexpected");
 * ```
 */
export function applyElicitationDefaults(
  schema: McpElicitationSchema,
  content: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const filled: Record<string, unknown> = { ...content };
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    if (filled[name] === undefined && field && Object.hasOwn(field, "default")) {
      filled[name] = structuredClone(field.default);
    }
  }
  return filled;
}

/**
 * Why `content` does not fit `schema` (a field of the wrong type, a value outside its enum or
 * bounds, a required field missing, a field the schema does not have), or undefined when it
 * fits.
 *
 * @example
 * ```ts
 * import { checkElicitationContent } from "./elicitation.ts";
 * const schema = {
 *   type: "object" as const,
 *   properties: { color: { type: "string" as const, enum: ["red", "blue"] } },
 *   required: ["color"],
 * };
 * if (checkElicitationContent(schema, { color: "red" }) !== undefined) throw new Error("fits");
 * if (!checkElicitationContent(schema, { color: "green" })?.includes("color")) throw new Error("no");
 * if (!checkElicitationContent(schema, {})?.includes("required")) throw new Error("no");
 * ```
 */
export function checkElicitationContent(
  schema: McpElicitationSchema,
  content: Readonly<Record<string, unknown>>,
): string | undefined {
  const properties = schema.properties ?? {};
  for (const name of schema.required ?? []) {
    if (content[name] === undefined) return `the required field "${name}" is missing`;
  }
  for (const [name, value] of Object.entries(content)) {
    if (value === undefined) continue;
    const field = properties[name];
    if (!field) return `"${name}" is not a field of the form`;
    const wrong = _checkField(field, value);
    if (wrong) return `"${name}" ${wrong}`;
  }
  return undefined;
}

/** The strings a field allows, if it is a select; undefined for free text. */
export function _choices(field: McpElicitationField): string[] | undefined {
  if (field.type === "array") {
    return field.items?.enum ?? field.items?.anyOf?.map((option) => option.const);
  }
  return field.enum ?? field.oneOf?.map((option) => option.const);
}

function _checkField(field: McpElicitationField, value: unknown): string | undefined {
  const choices = _choices(field);
  switch (field.type) {
    case "boolean":
      return typeof value === "boolean" ? undefined : "must be true or false";
    case "number":
    case "integer": {
      if (typeof value !== "number" || !Number.isFinite(value)) return `must be a number`;
      if (field.type === "integer" && !Number.isInteger(value)) return "must be a whole number";
      if (field.minimum !== undefined && value < field.minimum) {
        return `must be at least ${field.minimum}`;
      }
      if (field.maximum !== undefined && value > field.maximum) {
        return `must be at most ${field.maximum}`;
      }
      return undefined;
    }
    case "array": {
      if (!Array.isArray(value) || value.some((item) => typeof item !== "string")) {
        return "must be a list of strings";
      }
      const outside = choices && value.find((item) => !choices.includes(item));
      if (outside !== undefined) return `may hold only ${_list(choices!)}, not "${outside}"`;
      if (field.minItems !== undefined && value.length < field.minItems) {
        return `must hold at least ${field.minItems}`;
      }
      if (field.maxItems !== undefined && value.length > field.maxItems) {
        return `must hold at most ${field.maxItems}`;
      }
      return undefined;
    }
    case "string": {
      if (typeof value !== "string") return "must be text";
      if (choices && !choices.includes(value)) return `must be one of ${_list(choices)}`;
      if (field.minLength !== undefined && value.length < field.minLength) {
        return `must be at least ${field.minLength} characters long`;
      }
      if (field.maxLength !== undefined && value.length > field.maxLength) {
        return `must be at most ${field.maxLength} characters long`;
      }
      return undefined;
    }
    default:
      return `has a type the form does not allow (${String((field as { type?: unknown }).type)})`;
  }
}

function _list(choices: readonly string[]): string {
  return choices.map((choice) => `"${choice}"`).join(", ");
}

/** A server's text, for a warning on one line: control characters out, at most 200 characters. */
export function _oneLine(text: string): string {
  // deno-lint-ignore no-control-regex
  const line = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/**
 * The answer to send a server: the callback's, with defaults applied and checked; `decline`
 * (and a warning, once) when there is no callback; `decline` with a warning when the answer does
 * not fit the schema; `cancel` with a warning when the callback throws.
 */
export async function _answerElicitation(
  server: string,
  request: McpElicitationRequest,
  options: {
    onElicitation?: (
      server: string,
      request: McpElicitationRequest,
    ) => Promise<McpElicitationAnswer>;
    warn(message: string): void;
    /** Whether nobody-can-answer was said for this server already. */
    warned: { headless: boolean };
  },
): Promise<McpElicitationAnswer> {
  const label = `MCP server "${server}"`;
  if (!options.onElicitation) {
    if (!options.warned.headless) {
      options.warned.headless = true;
      options.warn(
        `${label} asked for input (${_oneLine(request.message)}); nobody can answer in a ` +
          `headless run, so it was declined`,
      );
    }
    return { action: "decline" };
  }
  let answer: McpElicitationAnswer;
  try {
    answer = await options.onElicitation(server, request);
  } catch (error) {
    options.warn(`${label} asked for input, but asking failed: ${(error as Error).message}`);
    return { action: "cancel" };
  }
  if (answer.action !== "accept") {
    return { action: answer.action === "decline" ? "decline" : "cancel" };
  }
  const content = applyElicitationDefaults(request.requestedSchema, answer.content ?? {});
  const wrong = checkElicitationContent(request.requestedSchema, content);
  if (wrong) {
    options.warn(
      `${label} asked for input, but the answer does not fit its form (${wrong}); it was declined`,
    );
    return { action: "decline" };
  }
  return { action: "accept", content };
}
