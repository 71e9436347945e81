// Process identity on Linux (SPEC §8.5, §12.1): /proc start ticks and state, boot and host ids, and positive-evidence probes.
// The host's, not one leg's: legs record it, notify and the sweeps probe and signal by it, so it sits below them all.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { UsageError } from "../util/errors.ts";

export const PROC_ROOT = "/proc";

/** Where a machine id may live, in the order tried. */
export const MACHINE_ID_PATHS: readonly string[] = ["/etc/machine-id", "/var/lib/dbus/machine-id"];

/**
 * What a probe saw: the process with the recorded identity runs, is gone (or a zombie), or its pid now
 * names another process; "unverified": a process has that pid but nothing proves it is the recorded one
 * (no start ticks recorded, or /proc does not show them). Only "alive" may ever be signalled (§12.1, §18).
 */
export type ProbeResult = "alive" | "dead" | "reused" | "unverified";

/** Linux's PID_MAX_LIMIT (2^22): no process id is larger, so a recorded one that is cannot name a process. */
export const MAX_PID = 4_194_304;

/** A recorded pid that can name one process (1..MAX_PID); anything else (0, negative, 99999999999) is no identity at all. */
export function isUsablePid(pid: number | null | undefined): pid is number {
  return typeof pid === "number" && Number.isSafeInteger(pid) && pid > 0 && pid <= MAX_PID;
}

/** The identity a leg records for a process it owns (SPEC §8.5). */
export interface ProcessIdentity {
  pid: number;
  startTicks: number | null;
  bootId: string;
  hostId: string;
  /** The host's name, recorded beside hostId so views can name the host of a leg (§14). */
  hostName: string;
}

/** `process.kill`'s shape: injectable so the EPERM path can be exercised without a second user. */
export type SignalSender = (pid: number, signal: NodeJS.Signals | number) => boolean;

export interface ProbeOptions {
  procRoot?: string;
  sendSignal?: SignalSender;
}

export interface HostIdOptions {
  procRoot?: string;
  machineIdPaths?: readonly string[];
}

/** Fields of /proc/<pid>/stat from field 3 (state) on; the command name (field 2) may hold spaces and ')'. */
function readStatTail(pid: number | "self", procRoot: string): string[] | null {
  let text: string;
  try {
    text = fs.readFileSync(path.join(procRoot, String(pid), "stat"), "utf8");
  } catch {
    return null;
  }
  const close = text.lastIndexOf(")");
  if (close < 0) return null;
  return text.slice(close + 1).trim().split(/\s+/);
}

/** Field N of stat (1-based, as in proc(5)) from the tail that starts at field 3. */
function statField(tail: string[], field: number): string | undefined {
  return tail[field - 3];
}

function parseInteger(value: string | undefined): number | null {
  if (value === undefined || !/^-?\d+$/.test(value)) return null;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : null;
}

function assertPid(pid: number, what: string, min: number): void {
  if (!isUsablePid(pid) || pid < min) {
    throw new RangeError(`${what}: ${pid} is not a usable process id`);
  }
}

/** Start time of the process in clock ticks since boot (stat field 22), or null when it cannot be read. */
export function readStartTicks(pid: number, procRoot: string = PROC_ROOT): number | null {
  const tail = readStatTail(pid, procRoot);
  return tail ? parseInteger(statField(tail, 22)) : null;
}

/** Scheduler state letter (stat field 3), e.g. "S", "R", "Z"; null when it cannot be read. */
export function readProcState(pid: number, procRoot: string = PROC_ROOT): string | null {
  const tail = readStatTail(pid, procRoot);
  const state = tail ? statField(tail, 3) : undefined;
  return state && state.length > 0 ? state : null;
}

/** State letter, process group (field 5) and start ticks from one read of stat; null when it cannot be read. */
export function readProcStat(pid: number, procRoot: string = PROC_ROOT): { state: string; pgid: number; startTicks: number } | null {
  const tail = readStatTail(pid, procRoot);
  if (!tail) return null;
  const state = statField(tail, 3);
  const pgid = parseInteger(statField(tail, 5));
  const startTicks = parseInteger(statField(tail, 22));
  return state && pgid !== null && startTicks !== null ? { state, pgid, startTicks } : null;
}

/** The kernel's id of this boot; falls back to the boot time when /proc does not offer it. */
export function bootId(procRoot: string = PROC_ROOT): string {
  try {
    const id = fs.readFileSync(path.join(procRoot, "sys/kernel/random/boot_id"), "utf8").trim();
    if (id) return id;
  } catch {
    // Not Linux, or /proc is hidden: the boot time still separates boots.
  }
  return `boot-${Math.round(Date.now() / 1000 - os.uptime())}`;
}

/**
 * Operator and test settings that name this host instead of the machine: containers that share one
 * /etc/machine-id are different hosts to li only when each gets its own LI_HOST_ID, and a test plays
 * several hosts on one machine this way. The boot id is still appended (a pid means nothing after a reboot).
 */
export const HOST_ID_ENV = "LI_HOST_ID";
export const HOST_NAME_ENV = "LI_HOST_NAME";

/** What the environment says about this host; null: not set (an empty value is unset too). */
export interface HostOverrides {
  machineId: string | null;
  hostName: string | null;
}

/** No ':' (it separates the machine from the boot in a host id) and nothing a log line or a lock key would trip on. */
const HOST_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const MAX_HOST_NAME = 255;

