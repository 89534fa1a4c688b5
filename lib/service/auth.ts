/**
 * Who may use the service: with a token, whoever sends it as a bearer token; without one, only
 * clients on the loopback interface, and only through a loopback host name, so that neither
 * another machine nor a web page in the user's browser (DNS rebinding, a cross-site form) can.
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
 * Checks a request against the token (if any) and, without one, that it comes from loopback.
 *
 * @example
 * ```ts
 * import { checkAccess } from "./auth.ts";
 * const request = new Request("http://127.0.0.1:8787/v1/runs", {
 *   headers: { authorization: "Bearer s3cret" },
 * });
 * if (checkAccess(request, undefined, "s3cret") !== undefined) throw new Error("unexpected");
 * if (checkAccess(request, undefined, "other")?.status !== 401) throw new Error("unexpected");
 * ```
 */
export function checkAccess(
  request: Request,
  info: { remoteAddr: Deno.Addr } | undefined,
  token: string | undefined,
): Refusal | undefined {
  if (token !== undefined) {
    const given = /^Bearer\s+(.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
    if (_same(given.trim(), token)) return undefined;
    return {
      status: 401,
      code: "unauthorized",
      message: given
        ? "The bearer token is wrong"
        : "This service needs a bearer token: send Authorization: Bearer <token>",
    };
  }
  const remote = info?.remoteAddr;
  if (remote && remote.transport !== "unix" && !isLoopback((remote as Deno.NetAddr).hostname)) {
    return {
      status: 401,
      code: "token_required",
      message: "This service has no token, so it serves loopback clients only; start it with " +
        "AGENT_SERVE_TOKEN set to serve other hosts",
    };
  }
  const host = new URL(request.url).hostname;
  if (!isLoopback(host)) {
    return {
      status: 403,
      code: "host_not_allowed",
      message: `Host "${host}" is not a loopback name; without a token only those are served`,
    };
  }
  const origin = request.headers.get("origin");
  if (origin !== null && !(URL.canParse(origin) && isLoopback(new URL(origin).hostname))) {
    return {
      status: 403,
      code: "origin_not_allowed",
      message: `Requests from web pages of ${origin} are not served without a token`,
    };
  }
  return undefined;
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
