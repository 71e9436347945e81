// The password file libpq reads (`PGPASSFILE`, else `~/.pgpass`): the place for a ledger's password that
// is neither a command line (public to every local user) nor an environment every child inherits (§18).
// libpq's rules: `host:port:database:user:password` lines, `*` matching anything in the first four
// fields, `\` escaping `:` and `\`, `#` comments, the first matching line wins, and a file that group
// or others may read is ignored.

import { readUntrustedFile } from "../../util/untrusted-file.ts";

export interface PassfileTarget {
  host: string;
  port: number;
  database: string;
  user: string;
}

/** Where the file is: PGPASSFILE, else $HOME/.pgpass; null without either. */
export function passfilePath(env: Record<string, string | undefined>): string | null {
  if (env.PGPASSFILE) return env.PGPASSFILE;
  return env.HOME ? `${env.HOME.replace(/\/$/, "")}/.pgpass` : null;
}

/** The fields of one line, unescaped; null for a comment, a blank line or a line without five fields. */
function fieldsOf(line: string): string[] | null {
  if (line.startsWith("#") || line.trim() === "") return null;
  const fields: string[] = [];
  let current = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "\\" && i + 1 < line.length) current += line[++i];
    else if (c === ":" && fields.length < 4) {
      fields.push(current);
      current = "";
    } else current += c;
  }
  fields.push(current);
  return fields.length === 5 ? fields : null;
}

/**
 * The password for `target` from the password file, or undefined: no file, none matching, or a file li
 * will not read (not a regular file of this user, or readable by group or others: libpq ignores it too).
 */
export function passfilePassword(target: PassfileTarget, env: Record<string, string | undefined>): string | undefined {
  const file = passfilePath(env);
  if (file === null) return undefined;
  const read = readUntrustedFile(file);
  if (!read.ok) return undefined;
  if (read.stat.uid !== (process.getuid?.() ?? read.stat.uid) || (read.stat.mode & 0o077) !== 0) return undefined;
  // A socket directory is matched as libpq matches it: by the name localhost.
  const host = target.host.startsWith("/") ? "localhost" : target.host;
  const wanted = [host, String(target.port), target.database, target.user];
  for (const line of read.text.split(/\r?\n/)) {
    const fields = fieldsOf(line);
    if (fields === null) continue;
    if (wanted.every((value, i) => fields[i] === "*" || fields[i] === value)) return fields[4] || undefined;
  }
  return undefined;
}
