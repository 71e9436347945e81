// Splits `li wait`'s id arguments: space- or comma-separated, trimmed, de-duplicated in first-seen order (§11).

export function parseWaitIds(args: readonly string[]): string[] {
  const seen = new Set<string>();
  for (const arg of args) {
    for (const piece of arg.split(/[\s,]+/)) {
      const id = piece.trim();
      if (id) seen.add(id);
    }
  }
  return [...seen];
}
