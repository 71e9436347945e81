// A stand-in for a leg's supervising li: on SIGTERM it finalizes its own session the way §8.1 says
// (cancelled; run.cancelled.manual_kill when li kill recorded a request on its leg), then exits 143.
import { openLedger } from "../../../src/ledger/open.ts";
import { pathsForHome } from "../../helpers/backends.ts";

const [liHome, sessionId, legId] = process.argv.slice(2) as [string, string, string];
const ledger = openLedger(pathsForHome(liHome), { create: false });

process.on("SIGTERM", async () => {
  const leg = await ledger.backend.getLeg(legId);
  const reasonCode = leg?.kill_requested_at != null ? "run.cancelled.manual_kill" : "run.cancelled.sigterm";
  await ledger.transition("session", sessionId, {
    newStatus: "cancelled",
    reasonCode,
    source: "agent",
    expectedStatuses: ["running"],
    extraFields: { ended_at: ledger.now() },
    alsoInTransaction: async (tx) => void (await tx.updateLeg(legId, { status: "cancelled", reason_code: reasonCode, ended_at: ledger.now() }, { onlyOpen: true })),
  });
  ledger.close();
  process.exit(143);
});
process.stdout.write("ready\n");
setInterval(() => {}, 1 << 30);
