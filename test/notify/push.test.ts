import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { hostId, probeProcess } from "../../src/host/proc.ts";
import { deliverOnce } from "../../src/notify/deliver.ts";
import { MAX_ATTEMPTS } from "../../src/notify/engine.ts";
import { pushTerminal } from "../../src/notify/push.ts";
import { TransitionRejectedError } from "../../src/ledger/transition.ts";
import { legRow } from "../helpers/sweep-fixtures.ts";
import { untilGone } from "../helpers/until.ts";
import { complete, FAIL, HANG, HOST, legRegistration, notifyWorld, RECORD, recorded, runningSession, standing } from "./helpers.ts";

const opts = { hostId: HOST };

describe("push", () => {
  test("a terminal transition fires each matching handler exactly once", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1", "leg-1");
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-1", argv: [RECORD, w.out("leg"), "{status}", "{previous_status}", "{id}"] });
    await standing(ledger, "sessions", [RECORD, w.out("sessions"), "{kind}"], { kinds: ["session"] });
    await standing(ledger, "invocations", [RECORD, w.out("invocations")], { kinds: ["invocation"] });
    await standing(ledger, "elsewhere", [RECORD, w.out("elsewhere")], { host: "another-host" });

    const outcome = await ledger.transition("session", "s1", complete());
    if (outcome.result !== "applied") throw new Error("not applied");
    const event = outcome.transition;
    const summary = await pushTerminal(ledger, event, opts);

    expect(summary.delivered).toBe(2);
    expect(recorded(w.out("leg"))).toEqual([`${event.transitionId} completed session s1 completed running s1`]);
    expect(recorded(w.out("sessions"))).toEqual([`${event.transitionId} completed session s1 session`]);
    expect(recorded(w.out("invocations"))).toEqual([]);
    expect(recorded(w.out("elsewhere"))).toEqual([]);

    // Pushing again, or a delivery pass, never runs an acknowledged handler a second time.
    expect((await pushTerminal(ledger, event, opts)).outcomes).toEqual([]);
    expect((await deliverOnce(ledger, opts)).outcomes).toEqual([]);
    expect(recorded(w.out("leg"))).toHaveLength(1);
    expect(recorded(w.out("sessions"))).toHaveLength(1);
    const states = await w.sql("SELECT consumer, state, attempts FROM terminal_deliveries ORDER BY consumer");
    expect(states).toEqual([
      { consumer: "cb:reg-leg-1-test-host", state: "acked", attempts: 1 },
      { consumer: "handler:sessions", state: "acked", attempts: 1 },
    ]);
  });

  test("the handler reads the v1 envelope on stdin and gets the LI_* environment", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await ledger.createEntity("invocation", { id: "inv-1" });
    await standing(ledger, "all", [RECORD, w.out("all")]);
    const outcome = await ledger.transition("invocation", "inv-1", { newStatus: "failed", reasonCode: "run.failed.exit_nonzero" });
    if (outcome.result !== "applied") throw new Error("not applied");
    await pushTerminal(ledger, outcome.transition, opts);
    const envelope = JSON.parse(readFileSync(w.out("all") + ".stdin", "utf8"));
    expect(envelope).toEqual({
      schema: "li.run-terminal",
      schema_version: 1,
      event_id: outcome.transition.transitionId,
      durable: true,
      entity: { kind: "invocation", id: "inv-1" },
      previous_status: "running",
      terminal_status: "failed",
      reason_code: "run.failed.exit_nonzero",
      occurred_at: w.clock.now(),
      correlation: { invocation_id: "inv-1", session_id: null, schedule_run_id: null, run_id: null, branch_id: null },
      artifacts: [],
      resource_use: null,
    });
    expect(recorded(w.out("all"))).toEqual([`${outcome.transition.transitionId} failed invocation inv-1 `]);
  });

  test("same-status appends, non-terminal moves, guard conflicts and rejections never fire", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1");
    await ledger.createEntity("schedule_run", { id: "r1", status: "queued" });
    await standing(ledger, "all", [RECORD, w.out("all")]);
    const first = await ledger.transition("session", "s1", complete());
    if (first.result !== "applied") throw new Error("not applied");
    await pushTerminal(ledger, first.transition, opts);
    expect(recorded(w.out("all"))).toHaveLength(1);

    const append = await ledger.transition("session", "s1", complete());
    expect(append.result).toBe("applied");
    if (append.result === "applied") expect((await pushTerminal(ledger, append.transition, opts)).outcomes).toEqual([]);

    const move = await ledger.transition("schedule_run", "r1", { newStatus: "running", reasonCode: "schedule.running.started" });
    if (move.result === "applied") expect((await pushTerminal(ledger, move.transition, opts)).outcomes).toEqual([]);

    const conflict = await ledger.transition("session", "s1", { ...complete(), newStatus: "failed", reasonCode: "run.failed.exit_nonzero", expectedStatuses: ["running"] });
    expect(conflict.result).toBe("conflict");

    await expect(ledger.transition("session", "s1", { newStatus: "running", reasonCode: "run.started.ok" })).rejects.toBeInstanceOf(TransitionRejectedError);

    expect((await deliverOnce(ledger, opts)).outcomes).toEqual([]);
    expect(recorded(w.out("all"))).toHaveLength(1);
  });

  test("a repair from one terminal status to another, with override, fires", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1");
    await ledger.transition("session", "s1", complete());
    await standing(ledger, "all", [RECORD, w.out("all"), "{previous_status}->{status}"]);
    const repair = await ledger.transition("session", "s1", {
      newStatus: "failed",
      reasonCode: "run.failed.exit_nonzero",
      override: true,
      overrideActor: "ops",
      overrideJustification: "the build was actually broken",
    });
    if (repair.result !== "applied") throw new Error("not applied");
    expect(repair.transition.terminalEvent).toBe(true);
    const summary = await pushTerminal(ledger, repair.transition, opts);
    expect(summary.delivered).toBe(1);
    expect(recorded(w.out("all"))).toEqual([`${repair.transition.transitionId} failed session s1 completed->failed`]);
  });

  test("failing, hanging and unlaunchable handlers leave the terminal record unchanged and the others still run", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1");
    await standing(ledger, "good", [RECORD, w.out("good")]);
    await standing(ledger, "failing", [FAIL, w.out("failing")]);
    await standing(ledger, "hanging", [HANG, w.out("hang-pids")]);
    await standing(ledger, "missing", [w.out("no-such-program")]);
    const outcome = await ledger.transition("session", "s1", complete());
    if (outcome.result !== "applied") throw new Error("not applied");
    const before = await w.sql("SELECT * FROM sessions");
    const history = await w.sql("SELECT * FROM status_transitions");

    const summary = await pushTerminal(ledger, outcome.transition, { ...opts, budgetMs: 1500, liHome: w.paths.home });

    expect(recorded(w.out("good"))).toHaveLength(1);
    expect(summary.delivered).toBe(1);
    expect(summary.failed).toBe(3);
    const byConsumer = Object.fromEntries(summary.outcomes.map((o) => [o.consumer, o.result]));
    expect(byConsumer["handler:failing"]).toMatchObject({ ok: false, why: "exit", error: "exited 3" });
    expect(byConsumer["handler:hanging"]).toMatchObject({ ok: false, why: "timeout" });
    expect(byConsumer["handler:missing"]).toMatchObject({ ok: false, why: "launch" });

    // The hanging handler and the child it started were killed together: both go (the kernel may still
    // be finishing the orphaned sleeper when the push returns; a zombie counts as gone, pid 1 does not reap).
    const [shellPid, sleeperPid] = readFileSync(w.out("hang-pids"), "utf8").trim().split(" ").map((p) => Number(p));
    await untilGone(shellPid!, "the hanging handler's shell to be gone");
    await untilGone(sleeperPid!, "the hanging handler's background sleeper to be gone");
    expect(probeProcess(shellPid!, null)).toBe("dead");
    expect(probeProcess(sleeperPid!, null)).toBe("dead");

    // Stderr went to an owner-only file under $LI_HOME/notify (no run directory here).
    const stderrFile = `${w.paths.home}/notify/${outcome.transition.transitionId}.handler_failing.stderr`;
    expect(readFileSync(stderrFile, "utf8")).toContain("handler failed on purpose");
    expect(statSync(stderrFile).mode & 0o777).toBe(0o600);

    expect(await w.sql("SELECT * FROM sessions")).toEqual(before);
    expect(await w.sql("SELECT * FROM status_transitions")).toEqual(history);
    const failed = await w.sql("SELECT consumer, state, attempts, next_attempt_at, last_error FROM terminal_deliveries WHERE state <> 'acked' ORDER BY consumer") as {
      consumer: string;
      state: string;
      attempts: number;
      next_attempt_at: number;
      last_error: string;
    }[];
    expect(failed.map((f) => [f.consumer, f.state, f.attempts, f.next_attempt_at])).toEqual([
      ["handler:failing", "retry", 1, w.clock.now() + 1],
      ["handler:hanging", "retry", 1, w.clock.now() + 1],
      ["handler:missing", "retry", 1, w.clock.now() + 1],
    ]);
    // Logs never carry argument values in full.
    expect(failed.every((f) => !f.last_error.includes(w.home))).toBe(true);
  });
});

