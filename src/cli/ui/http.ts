// The rules every response of `li ui` follows: read-only, a strict Content-Security-Policy, no caching,
// and the token (when one is set) on every request.
import { createHash, timingSafeEqual } from "node:crypto";

/** Nothing but the page's own scripts, styles and endpoints; no inline code, no frames, no forms. */
export const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const TOKEN_COOKIE = "li_ui_token";

export function securityHeaders(contentType: string): Record<string, string> {
  return {
    "content-type": contentType,
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "x-frame-options": "DENY",
  };
}

export function respond(body: string | ReadableStream<Uint8Array> | null, status: number, contentType: string, extra: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { ...securityHeaders(contentType), ...extra } });
}

export function json(value: unknown, status = 200): Response {
  return respond(JSON.stringify(value), status, "application/json; charset=utf-8");
}

export function problem(status: number, message: string, extra: Record<string, string> = {}): Response {
  return respond(JSON.stringify({ error: message }), status, "application/json; charset=utf-8", extra);
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/** The token a request carries: `Authorization: Bearer`, the page's cookie, or `?token=` (the first visit's link). */
export function presentedToken(request: Request, url: URL): string | null {
  const auth = request.headers.get("authorization");
  if (auth?.startsWith("Bearer ")) return auth.slice(7).trim();
  const cookie = request.headers.get("cookie") ?? "";
  for (const part of cookie.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === TOKEN_COOKIE) return decodeURIComponent(rest.join("="));
  }
  return url.searchParams.get("token");
}

export function tokenMatches(presented: string | null, token: string): boolean {
  return presented !== null && timingSafeEqual(digest(presented), digest(token));
}

/** Without a token only loopback names may be in Host: a web page elsewhere cannot rebind its name to us. */
export function loopbackHost(request: Request): boolean {
  const host = (request.headers.get("host") ?? "").toLowerCase().replace(/:\d+$/, "");
  return host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
