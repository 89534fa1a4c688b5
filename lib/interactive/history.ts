/**
 * The input history of interactive sessions, kept across runs in the user's data directory.
 *
 * @module
 */

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
 * gives an empty history; failures to save are ignored, history is a convenience.
 *
 * @example
 * ```ts
 * import { inputHistory } from "./history.ts";
 * const path = `${await Deno.makeTempDir()}/history`;
 * inputHistory(path).remember("first\nsecond line");
 * if (inputHistory(path).lines[0] !== "first\nsecond line") throw new Error("unexpected");
 * ```
 */
export function inputHistory(path: string): InputHistory {
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
  return {
    lines,
    remember(line) {
      if (lines.at(-1) === line) return;
      lines.push(line);
      try {
        Deno.writeTextFileSync(path, `${JSON.stringify(line)}\n`, { append: true, mode: 0o600 });
      } catch {
        // Not writable here: the history lives for this session only.
      }
    },
  };
}
