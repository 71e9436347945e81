// A leg's copy of its output in the stream file (SPEC §20): it stops, with one warning, before li's own
// records lose their room on the disk, or once it holds `agent.stream_max`; the passthrough never stops.

import fs from "node:fs";
import type { Sink } from "./capture.ts";
import { formatSize, type SizeOrShare } from "../util/size.ts";

/** `agent.stream_reserve` when unset: 64 MiB, or 1 % of the file system when that is smaller. */
export const DEFAULT_STREAM_RESERVE_BYTES = 64 * 1024 * 1024;
export const DEFAULT_STREAM_RESERVE_PERCENT = 1;
/** Bytes written between two looks at the free space: a leg overshoots its reserve by at most this much. */
export const CHECK_EVERY_BYTES = 1024 * 1024;

export interface StreamLimits {
  /** Free space the copy leaves (`agent.stream_reserve`); null = the default. */
  reserve: SizeOrShare | null;
  /** Bytes the copy may hold (`agent.stream_max`); null = no cap. */
  maxBytes: number | null;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = Object.freeze({ reserve: null, maxBytes: null });

export interface DiskSpace {
  /** Bytes an unprivileged writer may still use. */
  free: number;
  /** The file system's size. */
  total: number;
}

/** The free space kept on a file system of `total` bytes. */
export function reserveBytes(reserve: SizeOrShare | null, total: number): number {
  if (reserve === null) return Math.min(DEFAULT_STREAM_RESERVE_BYTES, Math.floor((total * DEFAULT_STREAM_RESERVE_PERCENT) / 100));
  return "bytes" in reserve ? reserve.bytes : Math.floor((total * reserve.percent) / 100);
}

/** statfs of the file system holding `file`. */
export function diskSpaceOf(file: string): DiskSpace {
  const s = fs.statfsSync(file);
  return { free: Number(s.bavail) * Number(s.bsize), total: Number(s.blocks) * Number(s.bsize) };
}

/**
 * The stream file's copy of the output. It stops for good, with one warning, when a chunk would leave
 * less than the reserve free, would pass the cap, or the file refuses it (disk full, I/O error); the
 * passthrough and the captured tail go on, so the command never blocks or dies because li's copy stopped.
 */
export function streamSink(fd: number | null, file: string, log: (line: string) => void, limits: StreamLimits = DEFAULT_STREAM_LIMITS, space: () => DiskSpace = () => diskSpaceOf(file)): Sink {
  let stopped = fd === null;
  let written = 0;
  // Bytes that may be written before the free space is looked at again.
  let allowance = 0;
  const stop = (why: string) => {
    stopped = true;
    log(`warning: ${why}; the output still passes through, the rest is not kept`);
  };
  return (chunk) => {
    if (stopped) return;
    if (limits.maxBytes !== null && written + chunk.byteLength > limits.maxBytes) {
      return stop(`the stream file ${file} reached agent.stream_max (${formatSize(limits.maxBytes)})`);
    }
    if (chunk.byteLength > allowance) {
      let disk: DiskSpace | null = null;
      try {
        disk = space();
      } catch {
        // Unknown free space: the write itself still says when the disk is full.
      }
      const reserve = disk === null ? 0 : reserveBytes(limits.reserve, disk.total);
      // No reserve (`agent.stream_reserve: 0`): the copy runs until the disk itself refuses it.
      allowance = disk === null ? CHECK_EVERY_BYTES : reserve === 0 ? Number.MAX_SAFE_INTEGER : Math.min(disk.free - reserve, CHECK_EVERY_BYTES);
      if (chunk.byteLength > allowance) {
        return stop(`the stream file ${file} stops here: its disk keeps ${formatSize(reserve)} free for li's own records (agent.stream_reserve)`);
      }
    }
    try {
      for (let at = 0; at < chunk.byteLength; ) at += fs.writeSync(fd!, chunk, at);
      written += chunk.byteLength;
      allowance -= chunk.byteLength;
    } catch (error) {
      stop(`cannot write the stream file ${file} (${error instanceof Error ? error.message : String(error)})`);
    }
  };
}
