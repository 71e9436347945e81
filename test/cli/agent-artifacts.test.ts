// Artifact contracts through `li agent` (§7): validation before the start, overlay and precedence, verification at teardown.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { li, LI_BINARY } from "../helpers/cli.ts";
import { fixture } from "../helpers/fixtures.ts";
import { agentHome, rows, sessionRow } from "../legs/agent-harness.ts";

function project(files: Record<string, string>): string {
  const home = agentHome();
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(home.scratch, rel)), { recursive: true });
    fs.writeFileSync(path.join(home.scratch, rel), text);
  }
  return home.scratch;
}

describe("every validation rule is refused before the command starts (exit 2, nothing written)", () => {
  const cases: [string, string[], RegExp, Record<string, string>?][] = [
    ["an id outside [A-Za-z0-9_-]", ["--artifact", "bad id=x.txt"], /id must match/],
    ["no =", ["--artifact", "report"], /ID=PATH/],
    ["an empty path", ["--artifact", "a="], /artifact/],
    ["an absolute path", ["--artifact", "a=/etc/passwd"], /absolute|relative/],
    ["a .. segment", ["--artifact", "a=../x"], /\.\./],
    ["a glob character", ["--artifact", "a=*.md"], /glob/],
    ["one id given twice", ["--artifact", "a=x", "--artifact", "a=y"], /more than once/],
    ["an unsafe profile name", ["--profile", "../p"], /--profile/],
    ["a missing profile", ["--profile", "nope"], /does not exist/],
    ["a missing playbook", ["--playbook", "nope.yaml"], /does not exist/],
    ["invalid YAML", ["--playbook", "pb.yaml"], /invalid YAML/, { "pb.yaml": "artifacts: [\n" }],
    ["expected not a list", ["--playbook", "pb.yaml"], /expected/, { "pb.yaml": "artifacts:\n  expected: 3\n" }],
    ["a NUL in a path", ["--playbook", "pb.yaml"], /NUL/, { "pb.yaml": 'artifacts:\n  expected:\n    - {id: a, path: "a\\0b"}\n' }],
    ["an entry without a path", ["--playbook", "pb.yaml"], /path must be a non-empty string/, { "pb.yaml": "artifacts:\n  expected:\n    - {id: a}\n" }],
    ["a bad required type", ["--playbook", "pb.yaml"], /required/, { "pb.yaml": "artifacts:\n  expected:\n    - id: a\n      path: a.txt\n      required: maybe\n" }],
  ];
  for (const [name, args, message, files] of cases) {
    test(name, async () => {
      const home = agentHome();
      const dir = project(files ?? {});
      const marker = path.join(home.scratch, "ran");
      const r = await li(["agent", ...args, "--", "touch", marker], { home: home.home, cwd: dir });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(fs.existsSync(marker)).toBe(false);
      expect(fs.existsSync(home.home)).toBe(false);
    });
  }

  test("a path escaping the artifact root through a symlink is refused before anything is written", async () => {
    const home = agentHome();
    const save = path.join(home.scratch, "save");
    fs.mkdirSync(save);
    fs.symlinkSync("/tmp", path.join(save, "out"));
    const marker = path.join(home.scratch, "ran");
    const r = await li(["agent", "--run-id", "esc-1", "--save-dir", save, "--artifact", "a=out/x.txt", "--", "touch", marker], { home: home.home });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([`li: artifact "a": path "out/x.txt" escapes the artifact root ${save}`]);
    expect(fs.existsSync(marker)).toBe(false);
    expect(fs.existsSync(home.home)).toBe(false);
  });

  test("an escape refused with a ledger already in place leaves its rows and the runs root as they were", async () => {
    const home = agentHome();
    expect((await li(["agent", "--run-id", "first-1", "--", "true"], { home: home.home })).code).toBe(0);
    const before = { sessions: await rows(home.db, "SELECT * FROM sessions"), history: await rows(home.db, "SELECT * FROM status_transitions"), runs: fs.readdirSync(home.runs) };
    const save = path.join(home.scratch, "save");
    fs.mkdirSync(save);
    fs.symlinkSync("/tmp", path.join(save, "out"));
    const r = await li(["agent", "--run-id", "esc-2", "--save-dir", save, "--artifact", "a=out/x.txt", "--", "true"], { home: home.home });
    expect(r.code).toBe(2);
    expect({ sessions: await rows(home.db, "SELECT * FROM sessions"), history: await rows(home.db, "SELECT * FROM status_transitions"), runs: fs.readdirSync(home.runs) }).toEqual(before);
  });
});

