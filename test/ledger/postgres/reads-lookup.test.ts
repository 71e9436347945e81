// PgReads' lookup reads its entity's wait state along (src/ledger/postgres/reads.ts): `li wait ID` looks
// its target up and checks it in one round trip instead of two, and the state it takes is never older
// than the call just before — any other read, or a second check, goes to the server again.

import { expect, test } from "bun:test";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { pgTestLedger } from "../../helpers/pg-ledger.ts";
import { closeAfterTest } from "../../helpers/test-handles.ts";
import { PgConnection } from "../../../src/ledger/postgres/connection.ts";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { PgReads } from "../../../src/ledger/postgres/reads.ts";
import { expectInvariants } from "../../legs/late-fixtures.ts";

describePostgres("a lookup that reads its target's wait state along (PostgreSQL)", () => {
  const db = usePostgresDatabase();

  /** A ledger with one running invocation, and PgReads on it counting the round trips it makes. */
  const world = async () => {
    const l = await pgTestLedger(db);
    closeAfterTest(() => l.close());
    const { id } = await l.ledger.createEntity("invocation");
    const conn = new PgConnection(resolvePgTarget(l.url, {}), { create: false });
    closeAfterTest(() => conn.close());
    const counted = { calls: 0 };
    const reads = new PgReads((fn) => {
      counted.calls++;
      return conn.run(fn);
    });
    return { l, id, reads, counted };
  };

  test("exists then waitState of the same target is one round trip; the state is the server's", async () => {
    const { l, id, reads, counted } = await world();

    expect(await reads.exists("invocation", id)).toBe(true);
    expect(await reads.waitState("invocation", id)).toEqual({ status: "running", reason: expect.any(String), artifactDir: null, exitCode: null });
    expect(counted.calls).toBe(1);

    // A second check asks again, and sees what changed meanwhile.
    await l.ledger.updateStatus("invocation", id, { newStatus: "completed", reasonCode: "run.completed.ok", expectedStatuses: ["running"] });
    expect((await reads.waitState("invocation", id))?.status).toBe("completed");
    expect(counted.calls).toBe(2);
    await expectInvariants(l.rows());
  });

  test("any other read between the lookup and the check forgets what the lookup read", async () => {
    const { l, id, reads, counted } = await world();

    expect(await reads.exists("invocation", id)).toBe(true);
    await l.ledger.updateStatus("invocation", id, { newStatus: "failed", reasonCode: "run.failed.exit_nonzero", expectedStatuses: ["running"] });
    expect(await reads.entityRow("invocation", id)).toMatchObject({ status: "failed" });
    expect((await reads.waitState("invocation", id))?.status).toBe("failed");
    expect(counted.calls).toBe(3);

    // Another target's check, and a target that does not exist, go to the server too.
    const other = (await l.ledger.createEntity("invocation")).id;
    expect(await reads.exists("invocation", id)).toBe(true);
    expect((await reads.waitState("invocation", other))?.status).toBe("running");
    expect(await reads.exists("session", "no-such-session")).toBe(false);
    expect(await reads.waitState("session", "no-such-session")).toBeNull();
    expect(counted.calls).toBe(7);
    await expectInvariants(l.rows());
  });
});
