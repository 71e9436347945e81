// Helpers for notification tests: handler fixtures, recorded runs, and a ledger with one session.

import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { registerLegCallback } from "../../src/notify/register.ts";
import { addHandler } from "../../src/notify/consumers.ts";
import { fakeClock, sequentialIds, tempLedger, type TempLedger } from "../helpers/ledger.ts";
import type { SqlParam } from "../helpers/ledger-rows.ts";

export const NOTIFY_FIXTURES = resolve(import.meta.dir, "fixtures");
export const RECORD = join(NOTIFY_FIXTURES, "record");
export const HANG = join(NOTIFY_FIXTURES, "hang");
export const FAIL = join(NOTIFY_FIXTURES, "fail");
/** Records each run's start and end (event, label, pid, parent pid): for "no two runs overlapped". */
export const INTERVAL = join(NOTIFY_FIXTURES, "interval");
export const HOST = "test-host";

export interface NotifyWorld extends TempLedger {
  clock: ReturnType<typeof fakeClock>;
  /** A file a handler appends to, under the temp dir. */
  out(name: string): string;
  /** Rows of one query, by hand (test/helpers/ledger-rows.ts). */
  sql(query: string, ...params: SqlParam[]): Promise<unknown[]>;
}

export function notifyWorld(): NotifyWorld {
  const clock = fakeClock();
  const world = tempLedger({ now: clock.now, newId: sequentialIds("id") });
  return {
    ...world,
    clock,
    out: (name) => join(world.home, name),
    sql: (query, ...params) => world.rows().all(query, ...params),
  };
}

/** The lines a `record` handler wrote: "<event> <status> <kind> <id> <args…>". */
export function recorded(file: string): string[] {
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
}

export async function runningSession(ledger: Ledger, id: string, legId: string | null = null) {
  return ledger.createEntity("session", { id, fields: legId ? { current_leg_id: legId } : {} });
}

export async function legRegistration(ledger: Ledger, input: { sessionId: string; legId: string; argv: string[]; host?: string }) {
  return ledger.transact((tx) => registerLegCallback(tx, { id: `reg-${input.legId}-${input.host ?? HOST}`, sessionId: input.sessionId, legId: input.legId, argv: input.argv, origin: "--notify", hostId: input.host ?? HOST, now: ledger.now() }));
}

export async function standing(ledger: Ledger, name: string, argv: string[], filter: { kinds?: string[]; ids?: string[]; host?: string } = {}) {
  return addHandler(ledger, { name, argv, kinds: filter.kinds ?? [], ids: filter.ids ?? [], hostId: filter.host ?? HOST });
}

export const complete = (reason = "run.completed.ok") => ({ newStatus: "completed", reasonCode: reason });
