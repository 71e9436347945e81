// LiSignalTrap: li's signals for a whole run — kept while no command runs, sent to the group while one does.

import { describe, expect, test } from "bun:test";
import { GroupTerminator, LiSignalTrap } from "../../src/legs/signals.ts";
import type { SignalSender } from "../../src/host/proc.ts";

/** A group terminator whose signals are recorded, not sent (the group is a made-up pid). */
function recordingGroup(): { group: GroupTerminator; sent: Array<NodeJS.Signals | number> } {
  const sent: Array<NodeJS.Signals | number> = [];
  const sender: SignalSender = (_pid, signal) => {
    sent.push(signal);
    return true;
  };
  return { group: new GroupTerminator(424242, 60_000, sender), sent };
}

// process.emit runs the listeners the runtime runs on a real signal, without signalling the test runner.
const deliver = (signal: NodeJS.Signals) => process.emit(signal as "SIGTERM");

describe("LiSignalTrap", () => {
  test("a signal before any command is kept (the first wins) and reaches the group as soon as it exists", () => {
    const trap = new LiSignalTrap();
    try {
      expect(trap.pending).toBeNull();
      deliver("SIGINT");
      deliver("SIGTERM");
      expect(trap.pending).toBe("SIGINT");
      const { group, sent } = recordingGroup();
      trap.attach(group);
      expect(trap.pending).toBeNull();
      expect(group.reason).toBe("sigint");
      expect(sent).toEqual(["SIGINT"]);
      group.dispose();
    } finally {
      trap.release();
    }
  });

  test("a signal while the command runs stops its group once; a second one is kept", () => {
    const trap = new LiSignalTrap();
    try {
      const first = recordingGroup();
      trap.attach(first.group);
      deliver("SIGHUP");
      deliver("SIGTERM");
      expect([first.group.reason, first.sent, trap.pending]).toEqual(["sighup", ["SIGHUP"], "SIGTERM"]);
      first.group.dispose();
      trap.detach();
    } finally {
      trap.release();
    }
  });

  test("a SIGTERM after the deadline already stopped the command cannot change its cause: it is kept for the next leg", () => {
    const trap = new LiSignalTrap();
    try {
      // The deadline stops the next command first: a SIGTERM then cannot change its cause, so it is kept,
      // and the leg after it (--auto-resume) sees it before its spawn and never starts its command.
      const second = recordingGroup();
      trap.attach(second.group);
      second.group.stop("timeout", "SIGTERM");
      deliver("SIGTERM");
      expect([second.group.reason, second.sent, trap.pending]).toEqual(["timeout", ["SIGTERM"], "SIGTERM"]);
      second.group.dispose();
      trap.detach();
      expect(trap.pending).toBe("SIGTERM");
    } finally {
      trap.release();
    }
  });

  test("between legs (after detach) a signal is kept; after release li's listeners are gone", () => {
    const before = process.listenerCount("SIGTERM");
    const trap = new LiSignalTrap();
    expect(process.listenerCount("SIGTERM")).toBe(before + 1);
    const { group } = recordingGroup();
    trap.attach(group);
    trap.detach();
    deliver("SIGTERM");
    expect(trap.pending).toBe("SIGTERM");
    expect(group.reason).toBeNull();
    trap.release();
    expect(process.listenerCount("SIGTERM")).toBe(before);
  });
});
