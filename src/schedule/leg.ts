// The leg of a leased run (SPEC §19): its setup links the run to the leg's session (or refuses to start a
// leg for a run that is not leased to this host any more), and right after its final write the run follows
// the session's outcome. A kill -9 between the two leaves a running run whose session ended: the watcher
// settles it (settle.ts).

import type { Ledger } from "../ledger/ledger.ts";
import type { AlsoInSetup } from "../legs/setup.ts";
import type { AfterCommit } from "../legs/teardown/state.ts";
import { UsageError } from "../util/errors.ts";
import { settleWaitingRuns } from "./dependencies.ts";
import { settleRun } from "./settle.ts";

export interface ScheduledLegHooks {
  alsoInSetup: AlsoInSetup;
  afterCommit: AfterCommit;
}

/** The hooks that bind a leg to leased run `runId`; `hostId` is the supervisor's (the lease's holder). */
export function scheduledLegHooks(ledger: Ledger, runId: string, hostId: string, log: (line: string) => void): ScheduledLegHooks {
  return {
    alsoInSetup: async (tx, ids) => {
      if ((await tx.schedule.linkSession(runId, ids.sessionId, hostId)) === 0) {
        throw new UsageError(`schedule run ${runId} is not leased to this host any more (killed, or its lease expired); its leg does not start`);
      }
    },
    afterCommit: async () => {
      try {
        const applied = await settleRun(ledger, runId);
        // Runs waiting for this one move at once, not at the watcher's next pass.
        if (applied) await settleWaitingRuns(ledger);
      } catch (error) {
        // The watcher settles a run whose leg ended (runsWithEndedSession): nothing is lost.
        log(`schedule run ${runId}: could not record the leg's outcome on the run yet (${error instanceof Error ? error.message : String(error)}); li watch will`);
      }
    },
  };
}
