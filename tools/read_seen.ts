/**
 * What `read` has shown the model, and whether the model still has it: the memory behind the
 * "unchanged since you read it" note. A file read again that is the same as when it was shown,
 * shown by a result the model still has in view, need not be sent again.
 *
 * Two things must hold. The earlier result must still be in the conversation the model sees:
 * the tool finds it in {@link ToolContext.history} (the request as the model got it), word for
 * word as the read returned it, so a result left out by compaction, summarized away, cut short
 * or changed by a hook, or one from some other conversation, never counts. And the file must be
 * the one that was read: the same real path, size and modification time, and the same content
 * (its SHA-256), so a file rewritten within the same clock tick, or changed by the agent's own
 * `edit` or `write`, is read again.
 *
 * What each read showed is kept by the tool, by call id and output, for its last 1,024 reads
 * (the output's digest tells apart two calls a server gave the same id); a conversation resumed
 * in another process has none of it, and its first read of each file shows the content again.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { ToolMessage } from "../lib/messages.ts";
import type { ToolContext } from "../lib/tool.ts";
import type { ToolFileInfo } from "./fs.ts";

/** What one read showed: the file as it was, and the lines shown. */
export interface ReadShown {
  /** The real path of the file read. */
  path: string;
  /** Its size in bytes. */
  size: number;
  /** Its modification time in milliseconds, when known. */
  mtimeMs: number | undefined;
  /** The SHA-256 of its whole content. */
  digest: string;
  /** How many lines it has. */
  lines: number;
  /** The first line shown, from 1. */
  from: number;
  /** The last line shown. */
  to: number;
}

/** An earlier read the model still has in view, of a file that has not changed since. */
export interface ReadStillShown {
  /** The call id of that read. */
  toolCallId: string;
  /** What it showed. */
  shown: ReadShown;
}

/** The reads of one `read` tool, and the lookup of those the model still has in view. */
export interface ReadMemory {
  /** Records what the read `toolCallId` showed: its `output`, of the file `shown` says. */
  remember(toolCallId: string, output: string, shown: ReadShown): void;
  /**
   * The most recent read in `history` whose result, as the read returned it, shows the lines
   * `range` asks for of `file` as it is now; undefined when there is none, or when the file
   * changed after a read of it that the model has in view. `range` gets the file's line count
   * and says which lines are asked for (undefined: none that exist).
   */
  find(
    history: ToolContext["history"],
    file: { path: string; info: ToolFileInfo; digest: string },
    range: (lines: number) => { from: number; to: number } | undefined,
  ): ReadStillShown | undefined;
}

/** How many reads a tool keeps. */
const KEPT = 1_024;

/**
 * The memory of one `read` tool: what its reads showed, found again in a conversation.
 *
 * @example
 * ```ts
 * import { readMemory, sha256 } from "./read_seen.ts";
 * const memory = readMemory("read");
 * const bytes = new TextEncoder().encode("one\n");
 * const output = "     1\tone";
 * const info = { isFile: true, isDirectory: false, isSymlink: false, size: 4, mtime: new Date(0) };
 * memory.remember("call_1", output, {
 *   path: "/w/a.txt", size: 4, mtimeMs: 0, digest: sha256(bytes), lines: 1, from: 1, to: 1,
 * });
 * const history = [{ role: "tool" as const, toolCallId: "call_1", name: "read", content: output, isError: false }];
 * const whole = () => ({ from: 1, to: 1 });
 * const file = { path: "/w/a.txt", info, digest: sha256(bytes) };
 * if (memory.find(history, file, whole)?.toolCallId !== "call_1") {
 *   throw new Error("the read is in view and the file unchanged");
 * }
 * if (memory.find([], file, whole)) throw new Error("not in view");
 * ```
 */
export function readMemory(toolName: string): ReadMemory {
  const reads = new Map<string, ReadShown>();
  return {
    remember(toolCallId, output, shown) {
      const key = `${toolCallId}\n${sha256(output)}`;
      reads.delete(key);
      reads.set(key, shown);
      if (reads.size > KEPT) reads.delete(reads.keys().next().value!);
    },
    find(history, file, range) {
      if (!history || reads.size === 0) return undefined;
      const mtimeMs = file.info.mtime?.getTime();
      for (let i = history.length - 1; i >= 0; i--) {
        const message = history[i];
        if (message.role !== "tool" || message.name !== toolName || message.isError) continue;
        // A result left out, cut short or changed on its way to the model is none of these.
        const shown = reads.get(`${message.toolCallId}\n${_outputDigest(message)}`);
        if (!shown || shown.path !== file.path) continue;
        // The file changed since a read the model has in view: what it saw is out of date.
        if (shown.size !== file.info.size || shown.mtimeMs !== mtimeMs) return undefined;
        if (shown.digest !== file.digest) return undefined;
        const wanted = range(shown.lines);
        if (!wanted || wanted.from < shown.from || wanted.to > shown.to) continue;
        return { toolCallId: message.toolCallId, shown };
      }
      return undefined;
    },
  };
}

/**
 * The SHA-256 of bytes or of a text (as UTF-8), in base64.
 *
 * @example
 * ```ts
 * import { sha256 } from "./read_seen.ts";
 * if (sha256("abc") !== sha256(new TextEncoder().encode("abc"))) throw new Error("unexpected");
 * ```
 */
export function sha256(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("base64");
}

/**
 * The digests of tool results' contents, each with the content it was taken of: a result is
 * hashed once, and again only if its content was changed in place since (a caller may trim it).
 */
const _digests = new WeakMap<ToolMessage, { content: string; digest: string }>();

function _outputDigest(message: ToolMessage): string {
  const known = _digests.get(message);
  if (known?.content === message.content) return known.digest;
  const digest = sha256(message.content);
  _digests.set(message, { content: message.content, digest });
  return digest;
}
