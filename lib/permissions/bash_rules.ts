/**
 * Permission rules for `bash` calls. A rule's pattern is matched against each simple command of
 * the line ({@link parseCommandLine}), never against the line as a whole:
 *
 * - A command is its words joined by single spaces, after quote removal (`git commit -m a b`
 *   for `git commit -m "a b"`); patterns are read by {@link commandPattern}: `*` matches any
 *   characters, spaces included; `git *` matches `git` and `git status` but not `gitk`; a
 *   pattern without `*` matches that command alone or followed by arguments (`ls` matches
 *   `ls -la`, not `lsof`); `npm run test:*` is the older spelling of `npm run test *`.
 * - DENY and ASK rules apply when ANY command matches, in any of its forms: the command that
 *   runs (`rm x` in `sudo timeout 5 rm x`), each wrapper with its words (`sudo timeout 5 rm x`,
 *   `timeout 5 rm x`), the command with its `NAME=value` words, and each of these with the
 *   command word cut to its basename (`/bin/rm x` → `rm x`). Wrappers are read with their own
 *   option syntax (`taskset -c 0 rm x`, `flock /tmp/l -c 'rm x'`, `chrt -f 1 rm x`).
 * - ALLOW rules apply only when EVERY command is allowed: the command that runs (with the
 *   `NAME=value` words before it, except inert ones: lowercase names, `NODE_ENV`, `CI`, …) must
 *   match an allow rule as written (no basename: `git *` does not allow `./git`), and so must
 *   every wrapper that raises privileges or leaves confinement (`sudo`, `doas`, `su`,
 *   `pkexec`, `runuser`, `setpriv`, `sg`, `chroot`, `nsenter`, `unshare`, `systemd-run`) with
 *   its words. A line with no command (`x=1`) is not decided.
 * - A command whose program is data is never allowed by a pattern: a shell or `source` fed a
 *   here-document or here-string (`bash <<< 'rm x'`, `bash /dev/stdin <<'EOF'`), whose
 *   commands deny and ask rules still see.
 * - What cannot be known from the text (a command name from an expansion or glob, `eval "$x"`,
 *   `bash -c "$x"`, a shell reading a pipe, `bash <(…)`, `source /dev/fd/3`, `BASH_ENV=…` or
 *   a shell's `ENV=…` naming a file it runs first, a wrapper option not known here) is never
 *   allowed by a pattern; when deny or ask rules exist, the call is
 *   asked about (refused where nobody can answer).
 * - A line that cannot be parsed is never allowed by a pattern; deny and ask rules are matched
 *   against its text, whole and cut at every operator with quotes dropped; when none matches
 *   and deny or ask rules exist, the call is asked about.
 * - A rule without a pattern (`bash`) matches every line, parsable or not.
 *
 * @module
 */

import { commandPattern } from "./match.ts";
import type { PermissionRule, RuleDecision } from "./rules.ts";
import { parseCommandLine, type ShellCommand } from "./shell.ts";
import { PRIVILEGED } from "./wrappers.ts";

/**
 * Variables an allow rule may ignore in `NAME=value` before a command: names without capitals
 * (shell variables by custom), and these, which only change output or build targets.
 * Others (`PATH=…`, `LD_PRELOAD=…`, `GIT_PAGER=…`) stay part of the command an allow rule sees.
 */
const _INERT =
  /^([a-z0-9_]+|CI|DEBUG|NODE_ENV|NO_COLOR|FORCE_COLOR|TERM|COLUMNS|LINES|TZ|LANG|LANGUAGE|LC_[A-Z]+|RUST_BACKTRACE|RUST_LOG|PYTHONUNBUFFERED|PYTHONDONTWRITEBYTECODE|GOOS|GOARCH|CGO_ENABLED)=/;

const _VERB = { deny: "denied by", ask: "needs approval per", allow: "allowed by" } as const;

/**
 * Says which rule decided: `--deny "bash(rm *)"` for a flag, `"bash(rm *)" in <file>` otherwise.
 *
 * @example
 * ```ts
 * import { describeRule } from "./bash_rules.ts";
 * const rule = { kind: "deny", tool: "bash", pattern: "rm *", text: "bash(rm *)", source: "--deny" } as const;
 * if (describeRule(rule) !== '--deny "bash(rm *)"') throw new Error("unexpected");
 * ```
 */
export function describeRule(rule: PermissionRule): string {
  return rule.source.startsWith("--")
    ? `${rule.source} "${rule.text}"`
    : `"${rule.text}" in ${rule.source}`;
}

/**
 * Evaluates the rules that concern a `bash` call on its command line, as the module
 * documentation says: deny beats ask beats allow.
 *
 * @example
 * ```ts
 * import { evaluateBash } from "./bash_rules.ts";
 * const rule = { kind: "deny", tool: "bash", pattern: "rm *", text: "bash(rm *)", source: "--deny" } as const;
 * const { decision, reason } = await evaluateBash([rule], "make && rm -rf build");
 * if (decision !== "deny") throw new Error("unexpected");
 * if (reason !== 'denied by --deny "bash(rm *)": "rm -rf build" in "make && rm -rf build"') {
 *   throw new Error(reason);
 * }
 * ```
 */
