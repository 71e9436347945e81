import { describe, expect, test } from "bun:test";
import {
  classifyLeg,
  DEFAULT_HEARTBEAT_GRACE_SECONDS,
  sessionAgeWithoutLeg,
  type LegMarkers,
  type Probe,
  type ProbeResult,
  type Verdict,
} from "../../src/sweeps/liveness.ts";
import { probeProcess, hostId as currentHostId, readStartTicks } from "../../src/host/proc.ts";

const HERE = "machine-a:boot-1";
const ELSEWHERE = "machine-b:boot-7";
const NOW = 1_000_000.5;

/** A probe over a table of processes: pid → start ticks (absent pid = gone, "Z" = zombie). */
function tableProbe(processes: Record<number, number | "Z">): Probe & { calls: Array<[number, number | null]> } {
  const calls: Array<[number, number | null]> = [];
  const probe = (pid: number, ticks: number | null): ProbeResult => {
    calls.push([pid, ticks]);
    const seen = processes[pid];
    if (seen === undefined || seen === "Z") return "dead";
    return ticks !== null && ticks !== seen ? "reused" : "alive";
  };
  return Object.assign(probe, { calls });
}

function markers(overrides: Partial<LegMarkers>): LegMarkers {
  return {
    hostId: HERE,
    pid: null,
    pidStartTicks: null,
    commandPid: null,
    commandStartTicks: null,
    startedAt: null,
    heartbeatAt: null,
    endedAt: null,
    ...overrides,
  };
}

interface Row {
  name: string;
  leg: Partial<LegMarkers>;
  supervisor: Verdict;
  command: Verdict;
  remote: boolean;
  age: number | null;
}

const processes = { 100: 5000, 200: 6000, 300: "Z" as const };

const rows: Row[] = [
  {
    name: "a leg whose supervisor and command run here with their start times is alive",
    leg: { pid: 100, pidStartTicks: 5000, commandPid: 200, commandStartTicks: 6000, startedAt: NOW - 30, heartbeatAt: NOW - 10 },
    supervisor: "alive", command: "alive", remote: false, age: 10,
  },
  {
    name: "a supervisor whose pid now belongs to another process (reused) is dead",
    leg: { pid: 100, pidStartTicks: 4999, commandPid: 200, commandStartTicks: 6000, startedAt: NOW - 30, heartbeatAt: NOW - 10 },
    supervisor: "dead", command: "alive", remote: false, age: 10,
  },
  {
    name: "a supervisor whose pid is gone is dead even with a fresh heartbeat",
    leg: { pid: 999, pidStartTicks: 1, startedAt: NOW - 30, heartbeatAt: NOW - 1 },
    supervisor: "dead", command: "unknown", remote: false, age: 1,
  },
  {
    name: "a zombie supervisor is dead",
    leg: { pid: 300, pidStartTicks: 1, startedAt: NOW - 30 },
    supervisor: "dead", command: "unknown", remote: false, age: 30,
  },
  {
    name: "a command whose pid was reused is dead while its supervisor lives",
    leg: { pid: 100, pidStartTicks: 5000, commandPid: 200, commandStartTicks: 1, startedAt: NOW - 30 },
    supervisor: "alive", command: "dead", remote: false, age: 30,
  },
  {
    name: "a leg of another host with a fresh heartbeat is alive and its command unknown",
    leg: { hostId: ELSEWHERE, pid: 999, pidStartTicks: 1, commandPid: 998, startedAt: NOW - 7200, heartbeatAt: NOW - 20 },
    supervisor: "alive", command: "unknown", remote: true, age: 20,
  },
  {
    name: "a leg of another host whose heartbeat is past the grace is dead",
    leg: { hostId: ELSEWHERE, pid: 100, pidStartTicks: 5000, startedAt: NOW - 7200, heartbeatAt: NOW - 601 },
    supervisor: "dead", command: "unknown", remote: true, age: 601,
  },
  {
    name: "a leg of another host exactly at the grace is still alive",
    leg: { hostId: ELSEWHERE, pid: 100, heartbeatAt: NOW - 600 },
    supervisor: "alive", command: "unknown", remote: true, age: 600,
  },
  {
    name: "a leg of another host with no heartbeat yet is judged from its start",
    leg: { hostId: ELSEWHERE, pid: 100, startedAt: NOW - 5 },
    supervisor: "alive", command: "unknown", remote: true, age: 5,
  },
  {
    name: "a pid recorded without a host id is never probed and judged by heartbeat",
    leg: { hostId: null, pid: 100, pidStartTicks: 5000, startedAt: NOW - 5000, heartbeatAt: NOW - 4000 },
    supervisor: "dead", command: "unknown", remote: true, age: 4000,
  },
  {
    name: "a leg with no pid and no heartbeat is unknown, aged from its start",
    leg: { startedAt: NOW - 90 },
    supervisor: "unknown", command: "unknown", remote: false, age: 90,
  },
  {
    name: "a leg with no markers and no times is unknown with no age",
    leg: {},
    supervisor: "unknown", command: "unknown", remote: false, age: null,
  },
  {
    name: "a leg here with a heartbeat but no pid is judged by its heartbeat",
    leg: { heartbeatAt: NOW - 700, startedAt: NOW - 800 },
    supervisor: "dead", command: "unknown", remote: false, age: 700,
  },
  {
    name: "a nonsense pid (0 or fractional) counts as no marker",
    leg: { pid: 0, commandPid: 2.5, startedAt: NOW - 3 },
    supervisor: "unknown", command: "unknown", remote: false, age: 3,
  },
  {
    name: "a negative pid, which kill would read as a group, counts as no marker",
    leg: { pid: -100, commandPid: -200, startedAt: NOW - 3 },
    supervisor: "unknown", command: "unknown", remote: false, age: 3,
  },
  {
    name: "an ended leg whose supervisor still runs its handlers is alive",
    leg: { pid: 100, pidStartTicks: 5000, startedAt: NOW - 30, heartbeatAt: NOW - 20, endedAt: NOW - 2 },
    supervisor: "alive", command: "unknown", remote: false, age: 20,
  },
];

