/**
 * Who may use the service: whoever sends its token as a bearer token, and nobody else. Being on
 * the same machine is not enough (another user's process, a sandboxed command with the network,
 * a web page in the user's browser, a name rebound to 127.0.0.1 all reach loopback): a page or
 * another user cannot know the token, and a browser sends no `Authorization` header across sites
 * without a preflight the service never grants. A service mounted in a server that authenticates
 * every request itself may be built without a token (`token: false`); it then checks nothing.
 *
 * @module
 */

import { timingSafeEqual } from "node:crypto";

/** Why a request is refused, or undefined when it may go on. */
export interface Refusal {
  /** The HTTP status. */
  status: 401 | 403;
  /** A machine-readable reason. */
  code: string;
  /** What happened and what to do. */
  message: string;
}

/**
 * Checks a request against the service's token: it must carry `Authorization: Bearer <token>`.
 * With `false` (the server around the handler authenticates), every request may go on.
 *
 * @example
 * ```ts
 * import { checkAccess } from "./auth.ts";
 * const request = new Request("http://127.0.0.1:8787/v1/runs", {
 *   headers: { authorization: "Bearer s3cret" },
 * });
 * if (checkAccess(request, "s3cret") !== undefined) throw new Error("unexpected");
 * if (checkAccess(request, "other")?.status !== 401) throw new Error("unexpected");
 * if (checkAccess(new Request("http://127.0.0.1/v1/runs"), false) !== undefined) throw new Error();
 * ```
 */
export function checkAccess(request: Request, token: string | false): Refusal | undefined {
  if (token === false) return undefined;
  const given = /^Bearer\s+(.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
  if (_same(given.trim(), token)) return undefined;
  return {
    status: 401,
    code: "unauthorized",
    message: given
      ? "The bearer token is wrong: send the service's token as Authorization: Bearer <token>"
      : "This service needs its token: send Authorization: Bearer <token>",
  };
}

/**
 * A new token for a service: 32 random bytes, base64url (43 characters).
 *
 * @example
 * ```ts
 * import { newServiceToken } from "./auth.ts";
 * const token = newServiceToken();
 * if (!/^[A-Za-z0-9_-]{43}$/.test(token) || token === newServiceToken()) throw new Error(token);
 * ```
 */
export function newServiceToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
    .replace(/=+$/, "");
}

/**
 * Whether a host name or address is the loopback interface.
 *
 * @example
 * ```ts
 * import { isLoopback } from "./auth.ts";
 * if (!isLoopback("127.0.0.1") || !isLoopback("[::1]") || !isLoopback("localhost")) throw new Error();
 * if (isLoopback("0.0.0.0") || isLoopback("example.com")) throw new Error("unexpected");
 * ```
 */
export function isLoopback(host: string): boolean {
  const name = host.replace(/^\[|\]$/g, "").toLowerCase();
  return name === "localhost" || name.endsWith(".localhost") || name === "::1" ||
    /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

function _same(given: string, token: string): boolean {
  const a = new TextEncoder().encode(given);
  const b = new TextEncoder().encode(token);
  return a.length === b.length && timingSafeEqual(a, b);
}