describe("overlay, storage and verification", () => {
  test("profile < playbook < --artifact by id; the contract is stored on the session before the command starts", async () => {
    const home = agentHome();
    const dir = project({
      ".li/profiles/coder.yaml": "artifacts:\n  expected:\n    - {id: report, path: profile.md}\n    - {id: log, path: log.txt, required: false, description: the log}\n",
      "pb.yaml": "artifacts:\n  expected:\n    - {id: report, path: playbook.md}\n    - {id: diff, path: change.diff}\n",
    });
    // The command reads its own session through li. LI_DB is li's credential, withheld from the command
    // unless passed on (§18): on PostgreSQL the command needs it to reach the same ledger.
    const probe = `"${LI_BINARY}" show "$LI_SESSION_ID" --json > contract.seen`;
    const r = await li(["agent", "--json", "--pass-env", "LI_DB", "--profile", "coder", "--playbook", "pb.yaml", "--artifact", "diff=cli.diff?", "--", "sh", "-c", probe], { home: home.home, cwd: dir });
    const stored = JSON.parse((await sessionRow(home.db, JSON.parse(r.stdout).session_id)).artifact_contract_json);
    expect(stored.expected).toEqual([
      { id: "report", path: "playbook.md", required: true, description: "", source: "playbook" },
      { id: "log", path: "log.txt", required: false, description: "the log", source: "agent_profile" },
      { id: "diff", path: "cli.diff", required: false, description: "", source: "cli" },
    ]);
    expect(JSON.parse(fs.readFileSync(path.join(dir, "contract.seen"), "utf8")).entity.artifact_contract_json).toEqual(stored);
    expect(r.code).toBe(1); // report is required and missing
    expect((await sessionRow(home.db, JSON.parse(r.stdout).session_id)).status_reason_code).toBe("run.failed.missing_artifact");
  });

  test("a produced required artifact passes; a missing optional one is a warning and does not change the status", async () => {
    const home = agentHome();
    const r = await li(["agent", "--json", "--artifact", "out=out.txt", "--artifact", "extra=extra.txt?", "--", fixture("write-artifact"), "out.txt"], { home: home.home });
    expect(r.code).toBe(0);
    const s = await sessionRow(home.db, JSON.parse(r.stdout).session_id);
    expect(s.status).toBe("completed");
    const v = JSON.parse(s.artifact_verification_json);
    expect(v.status).toBe("warning");
    expect(v.produced).toEqual([{ id: "out", path: "out.txt", size: 9, present: true }]);
    expect(v.missing_optional.map((m: { id: string }) => m.id)).toEqual(["extra"]);
  });

  test("a zero-byte artifact counts as missing: completed becomes failed (run.failed.missing_artifact)", async () => {
    const home = agentHome();
    const r = await li(["agent", "--json", "--artifact", "out=out.txt", "--", fixture("write-artifact"), "out.txt", ""], { home: home.home });
    expect(r.code).toBe(1);
    const s = await sessionRow(home.db, JSON.parse(r.stdout).session_id);
    expect([s.status, s.status_reason_code]).toEqual(["failed", "run.failed.missing_artifact"]);
    // The missing artifact decides; the containment entry every leg's evidence ends with follows it.
    expect(JSON.parse(s.status_evidence_refs)).toEqual([{ kind: "artifact", id: "out", path: "out.txt", required: true }, expect.objectContaining({ kind: "containment" })]);
  });

  test("the artifact root in the run directory exists before the command starts, so it can write straight into $LI_ARTIFACT_ROOT", async () => {
    const home = agentHome();
    const r = await li(["agent", "--json", "--artifact", "report=report.md", "--", "sh", "-c", 'echo done > "$LI_ARTIFACT_ROOT/report.md"'], { home: home.home });
    expect(r.code).toBe(0);
    const s = await sessionRow(home.db, JSON.parse(r.stdout).session_id);
    expect([s.status, JSON.parse(s.artifact_verification_json).status]).toEqual(["completed", "passed"]);
  });

  test("a symlink the command leaves in the root pointing outside it is missing, never produced", async () => {
    const home = agentHome();
    const outside = path.join(home.scratch, "outside.txt");
    fs.writeFileSync(outside, "not an artifact\n");
    const r = await li(["agent", "--json", "--artifact", "report=report.md", "--", "sh", "-c", 'ln -s "$1" "$LI_ARTIFACT_ROOT/report.md"', "link", outside], { home: home.home });
    expect(r.code).toBe(1);
    const s = await sessionRow(home.db, JSON.parse(r.stdout).session_id);
    expect([s.status, s.status_reason_code]).toEqual(["failed", "run.failed.missing_artifact"]);
    expect(JSON.parse(s.artifact_verification_json).produced).toEqual([]);
    expect(fs.lstatSync(path.join(s.artifacts_path, "report.md")).isSymbolicLink()).toBe(true);
  });

  test("a --save-dir is used as given: li does not create it, and a missing one leaves every entry missing", async () => {
    const home = agentHome();
    const save = path.join(home.scratch, "not-there");
    const r = await li(["agent", "--json", "--save-dir", save, "--artifact", "report=report.md", "--", "true"], { home: home.home });
    expect(r.code).toBe(1);
    expect(fs.existsSync(save)).toBe(false);
    expect((await sessionRow(home.db, JSON.parse(r.stdout).session_id)).status_reason_code).toBe("run.failed.missing_artifact");
  });

  test("--save-dir becomes the artifact root and sessions.artifacts_path", async () => {
    const home = agentHome();
    const save = path.join(home.scratch, "deliverables");
    const r = await li(["agent", "--json", "--save-dir", save, "--artifact", "out=o.txt", "--", fixture("write-artifact"), "o.txt"], { home: home.home });
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(save, "o.txt"), "utf8")).toBe("artifact\n");
    expect((await sessionRow(home.db, JSON.parse(r.stdout).session_id)).artifacts_path).toBe(save);
  });
});
