// Where a ledger stands against the migrations embedded in this li, read without changing anything, and
// the explicit migration (`li state migrate [--check]`, SPEC §13): the owner's one-time step on
// PostgreSQL, a DBA's check before an upgrade. Every other command migrates on open as it always did.

import { LedgerUnavailableError } from "../util/errors.ts";
import { describeLocation, type Paths } from "./location.ts";

/** absent: nothing created yet; pending: older than this li; newer: written by a newer li (78). */
export type MigrationStateName = "absent" | "current" | "pending" | "newer";

export interface MigrationState {
  /** The ledger as printable text (a PostgreSQL URL without its password). */
  ledger: string;
  state: MigrationStateName;
  /** The schema version the ledger records; null when it does not exist. */
  version: number | null;
  /** The version this li's embedded migrations reach. */
  known: number;
  /** The embedded migrations the ledger lacks, in the order they apply. */
  pending: string[];
}

interface Embedded {
  names: readonly string[];
}

function stateOf(ledger: string, version: number | null, embedded: Embedded): MigrationState {
  const known = embedded.names.length;
  if (version === null) return { ledger, state: "absent", version, known, pending: [...embedded.names] };
  if (version > known) return { ledger, state: "newer", version, known, pending: [] };
  return { ledger, state: version === known ? "current" : "pending", version, known, pending: embedded.names.slice(version) };
}

/** The refusal of a ledger this li must not touch. */
export function newerLedgerError(s: MigrationState): LedgerUnavailableError {
  return new LedgerUnavailableError(s.ledger, `written by a newer li (schema ${s.version}, this li knows ${s.known}); upgrade li`);
}

/** Reads the ledger's version without creating, migrating or locking anything. */
export async function readMigrationState(paths: Paths): Promise<MigrationState> {
  const name = describeLocation(paths.ledger);
  if (paths.ledger.kind === "postgres") {
    const [{ connectPgWith }, { resolvePgTarget }, { readVersion, foreignTables }, { MIGRATIONS }] = await Promise.all([
      import("./postgres/client.ts"),
      import("./postgres/options.ts"),
      import("./postgres/migrate.ts"),
      import("./postgres/migrations.gen.ts"),
    ]);
    const target = resolvePgTarget(paths.ledger.url);
    const { client, first } = await connectPgWith(target, async (sql) => {
      const version = await readVersion(sql, target.schema);
      return { version, strangers: version === null ? await foreignTables(sql, target.schema) : [] };
    }, { max: 1, prepare: false });
    await client.close();
    if (first.strangers.length > 0) {
      throw new LedgerUnavailableError(client.name, `schema ${target.schema} holds tables that are not li's (${first.strangers.slice(0, 3).join(", ")}); choose another with LI_PG_SCHEMA`);
    }
    return stateOf(client.name, first.version, { names: MIGRATIONS.map((m) => m.name) });
  }
  const path = paths.ledger.path;
  const [{ existsSync, statSync }, { Database }, { assertLiLedger, userVersion, tableNames }, { MIGRATIONS }] = await Promise.all([
    import("node:fs"),
    import("bun:sqlite"),
    import("./sqlite/migrate.ts"),
    import("./sqlite/migrations.gen.ts"),
  ]);
  const embedded = { names: MIGRATIONS.map((m) => m.name) };
  if (!existsSync(path)) return stateOf(name, null, embedded);
  if (statSync(path).isDirectory()) throw new LedgerUnavailableError(path, "is a directory, not a database file");
  let db: InstanceType<typeof Database>;
  try {
    db = new Database(path, { readonly: true });
  } catch (error) {
    throw new LedgerUnavailableError(path, `cannot open: ${(error as Error).message}`);
  }
  try {
    const version = userVersion(db);
    assertLiLedger(db, path, version);
    // An empty file (li created it and was stopped before migrating) holds nothing yet: pending from 0.
    return stateOf(name, version === 0 && tableNames(db).length === 0 ? 0 : version, embedded);
  } finally {
    db.close();
  }
}

/** Creates the ledger when missing and applies the pending migrations; returns where it stood before and stands now. */
export async function migrateLedger(paths: Paths): Promise<{ before: MigrationState; after: MigrationState }> {
  const before = await readMigrationState(paths);
  if (before.state === "newer") throw newerLedgerError(before);
  if (before.state !== "current") {
    // The ordinary open migrates (under BEGIN IMMEDIATE on SQLite, the advisory lock on PostgreSQL), so
    // processes opening the ledger meanwhile queue behind this one instead of racing it.
    const { openLedger } = await import("./open.ts");
    const ledger = openLedger(paths, { create: true, connections: 1 });
    try {
      await ledger.ready();
      await ledger.backend.reads.changeCounter();
    } finally {
      ledger.close();
    }
  }
  return { before, after: await readMigrationState(paths) };
}