describe("classifying a leg", () => {
  for (const row of rows) {
    test(row.name, () => {
      const result = classifyLeg({ markers: markers(row.leg), hostId: HERE, now: NOW, probe: tableProbe(processes) });
      expect({ supervisor: result.supervisor, command: result.command, remote: result.remote, age: result.ageSeconds }).toEqual({
        supervisor: row.supervisor,
        command: row.command,
        remote: row.remote,
        age: row.age,
      });
    });
  }

  test("a live leg is never old: its age runs from the last heartbeat, not its start", () => {
    const result = classifyLeg({
      markers: markers({ pid: 100, pidStartTicks: 5000, startedAt: NOW - 86_400, heartbeatAt: NOW - 12 }),
      hostId: HERE,
      now: NOW,
      probe: tableProbe(processes),
    });
    expect(result.ageSeconds).toBe(12);
    expect(result.evidence.lastSeenAt).toBe(NOW - 12);
  });

  test("a pid of another host is never probed", () => {
    const probe = tableProbe(processes);
    classifyLeg({ markers: markers({ hostId: ELSEWHERE, pid: 100, commandPid: 200, heartbeatAt: NOW }), hostId: HERE, now: NOW, probe });
    expect(probe.calls).toEqual([]);
  });

  test("the probe receives each pid with its own recorded start ticks", () => {
    const probe = tableProbe(processes);
    classifyLeg({
      markers: markers({ pid: 100, pidStartTicks: 5000, commandPid: 200, commandStartTicks: 6000 }),
      hostId: HERE,
      now: NOW,
      probe,
    });
    expect(probe.calls).toEqual([
      [100, 5000],
      [200, 6000],
    ]);
  });

  test("the evidence names what was seen", () => {
    const result = classifyLeg({
      markers: markers({ pid: 100, pidStartTicks: 4999, commandPid: 200, commandStartTicks: 6000, startedAt: NOW - 30, heartbeatAt: NOW - 10 }),
      hostId: HERE,
      now: NOW,
      probe: tableProbe(processes),
    });
    expect(result.evidence).toEqual({
      basis: "probe",
      legHostId: HERE,
      localHostId: HERE,
      pid: 100,
      pidStartTicks: 4999,
      supervisorProbe: "reused",
      commandPid: 200,
      commandStartTicks: 6000,
      commandProbe: "alive",
      startedAt: NOW - 30,
      heartbeatAt: NOW - 10,
      endedAt: null,
      lastSeenAt: NOW - 10,
      heartbeatGrace: DEFAULT_HEARTBEAT_GRACE_SECONDS,
    });
  });

  test("the heartbeat grace is an option", () => {
    const leg = markers({ hostId: ELSEWHERE, pid: 100, heartbeatAt: NOW - 120 });
    const probe = tableProbe(processes);
    expect(classifyLeg({ markers: leg, hostId: HERE, now: NOW, probe, options: { heartbeatGrace: 60 } }).supervisor).toBe("dead");
    expect(classifyLeg({ markers: leg, hostId: HERE, now: NOW, probe, options: { heartbeatGrace: 180 } }).supervisor).toBe("alive");
  });

  test("a negative or non-finite grace is refused", () => {
    const input = { markers: markers({}), hostId: HERE, now: NOW, probe: tableProbe(processes) };
    expect(() => classifyLeg({ ...input, options: { heartbeatGrace: -1 } })).toThrow(RangeError);
    expect(() => classifyLeg({ ...input, options: { heartbeatGrace: Number.NaN } })).toThrow(RangeError);
  });

  test("a heartbeat from a clock ahead of ours gives age zero, not a negative age", () => {
    const result = classifyLeg({ markers: markers({ hostId: ELSEWHERE, pid: 5, heartbeatAt: NOW + 40 }), hostId: HERE, now: NOW, probe: tableProbe({}) });
    expect(result.ageSeconds).toBe(0);
    expect(result.supervisor).toBe("alive");
  });

  test("with the real probe, this process is alive and a wrong start time is a reused pid", () => {
    const ticks = readStartTicks(process.pid);
    const probe: Probe = (pid, startTicks) => probeProcess(pid, startTicks);
    const here = currentHostId();
    const alive = classifyLeg({ markers: markers({ hostId: here, pid: process.pid, pidStartTicks: ticks }), hostId: here, now: NOW, probe });
    expect(alive.supervisor).toBe("alive");
    const reused = classifyLeg({ markers: markers({ hostId: here, pid: process.pid, pidStartTicks: (ticks ?? 0) + 1 }), hostId: here, now: NOW, probe });
    expect(reused.supervisor).toBe("dead");
    expect(reused.evidence.supervisorProbe).toBe("reused");
  });
});

describe("ageing a session without a leg", () => {
  test("it is aged from its last update", () => {
    expect(sessionAgeWithoutLeg(NOW - 3600, NOW)).toBe(3600);
  });

  test("an update in the future gives age zero", () => {
    expect(sessionAgeWithoutLeg(NOW + 5, NOW)).toBe(0);
  });
});
