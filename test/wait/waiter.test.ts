import { afterEach, describe, expect, test } from "bun:test";
import { pollingOnly } from "../../src/ledger/wake.ts";
import { LedgerUnavailableError } from "../../src/util/errors.ts";
import { resolveTargets, waitExitCode, waitForTerminal } from "../../src/wait/waiter.ts";
import type { WaitOutcome } from "../../src/wait/line.ts";
import { failingWhile } from "../helpers/failing-reads.ts";
import { tempLedger, type TempLedger } from "../helpers/ledger.ts";
import { until } from "../helpers/until.ts";
import { seedSession } from "./seed.ts";

const open: TempLedger[] = [];
afterEach(() => {
  for (const t of open.splice(0)) t.ledger.close();
});

const outcome = (success: boolean, status = success ? "completed" : "failed"): WaitOutcome => ({ id: "x", kind: "session", input: "x", status, reason: "unknown", artifactDir: null, exitCode: null, success });

describe("waitExitCode", () => {
  test("3 interrupted or timed out beats 2 beats 1 beats 0", () => {
    const notFound = [{ input: "n", problem: "not_found" as const }];
    expect(waitExitCode("done", [], [outcome(true)])).toBe(0);
    expect(waitExitCode("done", [], [outcome(true), outcome(false)])).toBe(1);
    expect(waitExitCode("done", notFound, [outcome(false)])).toBe(2);
    expect(waitExitCode("done", [], [outcome(false, "unknown")])).toBe(2);
    expect(waitExitCode("timed_out", notFound, [outcome(false)])).toBe(3);
    expect(waitExitCode("interrupted", [], [])).toBe(3);
  });
});

describe("resolveTargets", () => {
  test("a session named twice (by id and by its branch) is waited on once; problems keep their input", async () => {
    const t = tempLedger();
    open.push(t);
    const s = await seedSession(t.ledger);
    const r = await resolveTargets(t.ledger.backend.reads, [s.id, s.branchId, "nothing-here"]);
    expect(r.targets).toEqual([{ kind: "session", id: s.id, input: s.id }]);
    expect(r.problems).toEqual([{ input: "nothing-here", problem: "not_found" }]);
  });
});

describe("waitForTerminal", () => {
  test("an abort ends the wait as interrupted with what finished so far", async () => {
    const t = tempLedger();
    open.push(t);
    const s = await seedSession(t.ledger);
    const stop = new AbortController();
    const seen: WaitOutcome[] = [];
    const pending = waitForTerminal({ reads: t.ledger.backend.reads, targets: [{ kind: "session", id: s.id, input: s.id }], arm: pollingOnly, intervalMs: 60_000, signal: stop.signal, onResult: (o) => seen.push(o) });
    stop.abort();
    expect((await pending).end).toBe("interrupted");
    expect(seen).toEqual([]);
  });

  test("the deadline ends the wait as timed_out (injected clock)", async () => {
    const t = tempLedger();
    open.push(t);
    const s = await seedSession(t.ledger);
    let now = 0;
    const r = await waitForTerminal({
      reads: t.ledger.backend.reads,
      targets: [{ kind: "session", id: s.id, input: s.id }],
      arm: pollingOnly,
      intervalMs: 1,
      timeoutMs: 5,
      clock: () => (now += 2),
      onResult: () => {},
    });
    expect(r.end).toBe("timed_out");
  });

  test("a ledger that stops answering while a target runs is waited for: said once, and the outcome is seen when it answers again", async () => {
    const t = tempLedger();
    open.push(t);
    const s = await seedSession(t.ledger);
    let down = false;
    const { reads, failures } = failingWhile(t.ledger.backend.reads, () => down, new LedgerUnavailableError("postgres://db:5432/li", "connection closed", { unreachable: true }));
    const said: string[] = [];
    const seen: WaitOutcome[] = [];
    const pending = waitForTerminal({ reads, targets: [{ kind: "session", id: s.id, input: s.id }], arm: pollingOnly, intervalMs: 5, onUnreachable: (e) => said.push(e.reason), onResult: (o) => seen.push(o) });
    down = true;
    // Several failed looks, one note.
    await until("several failed looks", () => failures() >= 5);
    await t.ledger.transition("session", s.id, { newStatus: "completed", reasonCode: "run.completed.ok", source: "executor" });
    down = false;
    expect((await pending).end).toBe("done");
    expect(said).toEqual(["connection closed"]);
    expect(seen.map((o) => o.status)).toEqual(["completed"]);
  });

  test("a refusal (not an outage) still ends the wait with its error", async () => {
    const t = tempLedger();
    open.push(t);
    const s = await seedSession(t.ledger);
    let down = false;
    const { reads } = failingWhile(t.ledger.backend.reads, () => down, new LedgerUnavailableError("/x/state.db", "read-only"));
    const pending = waitForTerminal({ reads, targets: [{ kind: "session", id: s.id, input: s.id }], arm: pollingOnly, intervalMs: 5, onResult: () => {} });
    down = true;
    expect(await pending.catch((e: LedgerUnavailableError) => e.reason)).toBe("read-only");
  });
});