describe("durable delivery", () => {
  test("a commit whose push never happened is delivered later, and after a success never again", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1", "leg-1");
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-1", argv: [RECORD, w.out("leg")] });
    // The leg died between its commit and its push.
    const outcome = await ledger.transition("session", "s1", complete());
    if (outcome.result !== "applied") throw new Error("not applied");
    expect(recorded(w.out("leg"))).toEqual([]);

    const first = await deliverOnce(ledger, opts);
    expect(first).toMatchObject({ delivered: 1, failed: 0, dead: 0, skipped_claimed: 0 });
    expect(recorded(w.out("leg"))).toHaveLength(1);
    w.clock.advance(3600);
    expect((await deliverOnce(ledger, opts)).outcomes).toEqual([]);
    expect((await pushTerminal(ledger, outcome.transition, opts)).outcomes).toEqual([]);
    expect(recorded(w.out("leg"))).toHaveLength(1);
  });

  test("a failing handler is retried with backoff and is dead after five attempts in all", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1");
    await standing(ledger, "failing", [FAIL, w.out("runs")]);
    const outcome = await ledger.transition("session", "s1", complete());
    if (outcome.result !== "applied") throw new Error("not applied");
    await pushTerminal(ledger, outcome.transition, opts);
    expect(recorded(w.out("runs"))).toHaveLength(1);

    // Not due yet: nothing runs.
    expect((await deliverOnce(ledger, opts)).outcomes).toEqual([]);
    const waits: number[] = [];
    for (let attempt = 2; attempt <= MAX_ATTEMPTS; attempt++) {
      const row = (await w.sql("SELECT next_attempt_at FROM terminal_deliveries"))[0] as { next_attempt_at: number };
      waits.push(row.next_attempt_at - w.clock.now());
      w.clock.set(row.next_attempt_at);
      const pass = await deliverOnce(ledger, opts);
      expect(pass.outcomes).toHaveLength(1);
    }
    expect(waits).toEqual([1, 2, 4, 8]);
    expect(recorded(w.out("runs"))).toHaveLength(MAX_ATTEMPTS);
    expect(await w.sql("SELECT state, attempts FROM terminal_deliveries")).toEqual([{ state: "dead", attempts: MAX_ATTEMPTS }]);
    w.clock.advance(86_400);
    expect((await deliverOnce(ledger, opts)).outcomes).toEqual([]);
    expect(recorded(w.out("runs"))).toHaveLength(MAX_ATTEMPTS);
  });

  test("a live claim is skipped, and a claimer that died is replaced after its claim expires", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1");
    await standing(ledger, "h", [RECORD, w.out("h")]);
    const outcome = await ledger.transition("session", "s1", complete());
    if (outcome.result !== "applied") throw new Error("not applied");
    // Another process claimed it and died before settling.
    const claimed = await ledger.transact(async (tx) => tx.notify.claim(outcome.transition.transitionId, "handler:h", 15));
    expect(claimed).toBe(w.clock.now() + 15);

    // A live claim is not even listed as owed, so it cannot take a place in the pass.
    expect(await deliverOnce(ledger, opts)).toMatchObject({ delivered: 0, failed: 0 });
    expect(recorded(w.out("h"))).toEqual([]);

    await w.sql("UPDATE terminal_deliveries SET claimed_until = ?", w.clock.now() - 1);
    expect(await deliverOnce(ledger, opts)).toMatchObject({ delivered: 1, skipped_claimed: 0 });
    expect(recorded(w.out("h"))).toHaveLength(1);
    expect(await w.sql("SELECT state, attempts FROM terminal_deliveries")).toEqual([{ state: "acked", attempts: 2 }]);
  });

  test("a claim is taken once; only an expired one is taken again, and the old claimer cannot settle the new claim", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1");
    await standing(ledger, "h", [RECORD, w.out("h")]);
    const outcome = await ledger.transition("session", "s1", complete());
    if (outcome.result !== "applied") throw new Error("not applied");
    const id = outcome.transition.transitionId;
    const t = w.clock.now();
    const store = ledger.backend.notify;
    // Leases run on the ledger's clock: the backend reads it, the caller names only the lease.
    await ledger.transact(async (tx) => {
      expect(await tx.notify.claim(id, "handler:h", 15)).toBe(t + 15);
      w.clock.set(t + 14);
      expect(await tx.notify.claim(id, "handler:h", 15)).toBeNull();
      w.clock.set(t + 15);
      expect(await tx.notify.claim(id, "handler:h", 15)).toBe(t + 30);
      w.clock.set(t + 16);
      expect(await tx.notify.settleClaim(id, "handler:h", t + 15, { state: "acked" })).toBe(0);
      expect(await tx.notify.settleClaim(id, "handler:h", t + 30, { state: "acked" })).toBe(1);
      w.clock.set(t + 100);
      expect(await tx.notify.claim(id, "handler:h", 15)).toBeNull();
    });
    expect(await store.getDelivery(id, "handler:h")).toMatchObject({ state: "acked", attempts: 2, claimed_until: null, acked_at: t + 16, updated_at: t + 16 });
  });

  test("a standing handler added today is not owed yesterday's events", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "old");
    await ledger.transition("session", "old", complete());
    w.clock.advance(86_400);
    await standing(ledger, "new", [RECORD, w.out("new")]);
    await runningSession(ledger, "fresh");
    await ledger.transition("session", "fresh", complete());
    await deliverOnce(ledger, opts);
    expect(recorded(w.out("new")).map((line) => line.split(" ")[3])).toEqual(["fresh"]);
  });

  test("a standing handler's --kind and --id filters decide which events it is owed", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await standing(ledger, "one", [RECORD, w.out("one")], { ids: ["s2"] });
    await standing(ledger, "plays", [RECORD, w.out("plays")], { kinds: ["play"] });
    for (const id of ["s1", "s2"]) {
      await runningSession(ledger, id);
      await ledger.transition("session", id, complete());
    }
    await ledger.createEntity("play", { id: "p1" });
    await ledger.transition("play", "p1", { newStatus: "merged", reasonCode: "play.merged.ok" });
    await deliverOnce(ledger, opts);
    expect(recorded(w.out("one")).map((l) => l.split(" ")[3])).toEqual(["s2"]);
    expect(recorded(w.out("plays")).map((l) => l.split(" ")[3])).toEqual(["p1"]);
  });
});

