// Connection options of a PostgreSQL ledger (SPEC §14), resolved as libpq does: the URL
// (`postgres://` / `postgresql://`, its query parameters included) beats the standard PG* variables,
// which beat the defaults. li resolves every field itself and hands Bun's client explicit options, so
// Bun's own environment reading (DATABASE_URL, PGDATABASE over the URL) never changes the target.

import { LedgerUnavailableError } from "../../util/errors.ts";
import { passfilePassword } from "./passfile.ts";
import { decoded, pgLedgerName, pgLedgerNameOfUrl, scrubPassword } from "./redact.ts";

export const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] as const;
export type SslMode = (typeof SSL_MODES)[number];

/** Everything li needs to open a session on the server. `password` is never printed (redact.ts). */
export interface PgTarget {
  /** A host name, an IP address, or (starting with `/`) the directory of a unix socket. */
  host: string;
  port: number;
  user: string;
  password: string | undefined;
  database: string;
  sslmode: SslMode;
  /** TLS files (sslrootcert, sslcert, sslkey), paths on this host. */
  sslRootCert: string | undefined;
  sslCert: string | undefined;
  sslKey: string | undefined;
  /** The PostgreSQL schema that holds li's tables. */
  schema: string;
  connectTimeoutSeconds: number;
  applicationName: string;
  /** libpq's `options` (PGOPTIONS or the URL's): server command-line switches, passed on as given. */
  serverOptions: string | undefined;
}

export const DEFAULT_SCHEMA = "li";
/** libpq waits forever by default; a ledger that does not answer should fail a command, not hang it. */
export const DEFAULT_CONNECT_TIMEOUT_SECONDS = 10;

/** Query parameters li understands; any other is refused, as libpq refuses an unknown one. */
const URL_PARAMETERS = [
  "host",
  "port",
  "user",
  "password",
  "dbname",
  "sslmode",
  "sslrootcert",
  "sslcert",
  "sslkey",
  "connect_timeout",
  "application_name",
  "options",
  "search_path",
] as const;

/** scheme, userinfo@, host (up to a port, path, query or fragment), the rest. IPv6 hosts are left to URL. */
const AUTHORITY = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^:/?#[]*)(.*)$/is;

/** A schema name li accepts: a plain lower-case identifier (PostgreSQL folds unquoted names to lower case). */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The first entry of a search_path value (`li`, `"li", public`, `$user, li`…), unquoted. */
function firstSchemaOf(searchPath: string): string {
  const first = searchPath.split(",")[0]?.trim() ?? "";
  return first.replace(/^"(.*)"$/, "$1");
}

/** `-c search_path=X` (or `--search_path=X`) inside libpq's options string, if any. */
function searchPathInOptions(options: string | undefined): string | undefined {
  const match = options?.match(/(?:-c\s*|--)search_path=((?:\\ |[^\s])+)/);
  return match?.[1]?.replace(/\\ /g, " ");
}

/**
 * Resolves a `postgres://` / `postgresql://` URL and the environment into a target. A malformed URL, an
 * unknown parameter or a bad value is a LedgerUnavailableError (78) naming the ledger by host, port and
 * database and the culprit by its parameter name: the URL itself is never echoed.
 */
