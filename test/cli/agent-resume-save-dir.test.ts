// `li agent -r BRANCH --save-dir DIR`: DIR becomes the session's artifacts_path in the setup write (§2, §6, §7, §10).

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { li } from "../helpers/cli.ts";
import type { LedgerRows } from "../helpers/ledger-rows.ts";
import { agentHome, rows, sessionRow, spawnLi, type AgentHome } from "../legs/agent-harness.ts";
import { until } from "../helpers/until.ts";

async function agent(home: AgentHome, args: string[]) {
  const result = await li(["agent", "--json", ...args], { home: home.home });
  if (!result.stdout.trim()) throw new Error(`li agent ${args.join(" ")} printed no record: ${result.stderr}`);
  return { ...result, record: JSON.parse(result.stdout) };
}

/** The command the next plain resume runs: succeeds only when its artifact root is `dir`. */
const rootIs = (dir: string) => ["sh", "-c", 'test "$LI_ARTIFACT_ROOT" = "$1"', "root-is", dir];

const transitionsOf = (db: LedgerRows, id: string) => rows<{ status: string; reason_code: string }>(db, "SELECT status, reason_code FROM status_transitions WHERE entity_id = ? ORDER BY seq", id);

describe("-r with --save-dir", () => {
  test("a reopened session records the new root in the reopen: li wait prints it, and the next plain resume goes back to it", async () => {
    const home = agentHome();
    const oldRoot = path.join(home.scratch, "old-root");
    const newRoot = path.join(home.scratch, "new-root");
    const a = await agent(home, ["--save-dir", oldRoot, "--", "true"]);
    expect((await sessionRow(home.db, a.record.session_id)).artifacts_path).toBe(oldRoot);

    const b = await agent(home, ["-r", a.record.branch_id, "--save-dir", newRoot, "--", ...rootIs(newRoot)]);
    expect(b.record).toMatchObject({ session_id: a.record.session_id, status: "completed" });
    expect((await sessionRow(home.db, a.record.session_id)).artifacts_path).toBe(newRoot);
    // One reopen and one end: the root came with the reopen, not in a write of its own.
    expect((await transitionsOf(home.db, a.record.session_id)).map((t) => t.reason_code)).toEqual(["run.started.ok", "run.completed.ok", "session.reopened.by_resume", "run.completed.ok"]);

    const waited = await li(["wait", a.record.session_id], { home: home.home });
    expect(waited.code).toBe(0);
    expect(waited.stdout).toContain(`\tartifact_dir=${newRoot}\t`);

    const c = await agent(home, ["-r", a.record.branch_id, "--", ...rootIs(newRoot)]);
    expect(c.record).toMatchObject({ session_id: a.record.session_id, status: "completed", exit_code: 0 });
    expect((await sessionRow(home.db, a.record.session_id)).artifacts_path).toBe(newRoot);
  }, 30_000);

  test("a running session (a resume joining a live leg) takes the new root in the setup write; the next plain resume uses it", async () => {
    const home = agentHome();
    const oldRoot = path.join(home.scratch, "old-root");
    const newRoot = path.join(home.scratch, "new-root");
    const release = path.join(home.scratch, "release");
    const older = spawnLi(["agent", "--json", "--save-dir", oldRoot, "--", "sh", "-c", 'while [ ! -f "$1" ]; do sleep 0.02; done', "wait", release], home);
    const branch = await until("the first leg's branch", async () => (await home.db.exists()) && (await rows<{ id: string; session_id: string }>(home.db, "SELECT id, session_id FROM branches"))[0]);
    expect((await sessionRow(home.db, branch.session_id)).artifacts_path).toBe(oldRoot);

    const joined = await agent(home, ["-r", branch.id, "--save-dir", newRoot, "--", ...rootIs(newRoot)]);
    expect(joined.record).toMatchObject({ session_id: branch.session_id, status: "completed" });
    fs.writeFileSync(release, "");
    expect((await older.out).code).toBe(0);
    expect((await sessionRow(home.db, branch.session_id)).artifacts_path).toBe(newRoot);

    const waited = await li(["wait", branch.session_id], { home: home.home });
    expect(waited.stdout).toContain(`\tartifact_dir=${newRoot}\t`);
    const next = await agent(home, ["-r", branch.id, "--", ...rootIs(newRoot)]);
    expect(next.record).toMatchObject({ session_id: branch.session_id, status: "completed", exit_code: 0 });
  }, 30_000);
});
