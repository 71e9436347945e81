// What `li show --json` prints, built once: the command and the page's /api/show both call it (one shape).
import { runView, withoutEnvValues, type RunView } from "../../schedule/view.ts";
import { resolveOneIn, VIEW_LOOKUP_ORDER, type ResolvedId } from "../../ledger/resolve.ts";
import type { OpenedReads } from "../../ledger/reads.ts";
import type { AdminEventRow, BranchRow, EntityRow, LegRow, TransitionRow, CallbackRow, DeliveryRow } from "../../ledger/rows.ts";
import { spooledSessions } from "../../spool/waiting.ts";
import { parseJsonColumn } from "../output.ts";
import { cliPaths } from "../paths.ts";
import { adminEventJson, entityJson, transitionJson } from "../render.ts";

/** Registration columns holding JSON text. */
const CALLBACK_JSON = new Set(["argv", "filter_kinds", "filter_ids"]);

/**
 * Another user's registration on a shared ledger: its argv (a --notify template may hold a token) is
 * theirs to see, not every reader's (§18). What it is, when and where, stays visible.
 */
export function othersHandler(row: CallbackRow): boolean {
  return row.uid !== (process.getuid?.() ?? row.uid);
}

function callbackJson(row: CallbackRow): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k] = CALLBACK_JSON.has(k) ? parseJsonColumn(v) : k === "enabled" ? v === 1 : v;
  if (othersHandler(row)) {
    out.argv = null;
    out.argv_hidden = true;
  }
  return out;
}

/** Everything one `li show` reads, once. */
export interface Shown {
  target: ResolvedId;
  row: EntityRow;
  transitions: TransitionRow[];
  adminEvents: AdminEventRow[];
  legs: LegRow[];
  branches: BranchRow[];
  callbacks: CallbackRow[];
  deliveries: DeliveryRow[];
  currentLeg: LegRow | null;
  /** The ledger's clock when the rows were read: a running leg's duration so far. */
  now: number;
  /** This host's spool entries that hold an outcome of this session, not yet in the ledger (§17). */
  spooled: string[];
  /** A scheduled run's queue, place, dependencies, lease and attempt (§19). */
  schedule: RunView | null;
}

/** Reads everything `li show ID` shows (an entity, branch or run id, or a unique prefix); throws UnknownIdError. */
export async function readShown(opened: OpenedReads, id: string): Promise<Shown> {
  const { reads } = opened;
  const target = await resolveOneIn(reads, id, VIEW_LOOKUP_ORDER);
  const isSession = target.kind === "session";
  let [row, transitions, adminEvents, legs, branches, callbacks, deliveries] = await Promise.all([
    reads.entityRow(target.kind, target.id),
    reads.transitionsOf(target.kind, target.id),
    reads.adminEventsOf(target.kind, target.id),
    isSession ? reads.legsOf(target.id) : [],
    isSession ? reads.branchesOf(target.id) : [],
    isSession ? reads.listCallbacks(target.id) : [],
    reads.listDeliveries(target.kind, target.id),
  ]);
  if (!row) throw new Error(`${target.kind} ${target.id} vanished while reading`);
  if (target.kind === "schedule_run") row = withoutEnvValues(row);
  const spooled = isSession ? ((await spooledSessions(cliPaths().home)).get(target.id) ?? []) : [];
  const schedule = target.kind === "schedule_run" ? await runView(reads, target.id) : null;
  return { target, row, transitions, adminEvents, legs, branches, callbacks, deliveries, now: opened.now(), currentLeg: legs.find((l) => l.id === row.current_leg_id) ?? null, spooled, schedule };
}

/** The current leg's artifact root, else the session's artifacts path; none for a leg whose run directory could not be written (NO_ARTIFACT_ROOT). */
export function artifactDirOf(s: Shown): string | null {
  const root = s.currentLeg?.artifact_root ?? (typeof s.row.artifacts_path === "string" ? s.row.artifacts_path : null);
  return root === "" ? null : root;
}

export function renderJson(s: Shown): Record<string, unknown> {
  const entity = entityJson(s.row);
  return {
    kind: s.target.kind,
    ...(s.target.via ? { resolved_from: s.target.via } : {}),
    entity,
    // The current leg's host: run_dir and artifact_dir are paths on that host.
    host: s.currentLeg ? { id: s.currentLeg.host_id, name: s.currentLeg.host_name ?? null } : null,
    run_dir: s.currentLeg?.state_root ?? null,
    artifact_dir: artifactDirOf(s),
    artifact_contract: entity.artifact_contract_json ?? null,
    artifact_verification: entity.artifact_verification_json ?? null,
    evidence: entity.status_evidence_refs ?? null,
    branches: s.branches.map((b) => ({ id: b.id, name: b.name, created_at: b.created_at })),
    // host_id with a readable host_name (null on legs recorded before li kept it).
    legs: s.legs.map((l) => ({ ...entityJson(l as unknown as Record<string, unknown>), host_name: l.host_name ?? null })),
    transitions: s.transitions.map(transitionJson),
    admin_events: s.adminEvents.map(adminEventJson),
    callbacks: s.callbacks.map(callbackJson),
    deliveries: s.deliveries,
    spooled: s.spooled,
    schedule: s.schedule,
  };
}

