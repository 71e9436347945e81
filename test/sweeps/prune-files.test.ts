import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { prune } from "../../src/sweeps/prune.ts";
import { fakeClock, rowsOf, tempDir, tempLedger } from "../helpers/ledger.ts";
import { insertSession } from "../helpers/sweep-fixtures.ts";

const NOW = 1_900_000_000;
const OLD = NOW - 40 * 86400;

function dir(p: string): string {
  mkdirSync(p, { recursive: true });
  writeFileSync(join(p, "run.json"), "{}");
  return p;
}

async function endedSession(ledger: Ledger, id: string, legs: Array<{ stateRoot: string; artifactRoot?: string }>, opts: { old?: boolean } = {}) {
  const at = opts.old === false ? NOW : OLD;
  await insertSession(ledger, { id, startedAt: at, updatedAt: at, legs: legs.map((l, i) => ({ id: `${id}-l${i}`, startedAt: at, endedAt: at, status: "completed", ...l })) });
  await ledger.transition("session", id, { newStatus: "completed", reasonCode: "run.completed.ok" });
  await rowsOf(ledger).run("UPDATE sessions SET updated_at = ? WHERE id = ?", at, id);
}

describe("li state prune --files", () => {
  test("removes a pruned leg's run directory inside RUNS_ROOT, after commit, and nothing else", async () => {
    const { ledger } = tempLedger({ now: fakeClock(NOW).now });
    const root = tempDir("li-runs-");
    const outside = tempDir("li-outside-");
    const runs = join(root, "runs");
    const pruned = dir(join(runs, "run-a"));
    const saveDir = dir(join(outside, "my-artifacts"));
    const prunedWithSaveDir = dir(join(runs, "run-b"));
    const notInRoot = dir(join(outside, "run-c"));
    const shared = dir(join(runs, "run-shared"));
    const survivorOwn = dir(join(runs, "run-survivor"));
    const saveDirInRuns = dir(join(runs, "saved-by-flag"));
    const prunedHoldingSaveDir = dir(join(runs, "run-d"));
    mkdirSync(join(prunedHoldingSaveDir, "keep"), { recursive: true });
    symlinkSync(outside, join(runs, "run-link"));

    await endedSession(ledger, "a", [{ stateRoot: pruned }]);
    await endedSession(ledger, "b", [{ stateRoot: prunedWithSaveDir, artifactRoot: saveDir }]);
    await endedSession(ledger, "c", [{ stateRoot: notInRoot }]);
    await endedSession(ledger, "e", [{ stateRoot: shared }, { stateRoot: join(runs, "run-link") }, { stateRoot: runs }]);
    await endedSession(ledger, "f", [{ stateRoot: join(runs, "never-created") }, { stateRoot: join(runs, "x"), artifactRoot: saveDirInRuns }]);
    await endedSession(ledger, "g", [{ stateRoot: prunedHoldingSaveDir, artifactRoot: join(prunedHoldingSaveDir, "keep") }]);
    await endedSession(ledger, "survivor", [{ stateRoot: survivorOwn }, { stateRoot: shared, artifactRoot: join(shared, "artifacts") }], { old: false });

    const dry = await prune.runOnce(ledger, NOW, prune.validate({ files: true, dryRun: true }), { runsRoot: runs });
    expect(existsSync(pruned)).toBe(true);
    const real = await prune.runOnce(ledger, NOW, prune.validate({ files: true }), { runsRoot: runs });
    expect(real.files!.removed.sort()).toEqual(dry.files!.removed.sort());

    expect(real.files!.removed.sort()).toEqual([pruned, prunedWithSaveDir].sort());
    expect(existsSync(pruned)).toBe(false);
    expect(existsSync(prunedWithSaveDir)).toBe(false);
    const why = Object.fromEntries(real.files!.skipped.map((s) => [s.path, s.why]));
    expect(why).toMatchObject({
      [notInRoot]: "outside_runs_root",
      [shared]: "in_use",
      [join(runs, "run-link")]: "symlink",
      [runs]: "outside_runs_root",
      [join(runs, "never-created")]: "missing",
      [prunedHoldingSaveDir]: "holds_save_dir",
    });
    for (const kept of [saveDir, notInRoot, shared, survivorOwn, saveDirInRuns, prunedHoldingSaveDir, outside, runs]) expect(existsSync(kept)).toBe(true);
  });

  // Today's bug (issue 10): the resumed leg's inherited artifact root (the first leg's state_root/artifacts)
  // was taken for a --save-dir, so the first run directory was never removed.
  test("a resumed session's first run directory is removed: an inherited artifact root is li's own, not a --save-dir", async () => {
    const { ledger } = tempLedger({ now: fakeClock(NOW).now });
    const runs = join(tempDir("li-runs-"), "runs");
    const first = dir(join(runs, "run-first"));
    const resumed = dir(join(runs, "run-resumed"));
    mkdirSync(join(first, "artifacts"), { recursive: true });
    const outside = dir(join(tempDir("li-outside-"), "saved"));
    const savedFirst = dir(join(runs, "run-saved-first"));
    const savedResumed = dir(join(runs, "run-saved-resumed"));
    await endedSession(ledger, "r", [{ stateRoot: first }, { stateRoot: resumed, artifactRoot: join(first, "artifacts") }]);
    // A real --save-dir inherited by the resume stays a --save-dir.
    await endedSession(ledger, "s", [{ stateRoot: savedFirst, artifactRoot: outside }, { stateRoot: savedResumed, artifactRoot: outside }]);

    const summary = await prune.runOnce(ledger, NOW, prune.validate({ files: true }), { runsRoot: runs });

    expect(summary.files!.removed.sort()).toEqual([first, resumed, savedFirst, savedResumed].sort());
    for (const gone of [first, resumed]) expect(existsSync(gone)).toBe(false);
    expect(existsSync(outside)).toBe(true);
  });

  test("without --files no directory is touched", async () => {
    const { ledger } = tempLedger({ now: fakeClock(NOW).now });
    const runs = join(tempDir("li-runs-"), "runs");
    const d = dir(join(runs, "run-a"));
    await endedSession(ledger, "a", [{ stateRoot: d }]);
    const summary = await prune.runOnce(ledger, NOW, prune.validate({}), { runsRoot: runs });
    expect(summary.sessions).toBe(1);
    expect(summary.files).toBeNull();
    expect(existsSync(d)).toBe(true);
  });
});
