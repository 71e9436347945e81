// Path containment (SPEC §7, §18): whether a path stays under a root once symlinks are followed. Its own
// module because a leg checks it before its command starts, without loading the whole contract module.

import fs from "node:fs";
import path from "node:path";

/** Symlink hops followed before a location counts as unresolvable, as the kernel's own limit. */
const MAX_SYMLINK_HOPS = 40;

/** True when `child` is `parent` or lies below it (both absolute, already resolved). */
export function isWithin(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/**
 * True when `target`, once every symlink along it is followed (including a dangling last one,
 * which a write would follow), stays under the real location of `root`. Neither needs to exist.
 */
export function isContained(root: string, target: string): boolean {
  const rootReal = realLocation(path.resolve(root));
  const targetReal = realLocation(path.resolve(target));
  return rootReal !== null && targetReal !== null && isWithin(rootReal, targetReal);
}

/**
 * The real location of an absolute path whose tail may not exist yet: the real path of the
 * longest existing prefix joined with the rest. Null when symlinks loop.
 */
export function realLocation(absolute: string, hops = 0): string | null {
  if (hops > MAX_SYMLINK_HOPS) return null;
  const rest: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      return path.join(fs.realpathSync(current), ...rest);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ELOOP") return null;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw err;
    }
    const link = readLinkOrNull(current);
    // A dangling symlink: follow it by hand, as a write through it would (its parent exists, so realpath works there).
    if (link !== null) return realLocation(path.resolve(fs.realpathSync(path.dirname(current)), link, ...rest), hops + 1);
    const parent = path.dirname(current);
    if (parent === current) return path.join(current, ...rest);
    rest.unshift(path.basename(current));
    current = parent;
  }
}

function readLinkOrNull(p: string): string | null {
  try {
    return fs.readlinkSync(p);
  } catch {
    return null;
  }
}
