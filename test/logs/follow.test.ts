// `li logs -f`'s follow loop (src/logs/follow.ts) through its module API: a ledger that stops answering
// while the session runs is followed through (said once), and the end is seen when it answers again.

import { afterEach, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { LegRow } from "../../src/ledger/rows.ts";
import { pollingOnly } from "../../src/ledger/wake.ts";
import { followSession } from "../../src/logs/follow.ts";
import { LedgerUnavailableError } from "../../src/util/errors.ts";
import { failingWhile } from "../helpers/failing-reads.ts";
import { tempDir, tempLedger, type TempLedger } from "../helpers/ledger.ts";
import { until } from "../helpers/until.ts";
import { finishSession, seedSession } from "../wait/seed.ts";

const open: TempLedger[] = [];
afterEach(() => {
  for (const t of open.splice(0)) t.ledger.close();
});

test("a ledger that stops answering is followed through: said once, and the session's end is seen once it answers", async () => {
  const t = tempLedger();
  open.push(t);
  const stateRoot = tempDir("li-follow-");
  mkdirSync(join(stateRoot, "stream"));
  const s = await seedSession(t.ledger, { legs: [{}] });
  const leg = (await t.ledger.backend.listLegs(s.id))[0]!;
  const branches = [{ id: s.branchId, session_id: s.id, name: null, metadata: null, created_at: 0, updated_at: 0 }];
  let down = true;
  const { reads, failures } = failingWhile(t.ledger.backend.reads, () => down, new LedgerUnavailableError("postgres://db:5432/li", "connection refused", { unreachable: true }));
  const problems: string[] = [];
  const following = followSession({
    reads,
    sessionId: s.id,
    branches,
    leg: { ...leg, state_root: stateRoot } as LegRow,
    reader: null,
    sink: () => {},
    onLeg: () => {},
    onProblem: (m) => problems.push(m),
    armLedger: pollingOnly,
    armFiles: () => pollingOnly(),
    intervalMs: 5,
    signal: new AbortController().signal,
  });
  await until("several failed looks", () => failures() >= 3);
  await finishSession(t.ledger, s.id, "completed", "run.completed.ok", 0);
  down = false;
  expect(await following).toBe("done");
  expect(problems).toEqual(["ledger postgres://db:5432/li: connection refused; still following (looking again when it answers)"]);
});
