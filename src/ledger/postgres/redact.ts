// The one redaction rule for PostgreSQL ledgers (SPEC §14 "Credentials"): a ledger is named by host,
// port and database only, and any text that came from elsewhere (a driver's message) loses the
// password before li prints it. No imports: the CLI's error path and location.ts load this module.

/** What names a PostgreSQL ledger in li's output. Never the user, the password or the query string. */
export interface PgServerName {
  host: string;
  port: number | string;
  database: string;
}

/** `postgres://HOST:PORT/DATABASE`: how every message, log line and error names a PostgreSQL ledger. */
export function pgLedgerName(server: PgServerName): string {
  const host = server.host.includes(":") && !server.host.startsWith("/") ? `[${server.host}]` : server.host;
  return `postgres://${host}:${server.port}/${server.database}`;
}

/** `text` percent-decoded, or as it is when it is not valid percent-encoding. */
export function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * The name of the ledger a raw URL points at, from the URL alone (no environment): for messages about a
 * URL li has not resolved yet. Unparseable URLs are named as such, never echoed.
 */
export function pgLedgerNameOfUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "postgres://(unparseable URL)";
  }
  const params = parsed.searchParams;
  const host = params.get("host") ?? (decoded(parsed.hostname).replace(/^\[(.*)\]$/, "$1") || "localhost");
  const port = params.get("port") ?? (parsed.port || "5432");
  const database = params.get("dbname") ?? (decoded(parsed.pathname.replace(/^\//, "")) || "(default database)");
  // A password pasted into the wrong field (the host, the database) must not show either.
  const password = params.get("password") || decoded(parsed.password) || undefined;
  return scrubPassword(pgLedgerName({ host, port, database }), password);
}

/**
 * The password a raw URL carries (`:PASSWORD@` or `?password=`), else `PGPASSWORD`: what a message about
 * this ledger must never show, for scrubbing text li did not write itself.
 */
export function pgPasswordOfUrl(url: string, env: Record<string, string | undefined> = process.env): string | undefined {
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    // Unparseable: li refuses it before connecting; only the environment's password can be in play.
  }
  return parsed?.searchParams.get("password") || (parsed ? decoded(parsed.password) : "") || env.PGPASSWORD || undefined;
}

/**
 * `text` with every form of `password` (as given, percent-encoded, percent-decoded) replaced by `***`.
 * For messages li did not write itself; li's own messages never hold the password to begin with.
 */
export function scrubPassword(text: string, password: string | undefined): string {
  if (!password) return text;
  const forms = new Set([password, decoded(password), encodeURIComponent(password)].filter((f) => f.length > 0));
  let out = text;
  for (const form of forms) out = out.split(form).join("***");
  return out;
}
