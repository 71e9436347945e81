// Reads a JSON text column of a stored row defensively: anything unexpected reads as empty, never throws.

/**
 * The column as an object. SQL null, invalid JSON, a JSON string, number or list all read as `{}`
 * (ADR-0105 Verification 5): raising here would cost a leg its persistence.
 */
export function storedObject(stored: unknown): Record<string, unknown> {
  const parsed = parseStored(stored);
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
}

/** The column's objects when it holds a JSON list; anything else reads as `[]`. */
export function storedObjects(stored: unknown): Record<string, unknown>[] {
  const parsed = parseStored(stored);
  return Array.isArray(parsed) ? parsed.filter((e): e is Record<string, unknown> => typeof e === "object" && e !== null && !Array.isArray(e)) : [];
}

function parseStored(stored: unknown): unknown {
  if (typeof stored !== "string") return undefined;
  try {
    return JSON.parse(stored);
  } catch {
    return undefined;
  }
}
