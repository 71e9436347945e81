// The watcher's log: one line per action, as `TIME ACTION key=value…` text or one JSON object; handler argv never appears.

import { safeText } from "../util/text.ts";

export type LogFormat = "text" | "json";
export const LOG_FORMATS: readonly LogFormat[] = ["text", "json"];

/** One action: what happened and its fields (ids, counts, states, short error texts). */
export interface LogEntry {
  action: string;
  [field: string]: unknown;
}

export type WatchLog = (entry: LogEntry) => void;

/** Longest text a field may print: error texts may quote handler output or paths. */
const MAX_TEXT = 200;

function clip(value: string): string {
  const oneLine = value.replace(/\s*\n\s*/g, " ");
  return oneLine.length > MAX_TEXT ? `${oneLine.slice(0, MAX_TEXT - 1)}…` : oneLine;
}

/** Fields that would carry a handler's argv are dropped, whoever passes them (§9.2: never print argument values in full). */
const SECRET_FIELDS: ReadonlySet<string> = new Set(["argv", "command", "template"]);

function sanitize(entry: LogEntry): LogEntry {
  const out: LogEntry = { action: entry.action };
  for (const [key, value] of Object.entries(entry)) {
    if (key === "action" || SECRET_FIELDS.has(key) || value === undefined) continue;
    out[key] = typeof value === "string" ? clip(value) : value;
  }
  return out;
}

function textValue(value: unknown): string {
  if (value === null) return "-";
  // Quoted when it holds a space, quote or `=`; escaped always (§18): a value can hold ESC or C1 codes JSON leaves raw.
  if (typeof value === "string") return safeText(/^[^\s"=]+$/.test(value) ? value : JSON.stringify(value));
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

/** Formats one entry at `at` (no trailing newline). */
export function formatLogLine(entry: LogEntry, format: LogFormat, at: Date): string {
  const clean = sanitize(entry);
  const time = at.toISOString();
  if (format === "json") return JSON.stringify({ time, ...clean });
  const { action, ...fields } = clean;
  return [time, action, ...Object.entries(fields).map(([k, v]) => `${k}=${textValue(v)}`)].join(" ");
}

/** A log that writes each entry as one line through `write`. */
export function createLog(format: LogFormat, write: (line: string) => void, clock: () => Date = () => new Date()): WatchLog {
  return (entry) => write(formatLogLine(entry, format, clock()) + "\n");
}
