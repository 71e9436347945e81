// Whose a path is (SPEC §18 "Other users"): li uses a home, ledger, runs root, spool or settings file only
// when it belongs to the current user (or root) and nobody else may write it, as ssh and git's
// safe.directory do. Otherwise another local user could plant handlers, settings or a ledger li trusts.

// node:fs loads only when a check needs more than a stat (Bun.file's stat serves the common case): its first
// import costs ~1 ms of a read-only command's start-up in the compiled binary (docs/benchmarks.md).
const nodeFs = (): typeof import("node:fs") => require("node:fs");

/** What a check needs of the system; injectable so a unit test can stand for a file system without owners. */
export interface OwnershipProbe {
  /** The user li runs as. */
  readonly uid: number;
  /** stat (following symlinks: `~/.li` may be a link to the user's own directory); null when nothing is there. */
  stat(path: string): { uid: number; mode: number } | null;
  /** statfs(2)'s f_type of the file system holding `path`; null when unknown. */
  fsType(path: string): number | null;
}

/**
 * File systems that keep no owner or mode of their own: every file shows the mount's `uid=` and
 * `umask=` options (FAT, exFAT, NTFS through FUSE, SMB/CIFS, VirtualBox shared folders). On them an
 * owner or mode check says nothing, so li accepts what it sees there — with a warning, never in silence.
 */
export const FILE_SYSTEMS_WITHOUT_OWNERS: ReadonlyMap<number, string> = new Map([
  [0x4d44, "FAT"],
  [0x2011bab0, "exFAT"],
  [0x5346544e, "NTFS"],
  [0x65735546, "FUSE"],
  [0xff534d42, "CIFS"],
  [0xfe534d42, "SMB2"],
  [0x786f4256, "VirtualBox shared folder"],
]);

export const systemProbe: OwnershipProbe = {
  uid: process.getuid?.() ?? 0,
  stat(path) {
    try {
      const s = nodeFs().statSync(path);
      return { uid: s.uid, mode: s.mode };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw error;
    }
  },
  fsType(path) {
    try {
      return Number(nodeFs().statfsSync(path).type);
    } catch {
      return null;
    }
  },
};

/** The outcome of one check: fine; fine but unverifiable (say so); or refused, with the one line that says why. */
export type OwnershipVerdict = { ok: true; warning?: string } | { ok: false; problem: string };

/** Mode bits that let someone other than the owner write: group and others. */
const WRITABLE_BY_OTHERS = 0o022;

/**
 * Whether `path` (called `what` in messages: "LI_HOME", "the ledger") may be used. Nothing there is
 * fine: li creates it owner-only itself.
 */
export function checkOwnership(path: string, what: string, probe: OwnershipProbe = systemProbe): OwnershipVerdict {
  return judgeOwnership(path, what, probe.stat(path), probe);
}

/** The same judgement of a stat the caller already has (an fstat of the file it opened). */
export function judgeOwnership(path: string, what: string, stat: { uid: number; mode: number } | null, probe: OwnershipProbe = systemProbe): OwnershipVerdict {
  if (stat === null) return { ok: true };
  const ownerOk = stat.uid === probe.uid || stat.uid === 0;
  const modeOk = (stat.mode & WRITABLE_BY_OTHERS) === 0;
  if (ownerOk && modeOk) return { ok: true };
  const facts = `owned by ${ownerName(stat.uid)}, mode ${modeText(stat.mode)}`;
  const fsName = FILE_SYSTEMS_WITHOUT_OWNERS.get(probe.fsType(path) ?? -1);
  if (fsName !== undefined) {
    return { ok: true, warning: `warning: ${what} ${path} is on a ${fsName} file system, which keeps no owner or mode of its own (${facts}): li cannot tell who else may change it` };
  }
  const why = ownerOk ? "writable by group or others" : "another user's";
  return { ok: false, problem: `${what} ${path} is ${why} (${facts}); li uses only paths of its own user (or root) that no one else can write` };
}

/** checkOwnership with Bun's own stat, which needs no node:fs on the path every command takes. */
export async function checkOwnershipAsync(path: string, what: string, probe: OwnershipProbe = systemProbe): Promise<OwnershipVerdict> {
  let stat: { uid: number; mode: number } | null;
  try {
    const s = await Bun.file(path).stat();
    stat = { uid: s.uid, mode: s.mode };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
    stat = null;
  }
  return judgeOwnership(path, what, stat, probe);
}

/** Like checkOwnership, throwing the refusal (exit 78) and handing a warning to `warn`. */
export function requireOwnership(path: string, what: string, warn: (line: string) => void, probe: OwnershipProbe = systemProbe): void {
  const verdict = checkOwnership(path, what, probe);
  if (!verdict.ok) throw new ForeignPathError(verdict.problem);
  if (verdict.warning !== undefined) warn(verdict.warning);
}

/** A path li will not use because another user could have made or changed it (exit 78, like a ledger li cannot open). */
export class ForeignPathError extends Error {
  override readonly name = "ForeignPathError";
  readonly exitCode = 78;
}

/** `0755`, the permission bits only. */
export function modeText(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, "0")}`;
}

let users: Map<number, string> | undefined;

/** `mallory (uid 1001)`: the name from /etc/passwd when it has one (read only on this, the refusing, path). */
export function ownerName(uid: number): string {
  if (users === undefined) {
    users = new Map();
    try {
      for (const line of nodeFs().readFileSync("/etc/passwd", "utf8").split("\n")) {
        const [name, , id] = line.split(":");
        if (name && id && /^\d+$/.test(id) && !users.has(Number(id))) users.set(Number(id), name);
      }
    } catch {
      // No passwd file (a minimal container): the uid alone names the owner.
    }
  }
  const name = users.get(uid);
  return name === undefined ? `uid ${uid}` : `${name} (uid ${uid})`;
}
