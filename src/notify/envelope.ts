// The v1 terminal envelope (SPEC §9.3) a handler reads on stdin, and the placeholder values of its argv.

import type { EventContext } from "../ledger/rows.ts";
import type { PlaceholderValues } from "./argv.ts";

export const ENVELOPE_SCHEMA = "li.run-terminal";
export const ENVELOPE_VERSION = 1;

export interface Envelope {
  schema: typeof ENVELOPE_SCHEMA;
  schema_version: typeof ENVELOPE_VERSION;
  /** The transition id; a consumer's de-duplication key. Null only without persistence. */
  event_id: string | null;
  durable: boolean;
  entity: { kind: string; id: string };
  previous_status: string | null;
  terminal_status: string;
  reason_code: string;
  /** Unix seconds of the transition. */
  occurred_at: number;
  correlation: {
    invocation_id: string | null;
    session_id: string | null;
    schedule_run_id: string | null;
    run_id: string | null;
    branch_id: string | null;
  };
  artifacts: { kind: "run_dir" | "artifact_root"; location: string }[];
  /** What the event's own leg used, as the kernel counted it (§8.7); null for other kinds and legs without figures. */
  resource_use: ResourceUse | null;
}

export interface ResourceUse {
  cpu_user_seconds: number | null;
  cpu_system_seconds: number | null;
  peak_rss_bytes: number | null;
}

/** A leg's figures as the envelope carries them; null when none was recorded. */
export function resourceUseOf(leg: { cpu_user_seconds?: number | null; cpu_system_seconds?: number | null; peak_rss_bytes?: number | string | null } | null): ResourceUse | null {
  if (!leg || (leg.cpu_user_seconds == null && leg.cpu_system_seconds == null && leg.peak_rss_bytes == null)) return null;
  return { cpu_user_seconds: leg.cpu_user_seconds ?? null, cpu_system_seconds: leg.cpu_system_seconds ?? null, peak_rss_bytes: leg.peak_rss_bytes == null ? null : Number(leg.peak_rss_bytes) };
}

/** Everything outside the envelope a handler's placeholders need. */
export interface EnvelopeExtras {
  exitCode: number | null;
}

const str = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);
const int = (value: unknown): number | null => (typeof value === "number" && Number.isInteger(value) ? value : null);

/** The envelope of a committed event, from what the ledger holds about it. */
export function envelopeFromContext(ctx: EventContext): { envelope: Envelope; extras: EnvelopeExtras } {
  const t = ctx.transition;
  const row: Record<string, unknown> = ctx.entity ?? {};
  const kind = t.entity_type;
  const artifacts: Envelope["artifacts"] = [];
  if (ctx.leg) artifacts.push({ kind: "run_dir", location: ctx.leg.state_root });
  // An empty root: the leg's run directory could not be written (NO_ARTIFACT_ROOT), so there is none to name.
  const artifactRoot = ctx.leg?.artifact_root ?? str(row.artifacts_path);
  if (artifactRoot) artifacts.push({ kind: "artifact_root", location: artifactRoot });
  const envelope: Envelope = {
    schema: ENVELOPE_SCHEMA,
    schema_version: ENVELOPE_VERSION,
    event_id: t.id,
    durable: true,
    entity: { kind, id: t.entity_id },
    previous_status: t.previous_status,
    terminal_status: t.status,
    reason_code: t.reason_code,
    occurred_at: t.created_at,
    correlation: {
      invocation_id: kind === "invocation" ? t.entity_id : str(row.invocation_id),
      session_id: kind === "session" ? t.entity_id : str(row.session_id),
      schedule_run_id: kind === "schedule_run" ? t.entity_id : null,
      run_id: ctx.leg?.run_id ?? null,
      branch_id: ctx.branchId,
    },
    artifacts,
    resource_use: resourceUseOf(ctx.leg && ctx.leg.id === t.leg_id ? ctx.leg : null),
  };
  // The event's own leg keeps its exit code; the session row's is cleared when a resume reopens it.
  const legExit = ctx.leg && ctx.leg.id === t.leg_id ? ctx.leg.exit_code : null;
  return { envelope, extras: { exitCode: legExit ?? int(row.exit_code) } };
}

/** The envelope of a leg that runs without persistence (§9.4): no event id, `durable: false`. */
export function undurableEnvelope(input: {
  sessionId: string | null;
  branchId: string | null;
  runId: string | null;
  invocationId?: string | null;
  status: string;
  reasonCode: string;
  occurredAt: number;
  runDir?: string | null;
  artifactRoot?: string | null;
  resourceUse?: ResourceUse | null;
}): Envelope {
  const artifacts: Envelope["artifacts"] = [];
  if (input.runDir) artifacts.push({ kind: "run_dir", location: input.runDir });
  if (input.artifactRoot) artifacts.push({ kind: "artifact_root", location: input.artifactRoot });
  return {
    schema: ENVELOPE_SCHEMA,
    schema_version: ENVELOPE_VERSION,
    event_id: null,
    durable: false,
    entity: { kind: "session", id: input.sessionId ?? "" },
    previous_status: "running",
    terminal_status: input.status,
    reason_code: input.reasonCode,
    occurred_at: input.occurredAt,
    correlation: {
      invocation_id: input.invocationId ?? null,
      session_id: input.sessionId,
      schedule_run_id: null,
      run_id: input.runId,
      branch_id: input.branchId,
    },
    artifacts,
    resource_use: input.resourceUse ?? null,
  };
}

/** The values `renderArgv` substitutes, all taken from the envelope (closed vocabularies and ids, §9.2). */
export function placeholderValues(envelope: Envelope, extras: EnvelopeExtras): PlaceholderValues {
  return {
    status: envelope.terminal_status,
    previous_status: envelope.previous_status,
    reason: envelope.reason_code,
    id: envelope.entity.id,
    kind: envelope.entity.kind,
    event_id: envelope.event_id,
    exit_code: extras.exitCode === null ? null : String(extras.exitCode),
    artifact_dir: envelope.artifacts.find((a) => a.kind === "artifact_root")?.location ?? null,
    branch_id: envelope.correlation.branch_id,
    session_id: envelope.correlation.session_id,
    run_id: envelope.correlation.run_id,
  };
}

/** The child's LI_* environment (§9.2). */
export function handlerEnv(envelope: Envelope): Record<string, string> {
  return {
    LI_EVENT_ID: envelope.event_id ?? "",
    LI_STATUS: envelope.terminal_status,
    LI_ENTITY_KIND: envelope.entity.kind,
    LI_ENTITY_ID: envelope.entity.id,
  };
}
