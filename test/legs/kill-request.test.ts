// A leg learns of a kill request recorded on its row (li kill from another host, SPEC §12.2): on the
// backend's notice, or at a heartbeat's check; reported once; a failing ledger is looked at again later.

import { describe, expect, test } from "bun:test";
import path from "node:path";
import type { Backend } from "../../src/ledger/backend.ts";
import type { LegRow } from "../../src/ledger/rows.ts";
import { watchKillRequest } from "../../src/legs/kill-request.ts";
import { processIdentity } from "../../src/host/proc.ts";
import { allocateRun } from "../../src/legs/rundir.ts";
import { setupNewSession } from "../../src/legs/setup.ts";
import { tempDir, tempLedger } from "../helpers/ledger.ts";

/** Only what the watch uses of a backend: the leg's row and a notice subscription the test fires by hand. */
function fakeBackend(getLeg: () => Promise<Partial<LegRow> | null>) {
  const fake = { notify: null as (() => void) | null, unsubscribed: 0 };
  const backend = {
    getLeg,
    onKillRequest(_legId: string, onRequest: () => void) {
      fake.notify = onRequest;
      return () => void fake.unsubscribed++;
    },
  } as unknown as Backend;
  return { backend, fake };
}

describe("watchKillRequest", () => {
  test("a request recorded on the leg is seen at the next check and reported once", async () => {
    const t = tempLedger();
    const run = allocateRun({ runsRoot: path.join(tempDir(), "runs") });
    await setupNewSession(t.ledger, { sessionId: "s-1", branchId: "b-1", legId: "leg-1", runId: run.runId, run, argv: ["true"], cwd: "/tmp", startedAt: t.ledger.now(), supervisor: processIdentity(), contract: null, invocationId: null, linkedSessionId: null });
    let requests = 0;
    const watch = watchKillRequest(t.ledger.backend, "leg-1", () => requests++);
    await watch.check();
    expect(requests).toBe(0);
    await t.ledger.transact(async (tx) => tx.updateLeg("leg-1", { kill_requested_at: t.ledger.now() }, { onlyOpen: true }));
    await watch.check();
    await watch.check();
    expect(requests).toBe(1);
    watch.stop();
  });

  test("the backend's notice makes it look; stop() unsubscribes", async () => {
    let requested = false;
    const { backend, fake } = fakeBackend(async () => ({ kill_requested_at: requested ? 1_800_000_000 : null }));
    let requests = 0;
    const watch = watchKillRequest(backend, "leg-1", () => requests++);
    expect(fake.notify).not.toBeNull();
    fake.notify!(); // a (re)subscription with nothing recorded yet
    await watch.check();
    expect(requests).toBe(0);
    requested = true;
    fake.notify!();
    await watch.check(); // lets the notice's own check finish too
    expect(requests).toBe(1);
    watch.stop();
    expect(fake.unsubscribed).toBe(1);
  });

  test("after stop() (the command ended) a request is no longer acted on", async () => {
    const { backend, fake } = fakeBackend(async () => ({ kill_requested_at: 1_800_000_000 }));
    let requests = 0;
    const watch = watchKillRequest(backend, "leg-1", () => requests++);
    watch.stop();
    fake.notify!();
    await watch.check();
    expect(requests).toBe(0);
  });

  test("a ledger that cannot be read is looked at again at the next check, never thrown to the leg", async () => {
    let calls = 0;
    const { backend } = fakeBackend(async () => {
      if (++calls === 1) throw new Error("server closed the connection");
      return { kill_requested_at: 1_800_000_000 };
    });
    let requests = 0;
    const watch = watchKillRequest(backend, "leg-1", () => requests++);
    await watch.check();
    expect(requests).toBe(0);
    await watch.check();
    expect(requests).toBe(1);
    watch.stop();
  });
});
