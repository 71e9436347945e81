// A leg's output for the page, by byte offset: what `li logs` reads, a chunk at a time, so a running leg
// is followed by asking again from the offset it reached.
import type { OpenedReads } from "../../ledger/reads.ts";
import { resolveOneIn, WAIT_LOOKUP_ORDER } from "../../ledger/resolve.ts";
import { locateLegOutput } from "../../logs/locate.ts";
import { LogFileError, StreamReader } from "../../logs/read.ts";
import { UnknownIdError, UsageError } from "../../util/errors.ts";

/** At most this much text per answer: the page asks again from the new offset. */
const MAX_CHUNK = 256 * 1024;

export interface LegOutputChunk {
  session_id: string;
  seq: number;
  run_id: string;
  status: string;
  /** True while the leg runs: the page asks again for more. */
  running: boolean;
  /** Per stream file: the text from `offset` to `next_offset`. */
  files: { file: string; offset: number; next_offset: number; text: string }[];
  error: string | null;
}

/** `leg`: its seq (default the current leg); `offsets`: one per stream file, comma-separated (default 0). */
export async function legOutputChunk(opened: OpenedReads, id: string, legParam: string | null, offsetsParam: string | null): Promise<LegOutputChunk> {
  const { reads } = opened;
  const target = await resolveOneIn(reads, id, WAIT_LOOKUP_ORDER);
  if (target.kind !== "session") throw new UsageError(`${id} is a ${target.kind}, not a session: only sessions have output`);
  const [row, legs, branches] = await Promise.all([reads.entityRow("session", target.id), reads.legsOf(target.id), reads.branchesOf(target.id)]);
  if (!row) throw new UnknownIdError(id);
  const seq = legParam === null || legParam === "" ? null : Number(legParam);
  const leg = seq === null ? (legs.find((l) => l.id === row.current_leg_id) ?? legs.at(-1)) : legs.find((l) => l.seq === seq);
  if (!leg) throw new UnknownIdError(seq === null ? id : `${id} leg ${legParam}`);
  const offsets = (offsetsParam ?? "").split(",").map((s) => (/^\d+$/.test(s) ? Number(s) : 0));
  const base = { session_id: target.id, seq: leg.seq, run_id: leg.run_id, status: leg.status, running: leg.ended_at === null };
  const out = locateLegOutput(leg, branches);
  if (!out.ok) return { ...base, files: [], error: out.problem };
  const files: LegOutputChunk["files"] = [];
  const decoder = new TextDecoder();
  for (const [i, file] of out.files.entries()) {
    let reader: StreamReader;
    try {
      reader = StreamReader.open(file);
    } catch (error) {
      if (error instanceof LogFileError) return { ...base, files, error: error.message };
      throw error;
    }
    try {
      const offset = offsets[i] ?? 0;
      reader.offset = offset;
      const parts: Uint8Array[] = [];
      let size = 0;
      reader.drain((bytes) => {
        if (size >= MAX_CHUNK) return;
        parts.push(bytes.slice(0, MAX_CHUNK - size));
        size += Math.min(bytes.length, MAX_CHUNK - size);
      });
      // Stop before a character the chunk cut in two: the next answer starts with it.
      const all = Buffer.concat(parts);
      let end = size;
      let j = size - 1;
      let continuation = 0;
      while (j >= 0 && continuation < 3 && (all[j]! & 0xc0) === 0x80) {
        j--;
        continuation++;
      }
      if (j >= 0) {
        const lead = all[j]!;
        const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
        if (need > continuation + 1) end = j;
      }
      files.push({ file, offset, next_offset: offset + end, text: decoder.decode(all.subarray(0, end)) });
    } finally {
      reader.close();
    }
  }
  return { ...base, files, error: null };
}
