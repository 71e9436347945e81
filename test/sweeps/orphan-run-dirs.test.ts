// A leg killed between allocating its run directory and its setup (issue 9 item 4a): the orphan sweep of
// `li watch` and `li state prune --files` removes that directory once it is an hour old — and nothing else.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { allocateRun, SETUP_PENDING_FILE } from "../../src/legs/rundir.ts";
import { openLedger } from "../../src/ledger/open.ts";
import { pathsForHome } from "../helpers/backends.ts";
import { orphanRunDirs } from "../../src/sweeps/orphan-run-dirs.ts";
import { li } from "../helpers/cli.ts";
import { tempDir } from "../helpers/ledger.ts";
import { agentHome, rows, type AgentHome } from "../legs/agent-harness.ts";
import { legAt } from "../legs/leg-at.ts";

const HOUR = 3600;

/** Moves a directory's marker (and the directory) back in time instead of waiting for it to age. */
function backdate(dir: string, seconds: number): void {
  const at = Date.now() / 1000 - seconds;
  const marker = path.join(dir, SETUP_PENDING_FILE);
  if (fs.existsSync(marker)) fs.utimesSync(marker, at, at);
  fs.utimesSync(dir, at, at);
}

/** A real leg killed (SIGKILL to itself) after its allocation, before its setup transaction. */
async function killedBeforeSetup(home: AgentHome): Promise<string> {
  const leg = legAt(home, "beforeSetup", "die", ["true"]);
  const r = await leg.out;
  expect(r.signal).toBe("SIGKILL");
  const [dir] = fs.readdirSync(home.runs).map((name) => path.join(home.runs, name));
  if (!dir) throw new Error("the killed leg left no run directory");
  return dir;
}

function watchOnce(home: AgentHome) {
  return li(["watch", "--once", "--log-format", "json"], { home: home.home });
}

