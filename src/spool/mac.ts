// The spool's proof of origin (SPEC §18): every entry carries an HMAC-SHA256 of its text, keyed by a secret
// that li keeps in `$LI_HOME/spool.key` (created 0600 at first use). Replay applies only entries whose MAC
// it can check: a file someone wrote by hand into the spool, or changed there, is set aside instead.

import fs from "node:fs";
import path from "node:path";
import { readUntrustedFile } from "../util/untrusted-file.ts";

/**
 * node:crypto, loaded when a MAC is made or checked (a spool write, a replay) or a key made: every
 * recorded leg reads the key when it reserves its room, and loading node:crypto costs ~3 ms of CPU.
 */
const nodeCrypto = (): typeof import("node:crypto") => require("node:crypto");

/** Where the key of the spool `spoolDir` lives: beside it, in LI_HOME. */
export function spoolKeyPath(spoolDir: string): string {
  return path.join(path.dirname(spoolDir), "spool.key");
}

const KEY_TEXT = /^[0-9a-f]{64}\n?$/;

export type SpoolKey = { ok: true; key: Buffer } | { ok: false; problem: string };

/** The key, made (32 random bytes, hex, 0600) when `create` and there is none yet. */
export function spoolKey(spoolDir: string, options: { create: boolean }): SpoolKey {
  const file = spoolKeyPath(spoolDir);
  if (options.create) {
    try {
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      const fd = fs.openSync(file, "wx", 0o600);
      try {
        fs.writeSync(fd, `${nodeCrypto().randomBytes(32).toString("hex")}\n`);
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    } catch (error) {
      // EEXIST: made before (or by a racing leg): read below, like any other.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") return { ok: false, problem: `cannot create ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}` };
    }
  }
  const read = readUntrustedFile(file, 1024);
  if (!read.ok) return { ok: false, problem: read.missing ? `${file} does not exist` : `${file} ${read.problem}` };
  const uid = process.getuid?.() ?? 0;
  if (read.stat.uid !== uid || (read.stat.mode & 0o077) !== 0) return { ok: false, problem: `${file} is not this user's own 0600 file` };
  if (!KEY_TEXT.test(read.text)) return { ok: false, problem: `${file} is not a spool key` };
  return { ok: true, key: Buffer.from(read.text.slice(0, 64), "hex") };
}

/** The MAC of an entry's text without its `mac` field, hex. */
export function macOf(key: Buffer, body: string): string {
  return nodeCrypto().createHmac("sha256", key).update(body).digest("hex");
}

/** `body` (an entry's JSON, an object) with its MAC added as the last field. */
export function withMac(key: Buffer, body: string): string {
  if (!body.endsWith("}")) throw new Error("a spool entry is a JSON object");
  return `${body.slice(0, -1)},"mac":"${macOf(key, body)}"}`;
}

/** Whether `parsed` (the entry's JSON, parsed) carries the MAC of the rest of it; its `mac` field is removed. */
export function verifyMac(key: Buffer, parsed: Record<string, unknown>): boolean {
  const mac = parsed.mac;
  if (typeof mac !== "string" || !/^[0-9a-f]{64}$/.test(mac)) return false;
  delete parsed.mac;
  // JSON.stringify of what JSON.parse gave back is the text withMac signed: same keys, same order, same numbers.
  const expected = Buffer.from(macOf(key, JSON.stringify(parsed)), "hex");
  return nodeCrypto().timingSafeEqual(expected, Buffer.from(mac, "hex"));
}
