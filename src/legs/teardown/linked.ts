// Step 5's lookup: the linked session's row, read a bounded number of times (its mirror may lag).

import type { EntityRow } from "../../ledger/rows.ts";
import type { Ledger } from "../../ledger/ledger.ts";

/** The linked row, or null when it is still missing after the retries (3 × 0.1 s by default). */
export async function readLinkedSession(ledger: Ledger, id: string, retry: { attempts: number; intervalMs: number }): Promise<EntityRow | null> {
  for (let attempt = 0; ; attempt++) {
    const row = await ledger.backend.getEntity("session", id);
    if (row || attempt >= retry.attempts) return row;
    await Bun.sleep(retry.intervalMs);
  }
}
