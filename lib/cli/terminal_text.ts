/**
 * Text from outside the program (the model's answers, tool output, saved sessions) made safe to
 * show on a terminal: a control character in it would let that text set the window's title,
 * clear the screen, move the cursor or hide what the program itself draws.
 *
 * @module
 */

// C0 controls but tab and newline, DEL, and C1 controls: ESC (and so every escape sequence),
// BEL, backspace, carriage return, and the 8-bit forms of CSI, OSC and the rest.
// deno-lint-ignore no-control-regex -- control characters are what it finds
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/**
 * `text` without the control characters a terminal acts on: every C0 control except tab and
 * newline, DEL, and every C1 control. What is left is drawn as it reads; an escape sequence
 * loses its ESC and shows as plain characters.
 *
 * @example
 * ```ts
 * import { terminalText } from "./terminal_text.ts";
 * const text = terminalText("\x1b]0;title\x07\x1b[2Jok\r\n\tdone\x9b");
 * if (text !== "]0;title[2Jok\n\tdone") throw new Error(JSON.stringify(text));
 * ```
 */
export function terminalText(text: string): string {
  return text.replace(CONTROLS, "");
}
