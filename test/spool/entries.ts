// Spool entries for tests and benchmarks: whole legs (setup never reached the ledger) with a completed outcome.

import { hostId } from "../../src/host/proc.ts";
import { spoolFinal } from "../../src/spool/write.ts";

/** Writes `count` whole-leg entries numbered from `from` into `spoolDir`; returns their session ids. */
export function spoolWholeLegs(spoolDir: string, from: number, count: number, now = Date.now() / 1000): string[] {
  const ids: string[] = [];
  // This host's: replay refuses entries spooled on another (§18).
  const host = hostId();
  for (let i = from; i < from + count; i++) {
    const sessionId = `spooled-s-${i}`;
    const legId = `spooled-l-${i}`;
    const startedAt = now - 600 + i * 0.01;
    ids.push(sessionId);
    spoolFinal(
      { spoolDir, hostId: host },
      {
        ledger: "test",
        now: startedAt + 1,
        setup: {
          branch: { id: `spooled-b-${i}`, session_id: sessionId, name: null, metadata: null, created_at: startedAt, updated_at: startedAt },
          session: { id: sessionId, started_at: startedAt, current_leg_id: legId, artifacts_path: `/tmp/runs/r${i}/artifacts`, artifact_contract_json: null, node_metadata: "{}", invocation_id: null, linked_session_id: null },
          leg: {
            id: legId, session_id: sessionId, seq: 1, run_id: `spooled-r${i}`, state_root: `/tmp/runs/r${i}`, artifact_root: `/tmp/runs/r${i}/artifacts`, command: '["true"]', cwd: "/tmp",
            pid: 1000 + i, pid_start_ticks: 1, boot_id: "boot", host_id: host, host_name: "spool-host", command_pid: null, command_start_ticks: null,
            started_at: startedAt, heartbeat_at: startedAt, kill_requested_at: null, ended_at: null, status: "running", reason_code: "run.started.ok", exit_code: null, deferred: 0, first_msg_id: null, last_msg_id: null,
          },
          registration: null,
        },
        record: {
          sessionId, legId, status: "completed", reasonCode: "run.completed.ok", reasonSummary: "exit 0", evidence: [{ kind: "process", termination: "exited_ok", exit_code: 0 }],
          metadata: {}, endedAt: startedAt + 1, exitCode: 0, verification: null, nodeMetadata: { leg_id: legId }, message: null, leg: { status: "completed", reasonCode: "run.completed.ok" },
        },
      },
    );
  }
  return ids;
}