describe("leg registrations", () => {
  test("a registration fires once, for the leg it belongs to, and not again after a resume", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1", "leg-1");
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-1", argv: [RECORD, w.out("leg1")] });
    const first = await ledger.transition("session", "s1", complete());
    if (first.result !== "applied") throw new Error("not applied");
    await pushTerminal(ledger, first.transition, opts);

    // A resume: reopen with the new leg current, register the new leg, finish again.
    await ledger.transition("session", "s1", {
      newStatus: "running",
      reasonCode: "session.reopened.by_resume",
      expectedStatuses: ["completed"],
      extraFields: { current_leg_id: "leg-2", ended_at: null },
      override: true,
      overrideActor: "cli.resume",
      overrideJustification: "resumed",
    });
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-2", argv: [RECORD, w.out("leg2")] });
    const second = await ledger.transition("session", "s1", { newStatus: "failed", reasonCode: "run.failed.exit_nonzero" });
    if (second.result !== "applied") throw new Error("not applied");
    await pushTerminal(ledger, second.transition, opts);
    await deliverOnce(ledger, opts);

    expect(recorded(w.out("leg1"))).toEqual([`${first.transition.transitionId} completed session s1 `]);
    expect(recorded(w.out("leg2"))).toEqual([`${second.transition.transitionId} failed session s1 `]);
  });

  test("two legs on one session: only the current leg's registration fires", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1", "leg-1");
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-1", argv: [RECORD, w.out("leg1")] });
    // A resume racing the live leg: the session stays running, the new leg becomes current.
    await ledger.transition("session", "s1", { newStatus: "running", reasonCode: "run.started.ok", extraFields: { current_leg_id: "leg-2" } });
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-2", argv: [RECORD, w.out("leg2")] });
    const end = await ledger.transition("session", "s1", complete());
    if (end.result !== "applied") throw new Error("not applied");
    await pushTerminal(ledger, end.transition, opts);
    await deliverOnce(ledger, opts);
    expect(recorded(w.out("leg1"))).toEqual([]);
    expect(recorded(w.out("leg2"))).toHaveLength(1);
  });

  test("a notice still owed to an earlier leg survives a resume that made another leg current", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1", "leg-1");
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-1", argv: [RECORD, w.out("leg1")] });
    // The first leg ends, but its push never happens (the process died between commit and push).
    const first = await ledger.transition("session", "s1", complete());
    if (first.result !== "applied") throw new Error("not applied");
    // A resume reopens the session and makes leg-2 current before any deliverer ran.
    await ledger.transition("session", "s1", {
      newStatus: "running",
      reasonCode: "session.reopened.by_resume",
      extraFields: { current_leg_id: "leg-2", ended_at: null },
      override: true,
      overrideActor: "cli.resume",
      overrideJustification: "resumed",
    });
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-2", argv: [RECORD, w.out("leg2")] });
    await deliverOnce(ledger, opts);
    expect(recorded(w.out("leg1"))).toEqual([`${first.transition.transitionId} completed session s1 `]);
    expect(recorded(w.out("leg2"))).toEqual([]);
  });

  test("a notice delivered after a resume describes the leg whose end it was, not the leg now current", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1", "leg-1");
    await insertLeg(ledger, "s1", "leg-1", 1, w.out("runs/r1"));
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-1", argv: [RECORD, w.out("leg1"), "{run_id}", "{artifact_dir}", "exit={exit_code}"] });
    // The first leg fails and dies before its push; a resume makes leg-2 current (clearing the session's
    // exit code) before any deliverer ran.
    const first = await ledger.transition("session", "s1", {
      newStatus: "failed",
      reasonCode: "run.failed.exit_nonzero",
      extraFields: { exit_code: 3 },
      alsoInTransaction: (tx) => void tx.updateLeg("leg-1", { status: "failed", exit_code: 3, ended_at: ledger.now() }),
    });
    if (first.result !== "applied") throw new Error("not applied");
    await insertLeg(ledger, "s1", "leg-2", 2, w.out("runs/r2"));
    await ledger.transition("session", "s1", {
      newStatus: "running",
      reasonCode: "session.reopened.by_resume",
      extraFields: { current_leg_id: "leg-2", ended_at: null, exit_code: null },
      override: true,
      overrideActor: "cli.resume",
      overrideJustification: "resumed",
    });
    await deliverOnce(ledger, opts);
    expect(recorded(w.out("leg1"))).toEqual([`${first.transition.transitionId} failed session s1 r1 ${w.out("runs/r1")}/artifacts exit=3`]);
    const envelope = JSON.parse(readFileSync(w.out("leg1") + ".stdin", "utf8"));
    expect(envelope.correlation.run_id).toBe("r1");
    expect(envelope.artifacts).toEqual([
      { kind: "run_dir", location: w.out("runs/r1") },
      { kind: "artifact_root", location: `${w.out("runs/r1")}/artifacts` },
    ]);
    expect(existsSync(`${w.out("runs/r1")}/notify-cb_reg-leg-1-test-host.stderr`)).toBe(true);
    expect(existsSync(`${w.out("runs/r2")}/notify-cb_reg-leg-1-test-host.stderr`)).toBe(false);
  });

  test("a deferred leg passes its registration to the leg that finalizes", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1", "leg-1");
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-1", argv: [RECORD, w.out("leg1")] });
    const { passLegRegistration } = await import("../../src/notify/register.ts");
    await ledger.transact(async (tx) => {
      expect(await passLegRegistration(tx, "leg-1", "leg-2")).toBe(1);
    });
    await ledger.transition("session", "s1", { newStatus: "running", reasonCode: "run.started.ok", extraFields: { current_leg_id: "leg-2" } });
    const end = await ledger.transition("session", "s1", complete());
    if (end.result !== "applied") throw new Error("not applied");
    await pushTerminal(ledger, end.transition, opts);
    expect(recorded(w.out("leg1"))).toHaveLength(1);
  });

  test("a registration made with hostId() (machine and boot) is run by this machine's push", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    await runningSession(ledger, "s1", "leg-1");
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-1", argv: [RECORD, w.out("leg")], host: hostId() });
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-1", argv: [RECORD, w.out("other")], host: "another-machine:some-boot" });
    const end = await ledger.transition("session", "s1", complete());
    if (end.result !== "applied") throw new Error("not applied");
    await pushTerminal(ledger, end.transition);
    expect(recorded(w.out("leg"))).toHaveLength(1);
    expect(recorded(w.out("other"))).toEqual([]);
  });

  test("a registration's stderr goes to its leg's run directory", async () => {
    const w = notifyWorld();
    const { ledger } = w;
    const stateRoot = w.out("runs/r1");
    await runningSession(ledger, "s1", "leg-1");
    await insertLeg(ledger, "s1", "leg-1", 1, stateRoot);
    await legRegistration(ledger, { sessionId: "s1", legId: "leg-1", argv: [RECORD, w.out("leg"), "{run_id}", "{artifact_dir}"] });
    const end = await ledger.transition("session", "s1", complete());
    if (end.result !== "applied") throw new Error("not applied");
    await pushTerminal(ledger, end.transition, opts);
    expect(recorded(w.out("leg"))).toEqual([`${end.transition.transitionId} completed session s1 r1 ${stateRoot}/artifacts`]);
    const envelope = JSON.parse(readFileSync(w.out("leg") + ".stdin", "utf8"));
    expect(envelope.correlation.run_id).toBe("r1");
    expect(envelope.artifacts).toEqual([
      { kind: "run_dir", location: stateRoot },
      { kind: "artifact_root", location: `${stateRoot}/artifacts` },
    ]);
    const file = `${stateRoot}/notify-cb_reg-leg-1-test-host.stderr`;
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});

/** A leg row with its run directory (its run id the directory's name), as a leg's setup writes it. */
async function insertLeg(ledger: Parameters<typeof runningSession>[0], sessionId: string, legId: string, seq: number, stateRoot: string) {
  const runId = stateRoot.split("/").at(-1)!;
  await ledger.transact(async (tx) => tx.insertLeg(legRow(sessionId, { id: legId, seq, runId, stateRoot, command: [], startedAt: ledger.now() }, seq - 1)));
}
