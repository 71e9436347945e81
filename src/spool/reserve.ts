// A leg's room in the spool (SPEC §20): taken at setup as a file of the size an entry needs and
// rewritten in place when the leg spools its outcome, so a disk that filled meanwhile still takes it.

import fs from "node:fs";
import path from "node:path";
import { ENTRY_ID, newEntryId } from "./entry.ts";
import { spoolKey } from "./mac.ts";
import { entryPath } from "./store.ts";
import type { SpoolReservation } from "../legs/teardown/state.ts";

/** An entry holds the 64 KiB message tail (as JSON) and the evidence: almost all fit in this. */
export const RESERVED_ENTRY_BYTES = 256 * 1024;

/** `<entry id>.reserved-<owner pid>-<owner start ticks>`: never listed as an entry (no `.json`). */
const RESERVATION_NAME = new RegExp(`^(${ENTRY_ID.source.slice(1, -1)})\\.reserved-(\\d+)-(\\d+)$`);


/** The process that holds a reservation: the leg's supervisor. */
export interface ReservationOwner {
  pid: number;
  startTicks: number | null;
}

/** Takes `bytes` in the spool for one entry. Throws when the disk refuses (the leg goes on without it). */
export function reserveEntry(dir: string, owner: ReservationOwner, nowSeconds: number, bytes: number = RESERVED_ENTRY_BYTES): SpoolReservation {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  // The key that signs the entry is made now too, while the disk has room (§18); the spool write retries it.
  spoolKey(dir, { create: true });
  const id = newEntryId(nowSeconds);
  const file = path.join(dir, `${id}.reserved-${owner.pid}-${owner.startTicks ?? 0}`);
  const fd = fs.openSync(file, "wx", 0o600);
  try {
    // Written, not only sized (a sparse file holds no blocks): the space is really taken now.
    const block = Buffer.alloc(Math.min(bytes, 64 * 1024), 0x20);
    for (let at = 0; at < bytes; ) at += fs.writeSync(fd, block, 0, Math.min(block.length, bytes - at));
  } catch (error) {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
    throw error;
  }
  fs.closeSync(fd);
  return { id, file, release: () => fs.rmSync(file, { force: true }) };
}

/**
 * Writes the entry's text over the reserved space, fsyncs it and renames it to the entry's name (then
 * fsyncs the directory): a reader sees no entry or a whole one. Returns the entry's file.
 */
export function fillReservation(dir: string, r: SpoolReservation, text: string): string {
  const data = Buffer.from(text);
  const fd = fs.openSync(r.file, "r+");
  try {
    for (let at = 0; at < data.length; ) at += fs.writeSync(fd, data, at, data.length - at, at);
    fs.ftruncateSync(fd, data.length);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  const target = entryPath(dir, r.id);
  fs.renameSync(r.file, target);
  const dirFd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(dirFd);
  } finally {
    fs.closeSync(dirFd);
  }
  return target;
}

/**
 * Removes the reservations of legs killed before they could release them: each names its owner, and
 * one whose owner `isGone` (dead, or its pid reused) is deleted. Returns the files removed.
 */
export function sweepReservations(dir: string, isGone: (owner: ReservationOwner) => boolean): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const match = RESERVATION_NAME.exec(name);
    if (!match) continue;
    const ticks = Number(match[3]);
    if (!isGone({ pid: Number(match[2]), startTicks: ticks === 0 ? null : ticks })) continue;
    const file = path.join(dir, name);
    fs.rmSync(file, { force: true });
    removed.push(file);
  }
  return removed;
}