/** Validates LI_HOST_ID / LI_HOST_NAME; a bad value is a UsageError naming the variable (exit 2). */
export function parseHostOverrides(env: Readonly<Record<string, string | undefined>>): HostOverrides {
  const id = env[HOST_ID_ENV] || null;
  if (id !== null && !HOST_ID_PATTERN.test(id)) {
    throw new UsageError(`${HOST_ID_ENV}: a host id is 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit (no ':')`);
  }
  const name = env[HOST_NAME_ENV]?.trim() || null;
  if (name !== null && (name.length > MAX_HOST_NAME || /[\u0000-\u001f\u007f]/.test(name))) {
    throw new UsageError(`${HOST_NAME_ENV}: a host name is at most ${MAX_HOST_NAME} characters, without control characters`);
  }
  return { machineId: id, hostName: name };
}

/** Read once per process: every place that decides "this host" (liveness, handlers, kill, logs) sees the same answer. */
let processOverrides: HostOverrides | null = null;
export function hostOverrides(): HostOverrides {
  return (processOverrides ??= parseHostOverrides(process.env));
}

/** The default places' answer, read once per process: a leg asks at setup and again at its push. */
let defaultMachineId: string | null = null;

/** This host's machine id: LI_HOST_ID, else the machine id (systemd/dbus), else the host name when neither file exists. */
export function machineId(paths: readonly string[] = MACHINE_ID_PATHS): string {
  if (paths === MACHINE_ID_PATHS) return (defaultMachineId ??= hostOverrides().machineId ?? readMachineId(paths));
  return readMachineId(paths);
}

/** This host's readable name: LI_HOST_NAME, else the system's host name. */
export function hostName(): string {
  return hostOverrides().hostName ?? os.hostname();
}

function readMachineId(paths: readonly string[]): string {
  for (const candidate of paths) {
    try {
      const id = fs.readFileSync(candidate, "utf8").trim();
      if (id) return id;
    } catch {
      // Try the next place.
    }
  }
  return os.hostname();
}

/** The machine part of a host id (`hostId()` is machine:boot; `machineId()` is the machine alone). */
export function machineOf(host: string): string {
  const colon = host.indexOf(":");
  return colon === -1 ? host : host.slice(0, colon);
}

/** Machine id and boot id: a pid is only meaningful on the same host within the same boot. */
export function hostId(options: HostIdOptions = {}): string {
  return `${machineId(options.machineIdPaths)}:${bootId(options.procRoot)}`;
}

/** The identity of the current process, as a leg records it. */
export function processIdentity(options: HostIdOptions = {}): ProcessIdentity {
  const procRoot = options.procRoot ?? PROC_ROOT;
  const boot = bootId(procRoot); // read once: hostId() would read it again
  return {
    pid: process.pid,
    startTicks: readStartTicks(process.pid, procRoot),
    bootId: boot,
    hostId: `${machineId(options.machineIdPaths)}:${boot}`,
    hostName: hostName(),
  };
}

function errorCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined;
}

/** true when the pid exists (ours or not), false on ESRCH. */
function exists(pid: number, sendSignal: SignalSender): boolean {
  try {
    sendSignal(pid, 0);
    return true;
  } catch (error) {
    const code = errorCode(error);
    if (code === "ESRCH") return false;
    if (code === "EPERM") return true;
    throw error;
  }
}

/**
 * Judges a recorded process on positive evidence only: gone or a zombie → "dead"; running with
 * another start time → "reused"; running with the recorded start time → "alive". A process that
 * exists without recorded start ticks (or whose start time cannot be read) is "unverified": it may
 * be anybody's, pid 1 included, so nothing may signal it.
 */
export function probeProcess(pid: number, expectedStartTicks: number | null, options: ProbeOptions = {}): ProbeResult {
  assertPid(pid, "probeProcess", 1);
  const procRoot = options.procRoot ?? PROC_ROOT;
  const sendSignal = options.sendSignal ?? process.kill.bind(process);
  if (!exists(pid, sendSignal)) return "dead";
  // On EPERM the process is not ours, but /proc still tells its state and start time.
  const tail = readStatTail(pid, procRoot);
  if (!tail) {
    // It exited between the two looks, or /proc hides it (hidepid): only a second signal can tell, and it cannot tell who it is.
    return exists(pid, sendSignal) ? "unverified" : "dead";
  }
  const state = statField(tail, 3);
  if (state === "Z" || state === "X" || state === "x") return "dead";
  const startTicks = parseInteger(statField(tail, 22));
  if (expectedStartTicks === null || startTicks === null) return "unverified";
  return startTicks === expectedStartTicks ? "alive" : "reused";
}

/**
 * true when our process group is the foreground group of our controlling terminal: Ctrl-C then
 * already reaches the command's group, and forwarding SIGINT would deliver it twice.
 */
export function isForegroundOfTerminal(procRoot: string = PROC_ROOT): boolean {
  const tail = readStatTail("self", procRoot);
  if (!tail) return false;
  const pgrp = parseInteger(statField(tail, 5));
  const tpgid = parseInteger(statField(tail, 8));
  return pgrp !== null && tpgid !== null && tpgid > 0 && pgrp === tpgid;
}

/**
 * Signals every process of a group; false when the group no longer exists. Refuses groups 0 and 1,
 * which would mean our own group and every process on the machine.
 */
export function killGroup(pgid: number, signal: NodeJS.Signals | number, sendSignal: SignalSender = process.kill.bind(process)): boolean {
  assertPid(pgid, "killGroup", 2);
  try {
    sendSignal(-pgid, signal);
    return true;
  } catch (error) {
    if (errorCode(error) === "ESRCH") return false;
    throw error;
  }
}
