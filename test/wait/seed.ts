// Test helper: sessions with branches and legs written through the ledger's own API (until `li agent` lands),
// plus a spawned `li wait` whose stdout lines can be awaited one by one.

import type { Subprocess } from "bun";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { LI_BINARY, liEnv } from "../helpers/cli.ts";
import { collectLines } from "../helpers/lines.ts";
import { legRow } from "../helpers/sweep-fixtures.ts";
import { NeverHappens, until } from "../helpers/until.ts";

export interface SeedLeg {
  id?: string;
  runId?: string;
  artifactRoot?: string;
  command?: string[];
  startedAt?: number;
  endedAt?: number | null;
  exitCode?: number | null;
}

export interface SeedSession {
  id?: string;
  branchId?: string;
  invocationId?: string;
  artifactsPath?: string;
  /** Legs in order; the last one becomes the session's current leg. */
  legs?: SeedLeg[];
  /** Backdates the session's own started_at (a resumed session keeps its old one). */
  startedAt?: number;
}

let counter = 0;

/** Inserts a running session with its branch and legs in one transaction, as a leg's setup would. */
export async function seedSession(ledger: Ledger, spec: SeedSession = {}): Promise<{ id: string; branchId: string; legIds: string[]; runIds: string[] }> {
  const id = spec.id ?? ledger.newId();
  const branchId = spec.branchId ?? ledger.newId();
  const legs = (spec.legs ?? []).map((leg, i) => ({
    id: leg.id ?? `${id}-leg-${i + 1}`,
    runId: leg.runId ?? `run-${++counter}-${process.pid}-${i}`,
    ...leg,
  }));
  const fields: Record<string, unknown> = {};
  if (spec.invocationId) fields.invocation_id = spec.invocationId;
  if (spec.artifactsPath) fields.artifacts_path = spec.artifactsPath;
  if (legs.length > 0) fields.current_leg_id = legs.at(-1)!.id;
  if (spec.startedAt !== undefined) fields.started_at = spec.startedAt;
  const prepared = ledger.prepareCreate("session", { id, fields });
  await ledger.transact(async (tx) => {
    await ledger.insertNew(tx, "session", prepared);
    const now = ledger.now();
    await tx.insertBranch({ id: branchId, session_id: id, name: null, metadata: null, created_at: now, updated_at: now });
    for (const [i, leg] of legs.entries()) {
      const at = { stateRoot: `/tmp/li-runs/${leg.runId}`, startedAt: leg.startedAt ?? now, status: leg.endedAt ? "completed" : "running" };
      await tx.insertLeg(legRow(id, { ...leg, ...at }, i));
    }
  });
  return { id, branchId, legIds: legs.map((l) => l.id), runIds: legs.map((l) => l.runId) };
}

/** Moves a session to a terminal status through the guarded write, with the command's exit code. */
export async function finishSession(ledger: Ledger, id: string, status: string, reason: string, exitCode: number | null = null): Promise<void> {
  const ok = await ledger.updateStatus("session", id, { newStatus: status, reasonCode: reason, extraFields: { exit_code: exitCode, ended_at: ledger.now() } });
  if (!ok) throw new Error(`could not finish session ${id}`);
}

export interface RunningWait {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  /** Resolves with the first `n` stdout lines (fails after `ms`, which is a hang guard, not a timing assertion). */
  lines(n: number, ms?: number): Promise<string[]>;
  /** Every stdout line so far. */
  seen(): string[];
  done(): Promise<{ code: number; stdout: string[]; stderr: string }>;
}

/** Starts `li wait` and collects its stdout line by line as it arrives. */
export function startWait(args: string[], home: string, env: Record<string, string | undefined> = {}): RunningWait {
  const proc = Bun.spawn([LI_BINARY, "wait", ...args], { env: liEnv(home, env), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const out = collectLines(proc.stdout);
  const got = out.lines;
  const stderr = new Response(proc.stderr).text();
  return {
    proc,
    seen: () => [...got],
    lines: (n, ms = 15_000) =>
      until(`li wait's first ${n} lines`, () => {
        if (got.length >= n) return got.slice(0, n);
        if (out.ended()) throw new NeverHappens(`li wait ended after ${got.length} of ${n} lines: ${JSON.stringify(got)}`);
        return null;
      }, { timeoutMs: ms, intervalMs: 2 }).catch((error: Error) => {
        throw new Error(`${error.message}; printed so far: ${JSON.stringify(got)}`);
      }),
    done: async () => {
      const code = await proc.exited;
      await out.closed;
      return { code, stdout: [...got], stderr: await stderr };
    },
  };
}
