// A branch row written by a leg's setup (SPEC §10): a new branch in one statement, an existing one left as it
// is for the setup to point at its new session (a resume whose session was removed). Both backends.

import { expect, test } from "bun:test";
import { tempLedger } from "../helpers/ledger.ts";

test("insertBranchIfAbsent inserts a new branch and says so; one whose id exists is left as it was and it says not", async () => {
  const t = tempLedger();
  const row = { id: "branch-1", session_id: "sess-1", name: null, metadata: null, created_at: 10, updated_at: 10 };
  expect(await t.ledger.transact(async (tx) => tx.insertBranchIfAbsent(row))).toBe(true);
  expect(await t.ledger.transact(async (tx) => tx.insertBranchIfAbsent({ ...row, session_id: "sess-2", created_at: 20, updated_at: 20 }))).toBe(false);
  expect(await t.ledger.backend.getBranch("branch-1")).toMatchObject({ session_id: "sess-1", created_at: 10, updated_at: 10 });
});
