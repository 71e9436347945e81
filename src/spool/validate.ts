// Reading a spool entry back (SPEC §17, §18): a file under $LI_HOME could have been planted or damaged,
// so it is read bounded without following a symlink, parsed, and checked field by field before replay.

import { z } from "zod";
import { machineOf } from "../host/proc.ts";
import { modeText } from "../util/ownership.ts";
import { readUntrustedFile } from "../util/untrusted-file.ts";
import { verifyMac } from "./mac.ts";
import { ENTRY_ID, SPOOL_SCHEMA, SPOOL_VERSION, type SpoolEntry } from "./entry.ts";

import { SPOOL_ENTRY_LIMIT } from "./limits.ts";

export { SPOOL_ENTRY_LIMIT };

const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/).max(200);
const time = z.number().finite();
const text = z.string().max(SPOOL_ENTRY_LIMIT);
const object = z.record(z.string(), z.unknown());

const message = z.strictObject({
  id,
  session_id: id,
  branch_id: id.nullable(),
  leg_id: id.nullable(),
  role: z.string().max(64),
  content: text,
  truncated: z.number().int().min(0).max(1),
  created_at: time,
});

const final = z.strictObject({
  sessionId: id,
  legId: id,
  status: z.string().max(64),
  reasonCode: z.string().max(200),
  reasonSummary: text.nullable(),
  evidence: z.array(object).max(1000),
  metadata: object,
  endedAt: time,
  exitCode: z.number().int().nullable(),
  verification: z.unknown(),
  nodeMetadata: object,
  message: message.nullable(),
  leg: z.strictObject({
    status: z.string().max(64),
    reasonCode: z.string().max(200),
    artifactRootGone: z.literal(true).optional(),
    usage: z
      .strictObject({
        cpu_user_seconds: z.number().nonnegative().finite().nullable(),
        cpu_system_seconds: z.number().nonnegative().finite().nullable(),
        peak_rss_bytes: z.number().int().nonnegative().nullable(),
      })
      .optional(),
  }),
});

const nullableText = z.string().max(SPOOL_ENTRY_LIMIT).nullable();
const nullableInt = z.number().int().nullable();

const legRow = z.strictObject({
  id,
  session_id: id,
  seq: z.number().int().positive(),
  run_id: id,
  state_root: z.string().max(4096),
  artifact_root: z.string().max(4096),
  command: text,
  cwd: nullableText,
  pid: nullableInt,
  pid_start_ticks: nullableInt,
  boot_id: nullableText,
  host_id: nullableText,
  host_name: nullableText.optional(),
  command_pid: nullableInt,
  command_start_ticks: nullableInt,
  started_at: time,
  heartbeat_at: time.nullable(),
  kill_requested_at: time.nullable(),
  ended_at: time.nullable(),
  status: z.string().max(64),
  reason_code: nullableText,
  exit_code: nullableInt,
  deferred: z.number().int(),
  first_msg_id: id.nullable(),
  last_msg_id: id.nullable(),
  containment: nullableText.optional(),
  cgroup_path: nullableText.optional(),
  cpu_user_seconds: z.number().nonnegative().finite().nullable().optional(),
  cpu_system_seconds: z.number().nonnegative().finite().nullable().optional(),
  peak_rss_bytes: nullableInt.optional(),
});

const setup = z.strictObject({
  branch: z.strictObject({ id, session_id: id, name: nullableText, metadata: nullableText, created_at: time, updated_at: time }),
  // The creation fields; Ledger.prepareCreate checks them against its allowlist when the session is written.
  session: z.record(z.string().regex(/^[a-z_]+$/), z.union([z.string().max(SPOOL_ENTRY_LIMIT), z.number(), z.null()])),
  leg: legRow,
  registration: z.strictObject({ id, argv: z.array(z.string().max(65536)).min(1).max(4096), origin: z.string().max(4096), hostId: z.string().max(512), createdAt: time }).nullable(),
});

const entry = z.strictObject({
  schema: z.literal(SPOOL_SCHEMA),
  version: z.literal(SPOOL_VERSION),
  id: z.string().regex(ENTRY_ID),
  spooled_at: time,
  host_id: z.string().max(512),
  session_id: id,
  leg_id: id,
  ledger: z.string().max(4096),
  setup: setup.nullable(),
  final,
});

export type ReadEntry = { ok: true; entry: SpoolEntry } | { ok: false; missing: true } | { ok: false; missing: false; problem: string };

/** What proves an entry is this user's li's own on this host (§18). */
export interface EntryTrust {
  /** The uid that must own the file. */
  readonly uid: number;
  /** This host's machine id: an entry spooled elsewhere names a leg whose pids and paths are not here. */
  readonly machine: string;
  /** The spool key; null when there is none, and then no entry can be proven. */
  readonly key: Buffer | null;
}

/**
 * The entry in `file`, proven and checked: a regular file of the uid, mode 0600, carrying the MAC of
 * the spool key, spooled on this host; its id must be its file name, and its parts must agree on the
 * leg. A problem never quotes the file's text.
 */
export function readEntry(file: string, expectedId: string, trust: EntryTrust): ReadEntry {
  const read = readUntrustedFile(file, SPOOL_ENTRY_LIMIT);
  if (!read.ok) return read.missing ? { ok: false, missing: true } : { ok: false, missing: false, problem: read.problem };
  if (read.stat.uid !== trust.uid) return { ok: false, missing: false, problem: `is owned by uid ${read.stat.uid}, not by this user (uid ${trust.uid})` };
  if ((read.stat.mode & 0o7777) !== 0o600) return { ok: false, missing: false, problem: `has mode ${modeText(read.stat.mode)}, not 0600` };
  let json: unknown;
  try {
    json = JSON.parse(read.text);
  } catch {
    return { ok: false, missing: false, problem: "is not JSON" };
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return { ok: false, missing: false, problem: "is not a spool entry (not an object)" };
  if (trust.key === null) return { ok: false, missing: false, problem: "cannot be proven: this home has no spool key (li writes one with its first entry)" };
  if (!verifyMac(trust.key, json as Record<string, unknown>)) return { ok: false, missing: false, problem: "does not carry this home's MAC (li did not write it, or it was changed since)" };
  const host = (json as { host_id?: unknown }).host_id;
  if (typeof host !== "string" || machineOf(host) !== trust.machine) return { ok: false, missing: false, problem: "was spooled on another host" };
  const parsed = entry.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    return { ok: false, missing: false, problem: `is not a spool entry (${first ? `${first.path.join(".") || "entry"}: ${first.message}` : "invalid"})` };
  }
  const e = parsed.data as SpoolEntry;
  if (e.id !== expectedId) return { ok: false, missing: false, problem: `names entry ${e.id}, not its file's ${expectedId}` };
  if (e.final.sessionId !== e.session_id || e.final.legId !== e.leg_id) return { ok: false, missing: false, problem: "its final record names another leg" };
  if (e.setup && (e.setup.leg.id !== e.leg_id || e.setup.leg.session_id !== e.session_id || e.setup.session.id !== e.session_id)) {
    return { ok: false, missing: false, problem: "its setup names another leg" };
  }
  return { ok: true, entry: e };
}