export function resolvePgTarget(url: string, env: Record<string, string | undefined> = process.env): PgTarget {
  // Set once the password is known: a refusal quotes the value it refuses, and a value may hold the password.
  let password: string | undefined;
  const refuse = (why: string, name = pgLedgerNameOfUrl(url)): never => {
    throw new LedgerUnavailableError(scrubPassword(name, password), scrubPassword(why, password));
  };
  if (!/^postgres(ql)?:\/\//i.test(url)) refuse("not a postgres:// or postgresql:// URL");
  // Two hosts libpq takes are no valid WHATWG host: a percent-encoded socket directory
  // (postgres://u@%2Frun%2Fpostgresql/db) and none after a user (postgres://u@/db?host=…). Take the host
  // out before parsing; a socket directory is then used as the host parameter would be.
  const authority = AUTHORITY.exec(url);
  const hostText = authority?.[3] ?? "";
  const replaceHost = authority !== null && ((hostText === "" && !authority[4]!.startsWith("[")) || /^%2F/i.test(hostText));
  let parsed: URL;
  try {
    parsed = new URL(replaceHost ? `${authority[1]}${authority[2] ?? ""}localhost${authority[4]}` : url);
  } catch {
    return refuse("the URL cannot be parsed");
  }
  const params = parsed.searchParams;
  const param = (key: (typeof URL_PARAMETERS)[number]): string | undefined => params.get(key) || undefined;
  const fromEnv = (key: string): string | undefined => env[key] || undefined;
  password = param("password") ?? (decoded(parsed.password) || undefined) ?? fromEnv("PGPASSWORD");
  for (const key of params.keys()) {
    if (!(URL_PARAMETERS as readonly string[]).includes(key)) refuse(`unknown URL parameter '${key}'`);
  }

  const urlHost = replaceHost ? decoded(hostText) || undefined : decoded(parsed.hostname).replace(/^\[(.*)\]$/, "$1") || undefined;
  const host = param("host") ?? urlHost ?? fromEnv("PGHOST") ?? "localhost";
  if (host.includes(",")) refuse("several hosts in one URL are not supported; name one server");

  const portText = param("port") ?? (parsed.port || undefined) ?? fromEnv("PGPORT") ?? "5432";
  const port = Number(portText);
  if (!/^[0-9]+$/.test(portText) || port < 1 || port > 65535) refuse(`port '${portText}' is not a port number (1-65535)`);

  const user = param("user") ?? (decoded(parsed.username) || undefined) ?? fromEnv("PGUSER") ?? fromEnv("USER") ?? "postgres";
  const database = param("dbname") ?? (decoded(parsed.pathname.replace(/^\//, "")) || undefined) ?? fromEnv("PGDATABASE") ?? user;
  const name = pgLedgerName({ host, port, database });
  // Last, as libpq: the URL's password, PGPASSWORD, then the password file (PGPASSFILE or ~/.pgpass).
  password ??= passfilePassword({ host, port, database, user }, env);

  const sslmode = param("sslmode") ?? fromEnv("PGSSLMODE") ?? "prefer";
  if (!(SSL_MODES as readonly string[]).includes(sslmode)) refuse(`sslmode '${sslmode}' is not one of ${SSL_MODES.join(", ")}`, name);

  const timeoutText = param("connect_timeout") ?? fromEnv("PGCONNECT_TIMEOUT");
  const timeout = timeoutText === undefined ? DEFAULT_CONNECT_TIMEOUT_SECONDS : Number(timeoutText);
  if (timeoutText !== undefined && (!/^[0-9]+$/.test(timeoutText) || timeout < 1)) {
    refuse(`connect_timeout '${timeoutText}' is not a whole number of seconds (at least 1)`, name);
  }

  const serverOptions = param("options") ?? fromEnv("PGOPTIONS");
  const searchPath = param("search_path") ?? searchPathInOptions(param("options"));
  const schema = searchPath !== undefined ? firstSchemaOf(searchPath) : (fromEnv("LI_PG_SCHEMA") ?? DEFAULT_SCHEMA);
  const schemaSource = searchPath !== undefined ? "the URL's search_path" : fromEnv("LI_PG_SCHEMA") !== undefined ? "LI_PG_SCHEMA" : "the default";
  if (!SCHEMA_NAME.test(schema) || schema.startsWith("pg_")) {
    refuse(`schema '${schema}' (from ${schemaSource}) must be a lower-case identifier (a-z, 0-9, _) not starting with pg_`, name);
  }

  return {
    host,
    port,
    user,
    password,
    database,
    sslmode: sslmode as SslMode,
    sslRootCert: param("sslrootcert") ?? fromEnv("PGSSLROOTCERT"),
    sslCert: param("sslcert") ?? fromEnv("PGSSLCERT"),
    sslKey: param("sslkey") ?? fromEnv("PGSSLKEY"),
    schema,
    connectTimeoutSeconds: timeout,
    applicationName: param("application_name") ?? fromEnv("PGAPPNAME") ?? "li",
    serverOptions,
  };
}

/** The name every message uses for this target (redact.ts's rule). */
export function targetName(target: PgTarget): string {
  return pgLedgerName(target);
}