export async function evaluateBash(
  rules: readonly PermissionRule[],
  line: string,
): Promise<RuleDecision> {
  const commands = await parseCommandLine(line);
  const candidates = commands ? commands.flatMap(_candidates) : _segments(line);
  const within = (command: string) =>
    command === line.trim() ? `"${command}"` : `"${command}" in "${line}"`;
  for (const kind of ["deny", "ask"] as const) {
    for (const rule of rules.filter((rule) => rule.kind === kind)) {
      if (rule.pattern === undefined) {
        return { decision: kind, rule, reason: `${_VERB[kind]} ${describeRule(rule)}` };
      }
      const regex = commandPattern(rule.pattern);
      const hit = candidates.find((candidate) => regex.test(candidate));
      if (hit !== undefined) {
        const note = commands ? "" : " (the line cannot be parsed, so it was matched as text)";
        return {
          decision: kind,
          rule,
          reason: `${_VERB[kind]} ${describeRule(rule)}: ${within(hit)}${note}`,
        };
      }
    }
  }
  // Deny and ask rules that cannot be checked: ask rather than let the line through.
  const unchecked = rules.find((rule) => rule.kind !== "allow");
  const opaque = commands?.find((command) => command.opaque);
  if (unchecked && (!commands || opaque)) {
    const why = opaque ? opaque.opaque : "the command line cannot be parsed";
    return {
      decision: "ask",
      rule: unchecked,
      reason: `${why}, so ${describeRule(unchecked)} cannot be checked: "${line}"`,
    };
  }
  const allows = rules.filter((rule) => rule.kind === "allow");
  const everything = allows.find((rule) => rule.pattern === undefined);
  if (everything) {
    return {
      decision: "allow",
      rule: everything,
      reason: `${_VERB.allow} ${describeRule(everything)}`,
    };
  }
  if (!allows.length) return {};
  if (!commands) {
    return {
      reason: "not allowed: the command line cannot be parsed, so allow rules do not apply",
    };
  }
  return _allow(allows, commands, line);
}

function _allow(
  allows: readonly PermissionRule[],
  commands: ShellCommand[],
  line: string,
): RuleDecision {
  const found: { text: string; rule: PermissionRule }[] = [];
  for (const command of commands) {
    if (command.opaque) return { reason: `not allowed: ${command.opaque}` };
    if (command.fromData) return { reason: `not allowed: ${command.fromData}` };
    const checks = [
      [...command.assignments.filter((assignment) => !_INERT.test(assignment)), ...command.words],
      ...command.wrappers.filter((wrapper) => PRIVILEGED.has(_basename(wrapper[0]))),
    ].map((words) => words.join(" ")).filter((text) => text !== "");
    for (const text of checks) {
      const rule = allows.find((rule) => commandPattern(rule.pattern!).test(text));
      if (!rule) return { reason: `not allowed: "${text}" matches no allow rule` };
      found.push({ text, rule });
    }
  }
  if (!found.length) return {};
  const [{ text, rule }] = found;
  if (found.length === 1) {
    const on = text === line.trim() ? `"${text}"` : `"${text}" in "${line}"`;
    return { decision: "allow", rule, reason: `${_VERB.allow} ${describeRule(rule)}: ${on}` };
  }
  const each = found.map((hit) => `"${hit.text}" by ${describeRule(hit.rule)}`);
  return { decision: "allow", rule, reason: `allowed: ${each.join(", ")}` };
}

const _basename = (word: string): string => word.slice(word.lastIndexOf("/") + 1);

/** The texts deny and ask rules are matched against: every form of the command. */
function _candidates(command: ShellCommand): string[] {
  const forms = [command.words, ...command.wrappers];
  const texts = forms.flatMap((words) => {
    if (!words.length) return [];
    const base = _basename(words[0]);
    const plain = words.join(" ");
    return base === words[0] ? [plain] : [plain, [base, ...words.slice(1)].join(" ")];
  });
  if (command.assignments.length) {
    texts.push([...command.assignments, ...command.words].join(" "));
  }
  return texts;
}

/** An unparsable line, cut at every operator and stripped of quotes, for deny and ask rules. */
function _segments(line: string): string[] {
  const pieces = line.split(/\$\(|[<>]\(|[;&|\n(){}`]/).map((piece) =>
    piece.replace(/['"\\]/g, "").trim().replace(/\s+/g, " ")
      .replace(/^((if|then|else|elif|do|while|until|time|!)\s+|[A-Za-z_][A-Za-z0-9_]*=\S*\s+)+/, "")
  );
  const texts = [line.trim(), ...pieces].filter((text) => text !== "");
  return texts.flatMap((text) => {
    const [first, ...rest] = text.split(" ");
    const base = _basename(first);
    return base === first ? [text] : [text, [base, ...rest].join(" ")];
  });
}
