/**
 * The input history of interactive sessions, kept across runs in the user's data directory.
 *
 * @module
 */

import { dirname } from "node:path";
import { ensurePrivateDir, ensurePrivateFile } from "../../files/private_files.ts";
import { secretRedactor } from "../../session/mod.ts";

const MAX_LINES = 500;

/** Reads and grows a history file. */
export interface InputHistory {
  /** Earlier inputs, oldest first. */
  lines: string[];
  /** Adds an input (not saved twice in a row). */
  remember(line: string): void;
}

/**
 * Opens the history file at `path` (one JSON string per line). A missing or unreadable file
 * gives an empty history; failures to save are ignored, history is a convenience. The file is
 * private to the user (0600, in a folder that is, 0700), and no secret is written to it: the
 * lines are redacted by `options.redact` (default: what has the shape of a key or token) —
 * the session's own history keeps them as typed.
 *
 * @example
 * ```ts
 * import { inputHistory } from "./history.ts";
 * const path = `${await Deno.makeTempDir()}/history`;
 * inputHistory(path).remember("first\nsecond line");
 * if (inputHistory(path).lines[0] !== "first\nsecond line") throw new Error("unexpected");
 * ```
 */
export function inputHistory(
  path: string,
  options: { redact?: (text: string) => string } = {},
): InputHistory {
  const redact = options.redact ?? secretRedactor([]);
  let lines: string[] = [];
  try {
    lines = Deno.readTextFileSync(path).split("\n").filter(Boolean).flatMap((line) => {
      try {
        return [String(JSON.parse(line))];
      } catch {
        return [];
      }
    }).slice(-MAX_LINES);
  } catch {
    // No history yet, or not readable here.
  }
  let checked = false;
  return {
    lines,
    remember(line) {
      if (lines.at(-1) === line) return;
      lines.push(line);
      try {
        if (!checked) {
          // Written by an earlier version, it may be readable by all.
          ensurePrivateDir(dirname(path));
          ensurePrivateFile(path);
          checked = true;
        }
        const saved = JSON.stringify(redact(line));
        Deno.writeTextFileSync(path, `${saved}\n`, { append: true, mode: 0o600 });
      } catch {
        // Not writable here: the history lives for this session only.
      }
    },
  };
}
