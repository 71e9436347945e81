// What the teardown steps read and refine: the leg's facts (fixed) and its outcome in the making (in memory).

import type { ArtifactContract, VerificationResult } from "../../contracts/artifacts.ts";
import type { Ledger } from "../../ledger/ledger.ts";
import type { AppliedTransition } from "../../ledger/transition.ts";
import type { MessageRow } from "../../ledger/rows.ts";
import type { LedgerUnavailableError } from "../../util/errors.ts";
import type { CompletionEvidence, EvidenceOptions } from "../evidence.ts";
import type { Termination } from "../outcome.ts";
import type { SpooledSetup } from "../setup.ts";
import type { FinalRecord } from "./record.ts";
import type { LegUsage } from "../leftovers.ts";

export type Evidence = Record<string, unknown>;

/** What teardown reports: the status li exits by, and what happened to the durable row. */
export interface TeardownResult {
  status: string;
  reasonCode: string;
  /**
   * written: our guarded write applied; winner: another writer's terminal status stands; skipped: not
   * current or not terminal; none: no ledger; deferred: auto-resume; failed: teardown itself failed;
   * unrecorded: the ledger failed (disk full, read-only…) and the outcome is NOT in it (`ledgerError`);
   * spooled: the ledger stayed unreachable past --ledger-retry and the outcome waits in `spoolFile` (§17).
   */
  persisted: "written" | "winner" | "skipped" | "none" | "deferred" | "failed" | "unrecorded" | "spooled";
  /** The leg's own computed outcome, whatever was persisted. */
  own: { status: string; reasonCode: string };
  exitCode: number | null;
  transition: AppliedTransition | null;
  /** Why the outcome is not in the ledger (persisted = unrecorded or spooled): names the ledger and the reason. */
  ledgerError?: LedgerUnavailableError;
  /** The spool entry holding the outcome (persisted = spooled). */
  spoolFile?: string;
}