describe("orphan run directories (killed between allocation and setup)", () => {
  test("li watch removes one once its marker is an hour old, and logs it; younger, it is kept", async () => {
    const home = agentHome();
    const dir = await killedBeforeSetup(home);
    // Nothing was committed: no session, no leg; only the directory and its marker.
    expect(await rows(home.db, "SELECT id FROM sessions")).toEqual([]);
    expect(await rows(home.db, "SELECT id FROM legs")).toEqual([]);
    expect(fs.existsSync(path.join(dir, SETUP_PENDING_FILE))).toBe(true);

    backdate(dir, HOUR - 60);
    const young = await watchOnce(home);
    expect(young.code).toBe(0);
    expect(fs.existsSync(dir)).toBe(true);

    backdate(dir, HOUR + 60);
    const old = await watchOnce(home);
    expect(old.code).toBe(0);
    expect(fs.existsSync(dir)).toBe(false);
    const removals = old.stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line)).filter((line) => line.action === "remove_orphan_run_dir");
    expect(removals).toMatchObject([{ path: dir }]);
  }, 30_000);

  test("li state prune --files removes one too (and --dry-run only says so)", async () => {
    const home = agentHome();
    const dir = await killedBeforeSetup(home);
    backdate(dir, 2 * HOUR);
    const dry = await li(["state", "prune", "--files", "--dry-run"], { home: home.home });
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`would remove ${dir} (its leg was killed before its setup)\n`);
    expect(fs.existsSync(dir)).toBe(true);
    const real = await li(["state", "prune", "--files", "--json"], { home: home.home });
    expect(real.code).toBe(0);
    expect(JSON.parse(real.stdout).orphan_run_dirs).toMatchObject({ removed: [dir], kept: [] });
    expect(fs.existsSync(dir)).toBe(false);
  }, 30_000);

  test("refusals: no marker, a --save-dir, a symlink out of RUNS_ROOT, a directory a leg row names; and no symlink is followed", async () => {
    const home = agentHome();
    const outside = tempDir("li-outside-");
    // An ordinary run directory of a finished leg: no marker, named by its leg row.
    expect((await li(["agent", "--run-id", "finished", "--", "true"], { home: home.home })).code).toBe(0);
    const finished = path.join(home.runs, "finished");
    // A directory with no marker that no row names (someone's own): not li's to judge.
    const noMarker = path.join(home.runs, "no-marker");
    fs.mkdirSync(noMarker);
    fs.writeFileSync(path.join(noMarker, "keep.txt"), "mine");
    // Allocated (marker) and then used by another leg as its --save-dir.
    const savedInto = allocateRun({ runsRoot: home.runs, runId: "saved-into" }).stateRoot;
    expect((await li(["agent", "--save-dir", savedInto, "--", "true"], { home: home.home })).code).toBe(0);
    // A marker left in a directory whose setup did commit (li killed between the commit and the marker's removal).
    expect((await li(["agent", "--run-id", "committed", "--", "true"], { home: home.home })).code).toBe(0);
    const committed = path.join(home.runs, "committed");
    fs.writeFileSync(path.join(committed, SETUP_PENDING_FILE), "{}");
    // A symlink in RUNS_ROOT to an allocated directory elsewhere.
    const elsewhere = allocateRun({ runsRoot: outside, runId: "elsewhere" }).stateRoot;
    fs.symlinkSync(elsewhere, path.join(home.runs, "link-out"));
    // A real orphan whose tree holds a symlink to a file outside: the link goes, the file stays.
    const orphan = allocateRun({ runsRoot: home.runs, runId: "orphan" }).stateRoot;
    const precious = path.join(outside, "precious.txt");
    fs.writeFileSync(precious, "keep me");
    fs.symlinkSync(precious, path.join(orphan, "stream", "link-to-precious"));
    fs.symlinkSync(outside, path.join(orphan, "link-to-outside-dir"));
    for (const dir of [finished, noMarker, savedInto, committed, elsewhere, orphan]) backdate(dir, 2 * HOUR);

    const paths = pathsForHome(home.home);
    const ledger = openLedger(paths, { create: false });
    try {
      const dry = await orphanRunDirs.runOnce(ledger, Date.now() / 1000, orphanRunDirs.validate({ dryRun: true }), { runsRoot: home.runs });
      expect(dry.removed).toEqual([orphan]);
      const summary = await orphanRunDirs.runOnce(ledger, Date.now() / 1000, orphanRunDirs.validate({}), { runsRoot: home.runs });
      expect(summary.removed).toEqual([orphan]);
      expect(summary.kept.sort((a, b) => a.path.localeCompare(b.path))).toEqual([
        { path: committed, why: "in_use" },
        { path: savedInto, why: "holds_save_dir" },
      ]);
      // Only directories holding the marker are ever candidates: three of them here.
      expect(summary.candidates).toBe(3);
      // Without RUNS_ROOT nothing is looked at.
      expect((await orphanRunDirs.runOnce(ledger, Date.now() / 1000, orphanRunDirs.validate({}), {})).candidates).toBe(0);
    } finally {
      ledger.close();
    }
    expect(fs.existsSync(orphan)).toBe(false);
    for (const dir of [finished, noMarker, savedInto, committed, elsewhere]) expect({ dir, exists: fs.existsSync(dir) }).toEqual({ dir, exists: true });
    expect(fs.readFileSync(path.join(noMarker, "keep.txt"), "utf8")).toBe("mine");
    expect(fs.lstatSync(path.join(home.runs, "link-out")).isSymbolicLink()).toBe(true);
    expect(fs.existsSync(path.join(elsewhere, SETUP_PENDING_FILE))).toBe(true);
    expect(fs.readFileSync(precious, "utf8")).toBe("keep me");
    expect(fs.existsSync(outside)).toBe(true);
  }, 30_000);

  // §18: a leg's command can write into RUNS_ROOT. A marker li would not read (over 1 MiB) is not li's: the directory stays,
  // whatever the marker says (here: an artifact root elsewhere, which would otherwise let the directory go).
  test("a marker over 1 MiB is not read: the directory is kept as unreadable_marker, not removed", async () => {
    const home = agentHome();
    expect((await li(["agent", "--run-id", "first", "--", "true"], { home: home.home })).code).toBe(0);
    const planted = allocateRun({ runsRoot: home.runs, runId: "planted" }).stateRoot;
    const marker = path.join(planted, SETUP_PENDING_FILE);
    fs.writeFileSync(marker, JSON.stringify({ artifact_root: "/nowhere", pad: "x".repeat(2 * 1024 * 1024) }));
    const small = allocateRun({ runsRoot: home.runs, runId: "small" }).stateRoot;
    for (const dir of [planted, small]) backdate(dir, 2 * HOUR);
    const ledger = openLedger(pathsForHome(home.home), { create: false });
    try {
      const summary = await orphanRunDirs.runOnce(ledger, Date.now() / 1000, orphanRunDirs.validate({}), { runsRoot: home.runs });
      expect(summary.kept).toEqual([{ path: planted, why: "unreadable_marker" }]);
      expect(summary.removed).toEqual([small]);
    } finally {
      ledger.close();
    }
    expect(fs.existsSync(marker)).toBe(true);
  }, 30_000);

  test("a leg that runs normally leaves no marker behind (recorded, or unrecorded with --no-persist)", async () => {
    const home = agentHome();
    expect((await li(["agent", "--run-id", "recorded", "--", "true"], { home: home.home })).code).toBe(0);
    expect((await li(["agent", "--no-persist", "--run-id", "unrecorded", "--", "true"], { home: home.home })).code).toBe(0);
    expect(fs.existsSync(path.join(home.runs, "recorded", SETUP_PENDING_FILE))).toBe(false);
    expect(fs.existsSync(path.join(home.runs, "unrecorded", SETUP_PENDING_FILE))).toBe(false);
    expect(fs.existsSync(path.join(home.runs, "unrecorded", "run.json"))).toBe(true);
  }, 30_000);
});
