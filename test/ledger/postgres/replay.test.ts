// §17's replay on PostgreSQL: spooled whole legs (session, branch, leg, outcome) land through the guarded
// write, each exactly once even when two replayers on two connections pools take the same spool at once
// (the entry's advisory lock serializes them; the second finds its id recorded and applies nothing).

import { afterAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { openLedger } from "../../../src/ledger/open.ts";
import { resolvePaths } from "../../../src/ledger/location.ts";
import type { Ledger } from "../../../src/ledger/ledger.ts";
import { replaySpool } from "../../../src/spool/replay.ts";
import { tempDir } from "../../helpers/ledger.ts";
import { describePostgres, usePostgresDatabase } from "../../helpers/postgres.ts";
import { spoolWholeLegs } from "../../spool/entries.ts";
import { until } from "../../helpers/until.ts";
import { ledgerRowsOnPostgres } from "../../helpers/ledger-rows.ts";
import { expectInvariants } from "../../legs/late-fixtures.ts";

describePostgres("replaying the spool into a PostgreSQL ledger (§17)", () => {
  const db = usePostgresDatabase();
  const opened: Ledger[] = [];
  afterAll(() => opened.forEach((l) => l.close()));

  test("two replayers of one spool at once (one of them between an entry's commit and its unlink): every entry applies once — one session, one terminal transition, one spool_replays row each", async () => {
    // The schema travels in the URL: openLedger resolves LI_PG_SCHEMA from the process environment, not from env.
    const env = { LI_HOME: tempDir(), LI_DB: `${db.url}&search_path=replay` };
    const first = openLedger(resolvePaths({ env }), { create: true });
    const second = openLedger(resolvePaths({ env }), { create: true });
    opened.push(first, second);
    const spoolDir = join(tempDir(), "spool");
    const ids = spoolWholeLegs(spoolDir, 0, 40);

    // The first replayer stops right after committing the oldest entry, before removing its file; the
    // second starts then, so both take that entry: the proof that they overlapped is its "already".
    const oldest = readdirSync(spoolDir).sort()[0]!.slice(0, -5);
    const secondSaw = new Set<string>();
    let paused = false;
    const running = replaySpool(first, {
      spoolDir,
      hooks: {
        afterCommit: async (entryId) => {
          if (entryId !== oldest) return;
          paused = true;
          await until("the second replayer to meet the oldest entry", () => secondSaw.has(oldest));
        },
      },
    });
    await until("the first replayer to commit the oldest entry", () => paused);
    const b = await replaySpool(second, { spoolDir, hooks: { afterCommit: (entryId) => void secondSaw.add(entryId) } });
    const a = await running;
    expect(b.actions.find((x) => x.entry_id === oldest)?.result).toBe("already");

    expect(a.error).toBeNull();
    expect(b.error).toBeNull();
    expect(a.replayed + b.replayed).toBe(ids.length);
    expect(readdirSync(spoolDir)).toEqual([]);
    for (const id of ids) {
      const history = await first.backend.listTransitions("session", id);
      expect(history.map((t) => [t.previous_status, t.status, t.actor])).toEqual([
        [null, "running", "li agent"],
        ["running", "completed", "li.replay"],
      ]);
      expect((await first.backend.getEntity("session", id))?.status).toBe("completed");
      expect((await first.backend.listLegs(id)).map((l) => [l.status, l.exit_code])).toEqual([["completed", 0]]);
    }
    // Each entry's id once, whoever applied it.
    const replays = await first.backend.transaction(async (tx) => {
      let n = 0;
      for (const entry of [...a.actions, ...b.actions]) if (await tx.spoolReplayed(entry.entry_id)) n++;
      return n;
    });
    expect(replays).toBe([...a.actions, ...b.actions].length);
    expect([...a.actions, ...b.actions].filter((x) => x.result === "applied")).toHaveLength(ids.length);
    const rows = ledgerRowsOnPostgres(db.url, "replay");
    try {
      await expectInvariants(rows);
    } finally {
      await rows.close();
    }
  });
});
