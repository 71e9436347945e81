// Handlers whose deliverer died (SPEC §20): each handler carries LI_HANDLER_OWNER=<pid>.<start ticks> of the
// li process that started it, in its own process group; once that process is positively gone (dead, or its
// pid reused), the next watcher ends the handler with its group, so a killed watcher's handlers die with it.

import { environValue, processesOf } from "../host/environ.ts";
import { killGroup, PROC_ROOT, probeProcess, type ProbeResult } from "../host/proc.ts";
import { HANDLER_OWNER_ENV } from "./owner-env.ts";

const OWNER = /^([1-9][0-9]*)\.([0-9]+)$/;
/** At most this many handler processes are ended in one sweep. */
const MAX_ENDED = 256;

export interface OrphanHandler {
  pid: number;
  pgid: number;
  startTicks: number;
  owner: { pid: number; startTicks: number | null };
}

export interface OrphanOptions {
  procRoot?: string;
  /** Only this user's processes (their environment is readable only to them); default ours. */
  uid?: number;
  /** Never ended: the process that looks. */
  selfPid?: number;
  probe?: (pid: number, startTicks: number | null) => ProbeResult;
  sendSignal?: (pid: number, signal: NodeJS.Signals | number) => boolean;
}

/** The running processes of this user that carry a handler owner which is positively gone. */
export function findOrphanHandlers(options: OrphanOptions = {}): OrphanHandler[] {
  const procRoot = options.procRoot ?? PROC_ROOT;
  const uid = options.uid ?? process.getuid?.() ?? -1;
  const selfPid = options.selfPid ?? process.pid;
  const probe = options.probe ?? ((pid, ticks) => probeProcess(pid, ticks, { procRoot }));
  const verdicts = new Map<string, boolean>();
  const found: OrphanHandler[] = [];
  for (const { pid, stat, environ: readOwnEnviron } of processesOf(uid, procRoot, selfPid)) {
    const environ = readOwnEnviron();
    const value = environ ? environValue(environ, HANDLER_OWNER_ENV) : null;
    const match = value === null ? null : OWNER.exec(value);
    if (!match) continue;
    const owner = { pid: Number(match[1]), startTicks: Number(match[2]) === 0 ? null : Number(match[2]) };
    if (owner.pid === selfPid) continue;
    let gone = verdicts.get(value!);
    if (gone === undefined) {
      const seen = probe(owner.pid, owner.startTicks);
      // Positive evidence only: an owner whose start time was never known stays unjudged.
      gone = owner.startTicks !== null && (seen === "dead" || seen === "reused");
      verdicts.set(value!, gone);
    }
    if (gone) found.push({ pid, pgid: stat.pgid, startTicks: stat.startTicks, owner });
    if (found.length >= MAX_ENDED) break;
  }
  return found;
}

/**
 * Ends every orphaned handler: its group (a handler leads its own) and the process itself, each
 * re-probed by pid and start ticks just before the signal. Returns what was ended.
 */
export function endOrphanHandlers(options: OrphanOptions = {}): OrphanHandler[] {
  const probe = options.probe ?? ((pid, ticks) => probeProcess(pid, ticks, options.procRoot ? { procRoot: options.procRoot } : {}));
  const send = options.sendSignal ?? process.kill.bind(process);
  const ended: OrphanHandler[] = [];
  const groups = new Set<number>();
  for (const handler of findOrphanHandlers(options)) {
    if (probe(handler.pid, handler.startTicks) !== "alive") continue;
    try {
      if (handler.pgid === handler.pid && handler.pgid > 1 && !groups.has(handler.pgid)) {
        groups.add(handler.pgid);
        killGroup(handler.pgid, "SIGKILL", send);
      } else if (!groups.has(handler.pgid)) {
        send(handler.pid, "SIGKILL");
      }
      ended.push(handler);
    } catch {
      // Gone meanwhile.
    }
  }
  return ended;
}
