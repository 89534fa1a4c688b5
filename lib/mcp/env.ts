/**
 * Environment variables for MCP configuration: `${VAR}` expansion, and reading only what Deno
 * already grants.
 *
 * @module
 */

/**
 * `Deno.env.get` for the variables Deno already grants, and undefined for the others, so that
 * Deno never asks.
 *
 * @example
 * ```ts
 * import { grantedEnv } from "./env.ts";
 * if (typeof grantedEnv("NO_SUCH_VARIABLE_HERE") !== "undefined") throw new Error("unexpected");
 * ```
 */
export function grantedEnv(name: string): string | undefined {
  if (Deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") {
    return undefined;
  }
  return Deno.env.get(name);
}

/**
 * Expands `${VAR}` and `${VAR:-default}` (the default applies when the variable is unset or
 * empty); `missing` hears of each variable that is unset and has no default.
 */
export function _expand(
  text: string,
  env: (name: string) => string | undefined,
  missing: (name: string) => void,
): string {
  return text.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (_, name: string, fallback: string | undefined) => {
      const value = env(name);
      if (value !== undefined && value !== "") return value;
      if (fallback !== undefined) return fallback;
      if (value === undefined) missing(name);
      return "";
    },
  );
}
