// Connection options of a PostgreSQL ledger (SPEC §14): the URL beats the PG* variables, which beat
// the defaults, as in libpq; a bad URL is refused with one line that names the culprit but never the URL.

import { describe, expect, test } from "bun:test";
import { clientOptions, DEFAULT_LIMITS, IDLE_IN_TRANSACTION_FLOOR_MS, sessionLimits, STATEMENT_TIMEOUT_ENV } from "../../../src/ledger/postgres/client.ts";
import { DEFAULT_CONNECT_TIMEOUT_SECONDS, resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { describeLocation } from "../../../src/ledger/location.ts";
import { LedgerUnavailableError } from "../../../src/util/errors.ts";

const refusal = (url: string, env: Record<string, string> = {}): LedgerUnavailableError => {
  try {
    resolvePgTarget(url, env);
  } catch (error) {
    expect(error).toBeInstanceOf(LedgerUnavailableError);
    return error as LedgerUnavailableError;
  }
  throw new Error(`expected ${url} to be refused`);
};

describe("resolving a PostgreSQL target", () => {
  test("every field of the URL, percent-decoded", () => {
    const t = resolvePgTarget("postgresql://ops%40fleet:p%2Fw@db.internal:6543/led%20ger?sslmode=verify-full&application_name=ci", {});
    expect(t).toMatchObject({ host: "db.internal", port: 6543, user: "ops@fleet", password: "p/w", database: "led ger", sslmode: "verify-full", applicationName: "ci", schema: "li" });
  });

  test("PG* variables fill in what the URL leaves out, and lose to what it says", () => {
    const env = { PGHOST: "envhost", PGPORT: "7000", PGUSER: "envuser", PGPASSWORD: "envpw", PGDATABASE: "envdb", PGSSLMODE: "require", PGCONNECT_TIMEOUT: "3", PGAPPNAME: "envapp" };
    expect(resolvePgTarget("postgres://", env)).toMatchObject({ host: "envhost", port: 7000, user: "envuser", password: "envpw", database: "envdb", sslmode: "require", connectTimeoutSeconds: 3, applicationName: "envapp" });
    expect(resolvePgTarget("postgres://u:pw@h:1/db?sslmode=disable", env)).toMatchObject({ host: "h", port: 1, user: "u", password: "pw", database: "db", sslmode: "disable" });
  });

  test("query parameters as libpq names them beat the URL's own parts", () => {
    const t = resolvePgTarget("postgres://u@h/db?host=/run/pg&port=5433&user=v&password=q&dbname=other", {});
    expect(t).toMatchObject({ host: "/run/pg", port: 5433, user: "v", password: "q", database: "other" });
  });

  test("defaults: localhost:5432, sslmode prefer (libpq's), a connect timeout, the database named after the user", () => {
    const t = resolvePgTarget("postgres://", { USER: "builder" });
    expect(t).toMatchObject({ host: "localhost", port: 5432, user: "builder", password: undefined, database: "builder", sslmode: "prefer", connectTimeoutSeconds: DEFAULT_CONNECT_TIMEOUT_SECONDS, schema: "li" });
  });

  test("the schema: the URL's search_path, else LI_PG_SCHEMA, else li", () => {
    expect(resolvePgTarget("postgres://h/db", { LI_PG_SCHEMA: "fleet" }).schema).toBe("fleet");
    expect(resolvePgTarget("postgres://h/db?search_path=ledger,public", { LI_PG_SCHEMA: "fleet" }).schema).toBe("ledger");
    expect(resolvePgTarget("postgres://h/db?options=-c%20search_path%3Dviaopts", {}).schema).toBe("viaopts");
    expect(resolvePgTarget("postgres://h/db", {}).schema).toBe("li");
  });

  test("libpq's host forms that are no WHATWG host: a percent-encoded socket directory, no host after a user", () => {
    expect(resolvePgTarget("postgres://u:pw@%2Frun%2Fpostgresql:5433/db", {})).toMatchObject({ host: "/run/postgresql", port: 5433, user: "u", password: "pw", database: "db" });
    expect(resolvePgTarget("postgresql://u@/db?host=/tmp", {})).toMatchObject({ host: "/tmp", user: "u", database: "db" });
    expect(resolvePgTarget("postgres://u@:6000/db", { PGHOST: "envhost" })).toMatchObject({ host: "envhost", port: 6000 });
  });

  test("IPv6 hosts lose their brackets", () => {
    expect(resolvePgTarget("postgres://[::1]:5432/db", {}).host).toBe("::1");
  });

  test.each([
    ["postgres://h/db?sslmode=sometimes", "ledger postgres://h:5432/db: sslmode 'sometimes' is not one of disable, allow, prefer, require, verify-ca, verify-full"],
    ["postgres://h/db?port=99999", "ledger postgres://h:99999/db: port '99999' is not a port number (1-65535)"],
    ["postgres://u:secret@h:99999/db", "ledger postgres://(unparseable URL): the URL cannot be parsed"],
    ["postgres://h/db?connect_timeout=soon", "ledger postgres://h:5432/db: connect_timeout 'soon' is not a whole number of seconds (at least 1)"],
    ["postgres://h/db?target_session_attrs=any", "ledger postgres://h:5432/db: unknown URL parameter 'target_session_attrs'"],
    ["postgres://h1,h2/db", "ledger postgres://h1,h2:5432/db: several hosts in one URL are not supported; name one server"],
    ["postgres://h/db?search_path=Mixed", "ledger postgres://h:5432/db: schema 'Mixed' (from the URL's search_path) must be a lower-case identifier (a-z, 0-9, _) not starting with pg_"],
  ])("%s is refused with one line naming the culprit", (url, message) => {
    const error = refusal(url);
    expect(error.message).toBe(message);
    expect(error.exitCode).toBe(78);
  });

  test("a bad LI_PG_SCHEMA is refused naming the variable", () => {
    expect(refusal("postgres://h/db", { LI_PG_SCHEMA: "pg_toast" }).message).toContain("schema 'pg_toast' (from LI_PG_SCHEMA)");
    expect(refusal("postgres://h/db", { LI_PG_SCHEMA: 'x"; DROP' }).message).toContain("(from LI_PG_SCHEMA) must be a lower-case identifier");
  });
});

describe("the options handed to Bun's client", () => {
  test("every field is explicit, the schema is on the search_path and the session timeouts are set", () => {
    const options = clientOptions(resolvePgTarget("postgres://u:pw@h:6000/db?sslmode=require&options=-c%20geqo%3Doff", { LI_PG_SCHEMA: "fleet" }));
    expect(options).toMatchObject({
      adapter: "postgres",
      hostname: "h",
      port: 6000,
      username: "u",
      password: "pw",
      database: "db",
      tls: "require",
      connectionTimeout: DEFAULT_CONNECT_TIMEOUT_SECONDS,
      connection: {
        search_path: '"fleet"',
        statement_timeout: String(DEFAULT_LIMITS.statementTimeoutMs),
        lock_timeout: String(DEFAULT_LIMITS.lockTimeoutMs),
        idle_in_transaction_session_timeout: String(DEFAULT_LIMITS.lockTimeoutMs),
        tcp_keepalives_idle: "60",
        tcp_keepalives_interval: "10",
        tcp_keepalives_count: "6",
        tcp_user_timeout: "120000",
        application_name: "li",
        options: "-c geqo=off",
      },
    });
  });

  test("the idle-in-transaction limit is the lock timeout, never below its floor, and follows the limits it is given", () => {
    const target = resolvePgTarget("postgres://u@h/db", {});
    const sent = (limits = sessionLimits({})) => clientOptions(target, { limits }).connection as Record<string, string>;
    expect(sessionLimits({})).toEqual({ statementTimeoutMs: 60_000, lockTimeoutMs: 15_000, idleInTransactionMs: 15_000 });
    // A shortened statement timeout shortens the lock timeout, and the idle limit with it down to the floor.
    expect(sessionLimits({ [STATEMENT_TIMEOUT_ENV]: "8000" })).toEqual({ statementTimeoutMs: 8000, lockTimeoutMs: 8000, idleInTransactionMs: 8000 });
    expect(sessionLimits({ [STATEMENT_TIMEOUT_ENV]: "500" })).toEqual({ statementTimeoutMs: 500, lockTimeoutMs: 500, idleInTransactionMs: IDLE_IN_TRANSACTION_FLOOR_MS });
    expect(sessionLimits({ [STATEMENT_TIMEOUT_ENV]: "120000" })).toEqual({ statementTimeoutMs: 120_000, lockTimeoutMs: 15_000, idleInTransactionMs: 15_000 });
    expect(sent(sessionLimits({ [STATEMENT_TIMEOUT_ENV]: "8000" })).idle_in_transaction_session_timeout).toBe("8000");
    expect(sent({ ...DEFAULT_LIMITS, idleInTransactionMs: 0 }).idle_in_transaction_session_timeout).toBe("0");
  });

  test("a socket directory becomes Bun's path; no password means an empty one (never Bun's DATABASE_URL's)", () => {
    const options = clientOptions(resolvePgTarget("postgres://u@%2Frun%2Fpostgresql/db", {}));
    expect(options).toMatchObject({ path: "/run/postgresql", password: "" });
  });
});

describe("naming a PostgreSQL ledger", () => {
  test("host, port and database only: never the user, the password or the query string", () => {
    expect(describeLocation({ kind: "postgres", url: "postgres://ops:hunter2@db:6000/ledger?sslmode=require&password=hunter3" })).toBe("postgres://db:6000/ledger");
    expect(describeLocation({ kind: "postgres", url: "postgresql://[::1]/x" })).toBe("postgres://[::1]:5432/x");
    expect(describeLocation({ kind: "postgres", url: "postgres://u:%20p@h:notaport/db" })).toBe("postgres://(unparseable URL)");
  });

  test("a password pasted into another field is masked there too", () => {
    expect(describeLocation({ kind: "postgres", url: "postgres://u:hunter2@h/hunter2" })).toBe("postgres://h:5432/***");
  });
});
