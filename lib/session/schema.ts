/**
 * The shape of a session's entry lines, as zod schemas: what a line must hold to be resumed.
 * Reading a session checks each line against them, so that a line of the wrong shape (a value
 * where an object belongs, a message of an unknown role, an assistant message whose content is
 * not a list of parts) is skipped and reported, like a line cut off by a crash, and never
 * reaches the model or breaks a resume.
 *
 * Objects keep the fields they do not name, so that a line written by a later version loses
 * nothing on its way through.
 *
 * @module
 */

import { z } from "zod";
import type { Message } from "../messages.ts";
import type { SessionEntry } from "./store.ts";

const _providerData = {
  origin: z.string().optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
};

const _textPart = z.looseObject({ type: z.literal("text"), text: z.string(), ..._providerData });

const _reasoningPart = z.looseObject({
  type: z.literal("reasoning"),
  text: z.string(),
  signature: z.string().optional(),
  redacted: z.string().optional(),
  ..._providerData,
});

const _toolCallPart = z.looseObject({
  type: z.literal("tool_call"),
  id: z.string(),
  name: z.string(),
  input: z.unknown(),
  invalidInput: z.string().optional(),
  ..._providerData,
});

const _message = z.discriminatedUnion("role", [
  z.looseObject({ role: z.literal("user"), content: z.string() }),
  z.looseObject({
    role: z.literal("assistant"),
    content: z.array(z.discriminatedUnion("type", [_textPart, _reasoningPart, _toolCallPart])),
  }),
  z.looseObject({
    role: z.literal("tool"),
    toolCallId: z.string(),
    name: z.string(),
    content: z.string(),
    isError: z.boolean(),
  }),
]);

/** One message of a conversation, as a session line holds it. */
export const messageSchema: z.ZodType<Message> = _message as unknown as z.ZodType<Message>;

const _at = z.string().catch("");
const _tokens = z.number().nonnegative().catch(0);

const _entry = z.discriminatedUnion("type", [
  z.object({ type: z.literal("message"), message: _message, at: _at }),
  z.object({
    type: z.literal("compaction"),
    state: z.looseObject({ summary: z.string(), replaces: z.number().int().nonnegative() }),
    tokensBefore: _tokens,
    tokensAfter: _tokens,
    at: _at,
  }),
  z.object({ type: z.literal("model"), model: z.string(), at: _at }),
]);

/**
 * A session entry line (its `n` left out): a message, a compaction or a switch of model. A
 * missing or bad `at` reads as `""`, missing token counts as 0: they only inform.
 */
export const sessionEntrySchema: z.ZodType<SessionEntry> = _entry as unknown as z.ZodType<
  SessionEntry
>;

/** A line's value read as an entry, or why it is not one. */
export type EntryCheck =
  | { entry: SessionEntry; problem?: undefined }
  | { entry?: undefined; problem: string };

/**
 * Checks a parsed line against {@link sessionEntrySchema}: the entry, or in a few words why the
 * value is not one (where it goes wrong and what was expected there).
 *
 * @example
 * ```ts
 * import { checkEntryLine } from "./schema.ts";
 * const ok = checkEntryLine({ type: "model", model: "a/b", n: 1, at: "2025-01-01T00:00:00Z" });
 * if (ok.entry?.type !== "model") throw new Error("unexpected");
 * const bad = checkEntryLine({ type: "message", message: { role: "user", content: 42 } });
 * if (!bad.problem?.includes("message.content")) throw new Error(bad.problem);
 * ```
 */
export function checkEntryLine(value: unknown): EntryCheck {
  // Most lines are messages of the usual shape: checked where they are, without the copy zod
  // makes of every object it parses (a session of 50 MB would be built twice over).
  const message = _plainMessage(value);
  if (message) {
    const at = (value as { at?: unknown }).at;
    return { entry: { type: "message", message, at: typeof at === "string" ? at : "" } };
  }
  const parsed = _entry.safeParse(value);
  if (parsed.success) return { entry: parsed.data as SessionEntry };
  const issue = parsed.error.issues[0];
  const where = issue.path.length ? `${issue.path.join(".")}: ` : "";
  return { problem: `${where}${issue.message}`.slice(0, 200) };
}

/**
 * The message of a message line when it is plainly of a message's shape, every field as the
 * schema asks and nothing the schema would change; `undefined` sends the line to zod (which
 * then accepts it, as it would have, or says why not).
 */
function _plainMessage(value: unknown): Message | undefined {
  if (!_isRecord(value) || value.type !== "message") return undefined;
  const message = value.message;
  if (!_isRecord(message)) return undefined;
  switch (message.role) {
    case "user":
      return typeof message.content === "string" ? message as unknown as Message : undefined;
    case "tool":
      return typeof message.content === "string" && typeof message.toolCallId === "string" &&
          typeof message.name === "string" && typeof message.isError === "boolean"
        ? message as unknown as Message
        : undefined;
    case "assistant":
      return Array.isArray(message.content) && message.content.every(_plainPart)
        ? message as unknown as Message
        : undefined;
    default:
      return undefined;
  }
}

function _plainPart(part: unknown): boolean {
  if (!_isRecord(part) || !_optionalString(part.origin) || part.extra !== undefined) return false;
  switch (part.type) {
    case "text":
      return typeof part.text === "string";
    case "reasoning":
      return typeof part.text === "string" && _optionalString(part.signature) &&
        _optionalString(part.redacted);
    case "tool_call":
      return typeof part.id === "string" && typeof part.name === "string" && "input" in part &&
        _optionalString(part.invalidInput);
    default:
      return false;
  }
}

/** A plain record; one with an own `__proto__` key (as JSON.parse makes) goes to zod, which drops it. */
function _isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) &&
    !Object.hasOwn(value, "__proto__");
}

function _optionalString(value: unknown): boolean {
  return value === undefined || typeof value === "string";
}
