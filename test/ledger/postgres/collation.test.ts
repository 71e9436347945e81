// Ids compare bytewise on PostgreSQL as on SQLite (migration 0004_ids_bytewise), whatever the database's
// own collation: on a database whose default collation is ICU's en-US, where 'Abd-1' sorts between 'ab'
// and 'ab' || U+10FFFF, a prefix still finds only the ids that start with it.

import { afterAll, expect, test } from "bun:test";
import { openLedger } from "../../../src/ledger/open.ts";
import { resolvePaths } from "../../../src/ledger/location.ts";
import type { Ledger } from "../../../src/ledger/ledger.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { asSuperuser, describePostgres, postgresCluster } from "../../helpers/postgres.ts";

describePostgres("ids compare bytewise on PostgreSQL (§3 prefix lookups)", () => {
  const name = `t_icu_${process.pid}`;
  const opened: Ledger[] = [];
  afterAll(async () => {
    for (const l of opened) l.close();
    await asSuperuser((sql) => sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  });

  test("on a database with a linguistic default collation, a prefix finds only the ids it starts", async () => {
    await asSuperuser((sql) => sql.unsafe(`CREATE DATABASE "${name}" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`));
    // The database itself sorts linguistically: the range that means "starts with ab" bytewise does not here.
    const linguistic = await asSuperuser(
      async (sql) => (await sql.unsafe(`SELECT x FROM (VALUES ('abc-1'), ('Abd-1'), ('aB-2')) v(x) WHERE x >= 'ab' AND x < 'ab' || chr(1114111) ORDER BY x`)).map((r: { x: string }) => r.x),
      name,
    );
    expect(linguistic).toEqual(["aB-2", "abc-1", "Abd-1"]);

    const paths = resolvePaths({ env: { LI_HOME: tempDir(), LI_DB: postgresCluster().url(name) } });
    const ledger = openLedger(paths, { create: true });
    opened.push(ledger);
    for (const id of ["abc-1", "Abd-1", "aB-2", "ab"]) await ledger.createEntity("invocation", { id });
    expect(await ledger.backend.findIdsByPrefix("invocation", "ab", 10)).toEqual(["ab", "abc-1"]);
    expect(await ledger.backend.reads.idsWithPrefix("invocation", "A", 10)).toEqual(["Abd-1"]);
    // Neighbours in byte order: "ab" and "abc-1" share two characters; nothing else shares more with "abc-1".
    expect(await ledger.backend.reads.sharedPrefixLength("abc-1")).toBe(2);
    // The same for a page of ids in one statement (li ls, li ui): byte order too, whatever the database's collation.
    expect([...(await ledger.backend.reads.sharedPrefixLengths(["abc-1", "Abd-1", "aB-2", "ab"])).entries()]).toEqual([
      ["abc-1", 2],
      ["Abd-1", 0],
      ["aB-2", 1],
      ["ab", 2],
    ]);

    const collations = await asSuperuser(
      (sql) =>
        sql.unsafe(`SELECT c.table_name || '.' || c.column_name AS col, c.collation_name AS coll FROM information_schema.columns c
                    WHERE c.table_schema = 'li' AND (c.column_name = 'id' AND c.table_name IN ('sessions','invocations','plays','schedule_runs','shows','teams','branches')
                      OR c.table_name = 'legs' AND c.column_name IN ('run_id','state_root','artifact_root')) ORDER BY 1`),
      name,
    );
    expect(collations.map((r: { col: string; coll: string }) => `${r.col}:${r.coll}`)).toEqual([
      "branches.id:C", "invocations.id:C", "legs.artifact_root:C", "legs.run_id:C", "legs.state_root:C",
      "plays.id:C", "schedule_runs.id:C", "sessions.id:C", "shows.id:C", "teams.id:C",
    ]);
  });
});
