// A real second process resuming a session the way §10 does: reopen it if it still exists, else start a new session for the branch.
// Prints "blocked" or "free" (could it take the write lock at once?), then "reopened <id>" or "new_session <id>".
import { Database } from "bun:sqlite";
import { Ledger } from "../../../src/ledger/ledger.ts";
import { SqliteBackend } from "../../../src/ledger/sqlite/backend.ts";
import { openSqlite } from "../../../src/ledger/sqlite/open.ts";
import { applyTransition, validateTransition } from "../../../src/ledger/transition.ts";
import { SESSION_TERMINAL_STATUSES } from "../../../src/lifecycle/policy.ts";
import { legRow } from "../../helpers/sweep-fixtures.ts";

const [dbPath, sessionId, branchId, now] = process.argv.slice(2) as [string, string, string, string];

const probe = new Database(dbPath);
probe.run("PRAGMA busy_timeout = 0");
try {
  probe.run("BEGIN IMMEDIATE");
  probe.run("ROLLBACK");
  process.stdout.write("free\n");
} catch {
  process.stdout.write("blocked\n");
}
probe.close();

const ledger = new Ledger(new SqliteBackend(openSqlite(dbPath, { create: false, busyTimeoutMs: 30000 }), dbPath, { now: () => Number(now) }));
const newLeg = `leg-resumed-${process.pid}`;
const reopen = validateTransition("session", {
  newStatus: "running",
  reasonCode: "session.reopened.by_resume",
  expectedStatuses: [...SESSION_TERMINAL_STATUSES],
  override: true,
  overrideActor: "cli.resume",
  overrideJustification: "resumed by a new leg",
  extraFields: { ended_at: null, exit_code: null, current_leg_id: newLeg },
  alsoInTransaction: async (tx) => tx.insertLeg(legRow(sessionId, { id: newLeg, seq: 99, startedAt: Number(now), pid: process.pid }, 98)),
});
const outcome = await ledger.transact(async (tx, ctx) => {
  if (await tx.getEntity("session", sessionId)) {
    const result = await applyTransition(tx, ctx, reopen, sessionId);
    return result.result === "applied" ? `reopened ${sessionId}` : `lost ${result.result}`;
  }
  // The session is gone: the new-session path for the same branch, never a leg without persistence.
  const fresh = `${sessionId}-new`;
  const prepared = ledger.prepareCreate("session", { id: fresh, fields: { current_leg_id: newLeg } });
  await ledger.insertNew(tx, "session", prepared);
  await tx.insertLeg(legRow(fresh, { id: newLeg, startedAt: Number(now), pid: process.pid }, 0));
  await tx.insertBranch({ id: branchId, session_id: fresh, name: null, metadata: null, created_at: Number(now), updated_at: Number(now) });
  return `new_session ${fresh}`;
});
process.stdout.write(outcome + "\n");
ledger.close();
