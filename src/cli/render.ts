// Shared renderings of ledger rows for human and JSON output.

import type { AdminEventRow, EntityRow, TransitionRow } from "../ledger/rows.ts";
import { parseJsonColumn } from "./output.ts";
import { safeText } from "../util/text.ts";

const JSON_COLUMNS = new Set(["status_evidence_refs", "artifact_contract_json", "artifact_verification_json", "node_metadata", "evidence_refs", "metadata", "payload", "command"]);

/** A row with its JSON columns parsed, so scripts get objects rather than strings. */
export function entityJson(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k] = JSON_COLUMNS.has(k) ? parseJsonColumn(v) : v;
  return out;
}

export function transitionJson(row: TransitionRow): Record<string, unknown> {
  const { terminal_event, ...rest } = row;
  return { ...entityJson(rest), terminal_event: terminal_event === 1 };
}

export function adminEventJson(row: AdminEventRow): Record<string, unknown> {
  return entityJson(row as unknown as Record<string, unknown>);
}

export function isoTime(seconds: unknown): string {
  return typeof seconds === "number" ? new Date(seconds * 1000).toISOString().replace(/\.\d+Z$/, "Z") : "-";
}

export function describeEntity(row: EntityRow): string[] {
  return Object.entries(row)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${k}: ${k.endsWith("_at") && typeof v === "number" ? `${isoTime(v)} (${v})` : safeText(v)}`);
}

/** Words shown as a shell user would read them (quoted where needed); display only, never executed. */
export function shellWords(argv: readonly string[]): string {
  return argv.map((w) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`)).join(" ");
}

/** A stored argv column (JSON text) as an array, or null when it is not one. */
export function argvOf(value: unknown): string[] | null {
  const argv = parseJsonColumn(value);
  return Array.isArray(argv) ? argv.map(String) : null;
}
