/**
 * A one-line spinner with the elapsed time, for while the model thinks or tools run.
 *
 * @module
 */

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** A spinner that can be started with a label and stopped. */
export interface Spinner {
  /** Shows the spinner with `label` (or changes the label of a running one). */
  start(label: string): void;
  /** Removes the spinner's line. */
  stop(): void;
  /** Whether it is showing. */
  readonly active: boolean;
}

/**
 * Creates a spinner writing to `write` (it redraws one line with `\r`).
 *
 * @example
 * ```ts
 * import { spinner } from "./spinner.ts";
 * let out = "";
 * const spin = spinner((text) => out += text, { color: false, intervalMs: 5 });
 * spin.start("thinking");
 * await new Promise((resolve) => setTimeout(resolve, 20));
 * spin.stop();
 * if (!out.includes("thinking 0.0s") || spin.active) throw new Error(JSON.stringify(out));
 * ```
 */
export function spinner(
  write: (text: string) => void,
  options: { color: boolean; intervalMs?: number },
): Spinner {
  let timer: ReturnType<typeof setInterval> | undefined;
  let label = "";
  let started = 0;
  let frame = 0;
  const draw = () => {
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const mark = FRAMES[frame++ % FRAMES.length];
    const text = `${mark} ${label} ${seconds}s`;
    write(`\r\x1b[K${options.color ? `\x1b[2m${text}\x1b[0m` : text}`);
  };
  return {
    start(next) {
      label = next;
      if (timer !== undefined) return;
      started = performance.now();
      draw();
      timer = setInterval(draw, options.intervalMs ?? 100);
    },
    stop() {
      if (timer === undefined) return;
      clearInterval(timer);
      timer = undefined;
      write("\r\x1b[K");
    },
    get active() {
      return timer !== undefined;
    },
  };
}
