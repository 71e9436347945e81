// Which sessions have an outcome waiting in this host's spool (SPEC §17: `li show` and `li ls` mark
// them). For the read-only commands' start-up path: no `node:*` module, nothing read when the spool is
// absent, and an entry is only peeked at for its session id (replay validates it fully).

import { ENTRY_ID, spoolDirOf } from "./entry.ts";
import { SPOOL_ENTRY_LIMIT } from "./limits.ts";

/** Session id → the spool files naming it, oldest first. A missing or unreadable spool holds none. */
export async function spooledSessions(liHome: string): Promise<Map<string, string[]>> {
  const dir = spoolDirOf(liHome);
  const found = new Map<string, string[]>();
  let names: string[];
  try {
    // Regular files only, symlinks not followed: a planted link is never opened.
    names = [...new Bun.Glob("*.json").scanSync({ cwd: dir, onlyFiles: true, followSymlinks: false })].filter((n) => ENTRY_ID.test(n.slice(0, -5))).sort();
  } catch {
    return found;
  }
  for (const name of names) {
    const file = `${dir}/${name}`;
    try {
      const blob = Bun.file(file);
      if (blob.size > SPOOL_ENTRY_LIMIT) continue;
      const entry = JSON.parse(await blob.text()) as { session_id?: unknown };
      if (typeof entry.session_id !== "string") continue;
      found.set(entry.session_id, [...(found.get(entry.session_id) ?? []), file]);
    } catch {
      // Half written or not ours: the replay reports it.
    }
  }
  return found;
}
