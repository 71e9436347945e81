// A leg's notice (SPEC §9.1, §9.4): its registration in the setup transaction, the push after its final write, or one undurable run.

// The registration module (the argv compiler, the host of a handler) loads only when a notice is possible,
// and the push modules only after the final write.

import { existsSync } from "node:fs";
import path from "node:path";
import type { Tx } from "../ledger/backend.ts";
import type { Ledger } from "../ledger/ledger.ts";
import type { LegNotify } from "../notify/register.ts";
import type { Settings } from "../settings/settings.ts";
import type { LegIds, LegPlan } from "./setup.ts";
import { machineId } from "../host/proc.ts";
import type { AfterCommit } from "./teardown/state.ts";

export interface LegNotifierOptions {
  /** `--notify` as given; null = absent (the settings default applies). */
  notifyFlag: string | null;
  /** The resolved settings (§15); null when no settings file exists. */
  settings: Settings | null;
  log: (line: string) => void;
  /** The push budget (§9.4, 10 s by default). */
  budgetMs?: number;
  /** `$LI_HOME`: handler stderr goes under `$LI_HOME/notify/` when an event has no run directory. */
  liHome?: string;
  /** The host registrations are bound to and pushes run for; defaults to this machine. */
  hostId?: string;
  now?: () => number;
}

const NO_NOTICE: LegNotify = Object.freeze({ argv: null, origin: null, warnings: [] });

/**
 * One per `li agent` process. Configuration problems warn once, naming the flag or key, and only
 * disable the notice: they never fail or delay the run.
 */
export class LegNotifier {
  private readonly warned = new Set<string>();

  private constructor(
    private readonly o: LegNotifierOptions,
    /** The registration module, loaded before any setup transaction when a notice is possible. */
    private readonly registration: typeof import("../notify/register.ts") | null,
  ) {}

  static async load(o: LegNotifierOptions): Promise<LegNotifier> {
    const possible = o.notifyFlag !== null || o.settings !== null;
    return new LegNotifier(o, possible ? await import("../notify/register.ts") : null);
  }

  /** The argv this leg registers (or runs without persistence), by the precedence of §9.1. */
  resolve(ids: { sessionId: string; branchId: string }): LegNotify {
    // Without the module neither a flag nor a settings file was given: no notice.
    const resolved = this.registration ? this.registration.defaultLegNotify(this.o.settings, { notifyFlag: this.o.notifyFlag, ...ids }) : NO_NOTICE;
    for (const warning of resolved.warnings) {
      if (this.warned.has(warning)) continue;
      this.warned.add(warning);
      this.o.log(`warning: ${warning}`);
    }
    return resolved;
  }

  /**
   * Inside the setup transaction: a continuing leg takes over the registration of the deferred leg
   * before it (one notice, for the leg that finalizes); any other leg writes its own. `now`: the leg's
   * clock, which is its ledger's (on PostgreSQL the server's), so the registration's time agrees with the rows beside it.
   */
  readonly register = async (tx: Tx, ids: LegIds & { readonly previousLegId?: string | null }, now: number = this.now()): Promise<void> => {
    const registration = this.registration;
    if (!registration) return;
    if (ids.previousLegId && (await registration.passLegRegistration(tx, ids.previousLegId, ids.legId)) > 0) return;
    const notify = this.resolve(ids);
    if (notify.argv === null || notify.origin === null) return;
    await registration.registerLegCallback(tx, {
      sessionId: ids.sessionId,
      legId: ids.legId,
      argv: notify.argv,
      origin: notify.origin,
      now,
      ...(this.o.hostId !== undefined ? { hostId: this.o.hostId } : {}),
    });
  };

  /**
   * The registration a spooled setup carries (§17): what `register` would write, written at replay
   * instead (its consumer's watermark is taken then). Null when the leg has no notice.
   */
  spooledRegistration(ids: LegIds): { id: string; argv: string[]; origin: string; hostId: string; createdAt: number } | null {
    if (!this.registration) return null;
    const notify = this.resolve(ids);
    if (notify.argv === null || notify.origin === null) return null;
    return { id: crypto.randomUUID(), argv: [...notify.argv], origin: notify.origin, hostId: this.o.hostId ?? machineId(), createdAt: this.now() };
  }

  /** Step 10 of one leg: push the event its final write committed, or, unrecorded, run its notice once. */
  afterCommit(plan: LegPlan, ledger: Ledger | null): AfterCommit {
    const hook: AfterCommit = async (result) => {
      if (result.persisted === "written" && result.transition && ledger) {
        if (!result.transition.terminalEvent) return;
        const { pushTerminal } = await import("../notify/push.ts");
        const summary = await pushTerminal(ledger, result.transition, this.engineOptions());
        if (summary.error) this.o.log(`notify: ${summary.error}; li events deliver will retry`);
        for (const outcome of summary.outcomes) {
          if (!outcome.result.ok) this.o.log(`notify: handler ${outcome.consumer} failed (${outcome.result.error}); ${outcome.state === "dead" ? "given up" : "delivery will retry"}`);
        }
        return;
      }
      if (result.persisted !== "none") return;
      const notify = this.resolve(plan);
      if (notify.argv === null) return;
      const [{ undurableEnvelope }, { describeArgv, runUndurable }] = await Promise.all([import("../notify/envelope.ts"), import("../notify/run.ts")]);
      // A run directory removed for want of space (§16) is neither named to the handler nor made again for its stderr.
      const runDir = existsSync(plan.run.stateRoot) ? plan.run.stateRoot : null;
      const envelope = undurableEnvelope({
        sessionId: plan.sessionId,
        branchId: plan.branchId,
        runId: plan.runId,
        invocationId: plan.invocationId,
        status: result.status,
        reasonCode: result.reasonCode,
        occurredAt: this.now(),
        runDir,
        artifactRoot: runDir === null && plan.run.artifactRoot.startsWith(`${plan.run.stateRoot}/`) ? null : plan.run.artifactRoot,
      });
      const ran = await runUndurable(notify.argv, envelope, {
        stderrPath: runDir === null ? null : path.join(runDir, "notify-undurable.stderr"),
        exitCode: result.exitCode,
        ...(this.o.budgetMs !== undefined ? { budgetMs: this.o.budgetMs } : {}),
      });
      if (!ran.ok) this.o.log(`notify: ${describeArgv(notify.argv.slice(0, 1))} failed (${ran.error}); not recorded, so not retried`);
    };
    // A recorded leg pushes: the push module loads while the command runs (a failed load shows when the push imports it).
    if (ledger) hook.warm = () => void import("../notify/push.ts").catch(() => {});
    return hook;
  }

  private now(): number {
    return this.o.now ? this.o.now() : Date.now() / 1000;
  }

  private engineOptions() {
    return {
      ...(this.o.budgetMs !== undefined ? { budgetMs: this.o.budgetMs } : {}),
      ...(this.o.liHome !== undefined ? { liHome: this.o.liHome } : {}),
      ...(this.o.hostId !== undefined ? { hostId: this.o.hostId } : {}),
    };
  }
}
