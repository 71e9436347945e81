// Where `li ui` listens and who may ask: loopback by default; any other address only with a token.
import { UsageError } from "../../util/errors.ts";

export const DEFAULT_LISTEN = "127.0.0.1:7377";

export interface ListenAddress {
  hostname: string;
  port: number;
  loopback: boolean;
}

/** `HOST:PORT` (an IPv6 host in brackets: `[::1]:7377`); port 0 picks a free one. */
export function parseListen(text: string): ListenAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) throw new UsageError(`--listen: ${JSON.stringify(text)} is not HOST:PORT (e.g. 127.0.0.1:7377, [::1]:7377)`);
  const hostname = (m[1] ?? m[2])!;
  return { hostname, port, loopback: isLoopback(hostname) };
}

export function isLoopback(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** The token another address needs (`--token`, else LI_UI_TOKEN); refused without one. */
export function requiredToken(address: ListenAddress, flag: string | undefined, env: Readonly<Record<string, string | undefined>>): string | null {
  const token = flag ?? (env.LI_UI_TOKEN || undefined);
  if (token !== undefined && token.length < 16) throw new UsageError("--token: at least 16 characters (e.g. openssl rand -hex 16)");
  if (!address.loopback && token === undefined) {
    throw new UsageError(`--listen ${address.hostname}: not a loopback address; anyone who reaches it could read the ledger, so it needs --token (or LI_UI_TOKEN)`);
  }
  return token ?? null;
}
