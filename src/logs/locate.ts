// Where a leg's captured output is (§6: `stream/<branch_id>.log` in its run directory), or why it cannot
// be read from this machine (another host's leg, a pruned run directory). A service: it never prints.

import fs from "node:fs";
import path from "node:path";
import type { BranchRow, LegRow } from "../ledger/rows.ts";
import { machineId, machineOf } from "../host/proc.ts";
import { isSafeId } from "../util/ids.ts";

export type LegOutput =
  /** `files`: the leg's stream files that exist (none when it printed nothing, or never got to start). */
  | { readonly ok: true; readonly leg: LegRow; readonly files: readonly string[] }
  | { readonly ok: false; readonly leg: LegRow; readonly problem: string };

/** The leg's host for a message: its name and id as recorded. */
export function hostLabel(leg: LegRow): string {
  if (leg.host_name && leg.host_id) return `${leg.host_name} (${leg.host_id})`;
  return leg.host_name ?? leg.host_id ?? "an unrecorded host";
}

/** The stream files a leg may have written: one per branch of its session. */
export function streamFiles(leg: LegRow, branches: readonly BranchRow[]): string[] {
  return branches.filter((b) => isSafeId(b.id)).map((b) => path.join(leg.state_root, "stream", `${b.id}.log`));
}

/** Finds a leg's output on this machine; `here` (this machine's id) is injectable for tests. */
export function locateLegOutput(leg: LegRow, branches: readonly BranchRow[], here: string = machineId()): LegOutput {
  if (leg.host_id && machineOf(leg.host_id) !== machineOf(here)) {
    return { ok: false, leg, problem: `leg ${leg.seq} ran on host ${hostLabel(leg)}: its run directory ${leg.state_root} is not on this machine` };
  }
  let isDir = false;
  try {
    isDir = fs.statSync(leg.state_root).isDirectory();
  } catch (error) {
    // Another user's leg on a shared ledger: its run directory is there, but owner-only (0700).
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EACCES" || code === "EPERM") return { ok: false, leg, problem: `leg ${leg.seq}: its run directory ${leg.state_root} is not readable by you (another user's leg, or a directory you may not enter)` };
    isDir = false;
  }
  if (!isDir) return { ok: false, leg, problem: `leg ${leg.seq}: its run directory ${leg.state_root} is gone (pruned or removed) on host ${hostLabel(leg)}` };
  return { ok: true, leg, files: streamFiles(leg, branches).filter((f) => fs.existsSync(f)) };
}