/** What a leg does when the ledger is unreachable at its final write (§17). Absent: report it unrecorded. */
export interface LegOutage {
  /** Seconds to retry the final write before spooling. */
  retrySeconds: number;
  /** `$LI_HOME/spool`. */
  spoolDir: string;
  /** The host the entry is spooled on. */
  hostId: string;
  /**
   * Writes one spool entry in `spoolDir` and returns its file. The spool sits on the floor above legs
   * (its entries are legs' records, replayed with legs' writers), so the command hands its writer down.
   */
  spool: (outage: Pick<LegOutage, "spoolDir" | "hostId">, request: SpoolRequest) => Promise<string>;
  /** Takes the room of one entry in `spoolDir` (§20), after setup, so the outcome has somewhere to go; throws when the disk refuses. */
  reserve?: (outage: Pick<LegOutage, "spoolDir">, owner: { pid: number; startTicks: number | null }, nowSeconds: number) => Promise<SpoolReservation>;
  /** Test seams for the backoff. */
  clockMs?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** A leg's outcome (and its setup, when that never reached the ledger) as the spool keeps it (§17). */
export interface SpoolRequest {
  /** The ledger the leg could not reach, printable (no password). */
  ledger: string;
  now: number;
  record: FinalRecord;
  setup: SpooledSetup | null;
  /** The room the leg took at setup: the entry is written there. */
  reservation?: SpoolReservation | null;
}

/** Room taken in the spool for one entry (§20); the leg hands it back when it ends without spooling. */
export interface SpoolReservation {
  /** The id the entry gets. */
  readonly id: string;
  readonly file: string;
  /** Gives the room back (nothing happens once the entry was written into it). */
  release(): void;
}

/** Runs after the guarded write committed (step 10): callbacks are pushed from here. */
export interface AfterCommit {
  (result: TeardownResult): void | Promise<void>;
  /** Starts loading what the hook will need; the leg calls it once its command runs, so the load overlaps the command. */
  warm?(): void;
}

/** The leg's facts, fixed when the command ended. */
export interface TeardownInput {
  ledger: Ledger | null;
  sessionId: string;
  branchId: string;
  legId: string;
  /** --auto-resume will run another leg: no session status, nothing emitted (step 1). */
  deferred: boolean;
  termination: Termination;
  /** The command's own exit code (128+N for signal N), null when it never ran. */
  exitCode: number | null;
  /** A failure of li itself (spawn error), kept as the reason summary. */
  failure: string | null;
  contract: ArtifactContract | null;
  artifactRoot: string;
  /** The captured stdout tail, persisted as the leg's assistant message. */
  assistantText: string;
  assistantTruncated: boolean;
  linkedSessionId: string | null;
  /** Exit codes that mean "the provider failed" (§8.2 step 5). */
  providerExitCodes: readonly number[];
  linkedRetry: { attempts: number; intervalMs: number };
  /** Where the completion-evidence gate looks; null = the gate does not run. */
  evidenceCwd: string | null;
  baseRef: string | null;
  escalateFile: string;
  /** The run directory could not be written and was removed (§16): recorded in the evidence; the artifact root inside it is gone too. */
  runDirProblem?: { path: string; error: string; artifactRootGone: boolean };
  /** Markers merged into sessions.node_metadata at the final write. */
  nodeMetadata: Record<string, unknown>;
  /** Which containment held, what outlived the command, and the kernel's resource figures (§8.7); null when nothing ran. */
  containment?: { evidence: Record<string, unknown>; usage: LegUsage } | null;
  now: () => number;
  newId: () => string;
  log: (line: string) => void;
  checkEvidence: (cwd: string, options: EvidenceOptions) => Promise<CompletionEvidence>;
  afterCommit: readonly AfterCommit[];
  outage?: LegOutage;
  /** Setup never reached the ledger (§17): the final write goes, with the setup, into one spool entry. */
  spoolWhole?: SpoolWhole;
  /** The spool room taken at setup (§20): a spooled outcome is written there. */
  spoolReservation?: SpoolReservation;
}

/** A leg whose setup never reached the ledger: its setup rows, and why (the ledger it could not reach). */
export interface SpoolWhole {
  setup: SpooledSetup;
  error: LedgerUnavailableError;
}

/** The outcome being computed; each step reads and refines it in the fixed order. */
export interface TeardownState extends TeardownInput {
  status: string;
  reasonCode: string;
  reasonSummary: string | null;
  evidence: Evidence[];
  metadata: Record<string, unknown>;
  endedAt: number;
  message: MessageRow | null;
  /** The session row as read before the write: what the guard expects. */
  snapshot: { status: string | null; currentLegId: string | null; killRequested: boolean; firstMsgId: string | null } | null;
  verification: VerificationResult | null;
  /** Step 5 took the status from the linked session: the evidence gate stays out. */
  linkedSupplied: boolean;
  /** The ledger failed during teardown: `ledger` is then null and the outcome is computed in memory only. */
  ledgerError: LedgerUnavailableError | null;
  /**
   * When the final write stops being retried (monotonic ms, LegOutage.clockMs): --ledger-retry from its
   * first attempt on, which is cut to it too (§17), so a leg ends within its budget plus one attempt.
   */
  finalWriteDeadlineMs: number | null;
  /** The leg said once that it retries the ledger (a step's read or the final write, §17). */
  toldRetrying: boolean;
  result: TeardownResult | null;
}

export function initialState(input: TeardownInput): TeardownState {
  return {
    ...input,
    status: "failed",
    reasonCode: "run.failed.exception",
    reasonSummary: input.failure,
    // A detached leg's warnings go to a log in its run directory: one that could not be written is said here.
    evidence: input.runDirProblem ? [{ kind: "run_dir_unwritable", path: input.runDirProblem.path, error: input.runDirProblem.error }] : [],
    metadata: {},
    endedAt: input.now(),
    message: null,
    snapshot: null,
    verification: null,
    linkedSupplied: false,
    ledgerError: null,
    finalWriteDeadlineMs: null,
    toldRetrying: false,
    result: null,
  };
}
