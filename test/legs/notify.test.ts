// A leg's notice (§9.1, §9.4): which argv a leg registers, warnings once, and the one undurable run when setup fails.

import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { runAgent } from "../../src/legs/agent.ts";
import { LegNotifier } from "../../src/legs/notify.ts";
import { loadSettings } from "../../src/settings/settings.ts";
import { fakeClock, tempDir, tempLedger } from "../helpers/ledger.ts";
import { recorded, RECORD } from "../notify/helpers.ts";
import { agentDepsOn, agentRequest } from "./run-agent.ts";

function settingsWith(yaml: string) {
  const home = tempDir();
  fs.writeFileSync(path.join(home, "settings.yaml"), yaml);
  return loadSettings({ cwd: tempDir(), liHome: home, env: {} }).settings;
}

const ids = { sessionId: "s-1", branchId: "b-1" };

describe("resolving a leg's notice", () => {
  test("--notify beats the settings; without it the settings apply; with neither there is none", async () => {
    const settings = settingsWith('notify:\n  on_terminal: "from-settings {status}"\n');
    const log: string[] = [];
    expect((await LegNotifier.load({ notifyFlag: "from-flag {id}", settings, log: (l) => log.push(l) })).resolve(ids)).toMatchObject({ argv: ["from-flag", "{id}"], origin: "--notify" });
    expect((await LegNotifier.load({ notifyFlag: null, settings, log: (l) => log.push(l) })).resolve(ids)).toMatchObject({ argv: ["from-settings", "{status}"] });
    expect((await LegNotifier.load({ notifyFlag: null, settings: null, log: (l) => log.push(l) })).resolve(ids)).toMatchObject({ argv: null });
    expect(log).toEqual([]);
  });

  test("a settings filter whose kinds leave out session gives the leg no default notice", async () => {
    const settings = settingsWith("notify:\n  on_terminal:\n    argv: [hook]\n    filter:\n      kinds: [invocation]\n");
    expect((await LegNotifier.load({ notifyFlag: null, settings, log: () => {} })).resolve(ids).argv).toBeNull();
  });

  test("a bad template warns once per process, naming the flag, and disables only the notice", async () => {
    const log: string[] = [];
    const notifier = await LegNotifier.load({ notifyFlag: "hook {status} > /tmp/out", settings: null, log: (l) => log.push(l) });
    expect(notifier.resolve(ids).argv).toBeNull();
    expect(notifier.resolve(ids).argv).toBeNull();
    expect(log).toHaveLength(1);
    expect(log[0]).toStartWith("warning: --notify");
  });
});

describe("a leg whose persistence setup failed (§8.4, §9.4)", () => {
  test("runs its notice once at the end with durable:false, and the run itself is unaffected", async () => {
    const t = tempLedger();
    const out = path.join(t.home, "notices");
    const log: string[] = [];
    const outcome = await runAgent(
      agentRequest({ notify: "x" }),
      agentDepsOn(t, {
        io: { stdout: () => {}, stderr: () => {}, log: (l) => log.push(l) },
        alsoInSetup: () => {
          throw new Error("disk full");
        },
        notifier: await LegNotifier.load({ notifyFlag: `${RECORD} ${out} {status}`, settings: null, log: (l) => log.push(l) }),
      }),
    );
    expect(outcome.result).toMatchObject({ status: "completed", persisted: "none" });
    expect(log.join("\n")).toContain("persistence setup failed (disk full)");
    expect(recorded(out)).toHaveLength(1);
    expect(JSON.parse(fs.readFileSync(`${out}.stdin`, "utf8"))).toMatchObject({ durable: false, event_id: null, terminal_status: "completed" });
    expect((await t.dump()).sessions).toEqual([]);
  });
});

describe("a recorded leg's registration (§9.1)", () => {
  test("is timed by the ledger's clock, as the session and leg rows it is written with", async () => {
    const clock = fakeClock(1_700_000_000);
    const t = tempLedger({ now: clock.now });
    const outcome = await runAgent(agentRequest({ notify: "x" }), agentDepsOn(t, { notifier: await LegNotifier.load({ notifyFlag: "true", settings: null, log: () => {} }) }));
    expect(outcome.result).toMatchObject({ status: "completed", persisted: "written" });
    const dump = await t.dump();
    expect(dump.terminal_callbacks).toHaveLength(1);
    expect(dump.terminal_callbacks![0]).toMatchObject({ created_at: 1_700_000_000 });
    expect(dump.legs![0]).toMatchObject({ started_at: 1_700_000_000 });
  });
});
