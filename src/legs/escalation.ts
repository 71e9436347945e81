// Reading LI_ESCALATE_FILE (SPEC §8.2 step 7, §18): the command's JSON lines, read bounded, kept bounded as evidence.

import { readUntrustedFile } from "../util/untrusted-file.ts";

/** At most this many entries are kept; the rest are counted (§18). */
export const MAX_ESCALATION_ENTRIES = 64;
/** An entry's reason (or text) is cut to this many UTF-8 bytes (4 KiB); an entry whose line is longer keeps only that. */
export const MAX_ESCALATION_REASON = 4096;

export type EscalationEntry = Record<string, unknown>;

export interface Escalations {
  /** What the command wrote, bounded: the first MAX_ESCALATION_ENTRIES entries, each small. */
  entries: EscalationEntry[];
  /** Entries past the first MAX_ESCALATION_ENTRIES, counted and not kept. */
  dropped: number;
  /** Set when something stood at the path that li would not read (a symlink, a FIFO, too large): it is itself evidence. */
  refused: string | null;
}

/** JSON lines of LI_ESCALATE_FILE; a line that is not a JSON object is kept as its text. No file: no entries. */
export function readEscalations(file: string): Escalations {
  const read = readUntrustedFile(file);
  if (!read.ok) return { entries: [], dropped: 0, refused: read.missing ? null : `escalation file ${file} ${read.problem}` };
  const lines = read.text.split("\n").filter((line) => line.trim() !== "");
  return {
    entries: lines.slice(0, MAX_ESCALATION_ENTRIES).map(parseLine),
    dropped: Math.max(0, lines.length - MAX_ESCALATION_ENTRIES),
    refused: null,
  };
}

function parseLine(line: string): EscalationEntry {
  let entry: EscalationEntry;
  try {
    const value: unknown = JSON.parse(line);
    entry = typeof value === "object" && value !== null && !Array.isArray(value) ? (value as EscalationEntry) : { text: line };
  } catch {
    entry = { text: line };
  }
  return bounded(entry, line);
}

/** An entry small enough to store twice and print: as written when its line is short, else only its cut reason (or text). */
function bounded(entry: EscalationEntry, line: string): EscalationEntry {
  const lineBytes = utf8.encode(line);
  if (lineBytes.length <= MAX_ESCALATION_REASON) return entry;
  const reason = typeof entry.reason === "string" ? entry.reason : typeof entry.text === "string" ? entry.text : line;
  const key = typeof entry.reason === "string" ? "reason" : "text";
  return { [key]: cutUtf8(reason, MAX_ESCALATION_REASON), truncated: true, original_length: lineBytes.length };
}

const utf8 = new TextEncoder();

/** The longest prefix of `text` that fits in `maxBytes` of UTF-8, cut on a character boundary (never half a character). */
export function cutUtf8(text: string, maxBytes: number): string {
  const bytes = utf8.encode(text);
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--; // back off continuation bytes to a character's start
  return new TextDecoder().decode(bytes.subarray(0, end));
}

/** The evidence entries of an escalation: one per kept entry, then a note of what was dropped or refused. */
export function escalationEvidence(e: Escalations): EscalationEntry[] {
  return [
    ...e.entries.map((entry) => ({ kind: "escalation", ...entry })),
    ...(e.dropped > 0 ? [{ kind: "escalation_dropped", dropped: e.dropped, kept: e.entries.length }] : []),
    ...(e.refused !== null ? [{ kind: "escalation_refused", problem: e.refused }] : []),
  ];
}
