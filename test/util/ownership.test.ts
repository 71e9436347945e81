import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { checkOwnership, checkOwnershipAsync, FILE_SYSTEMS_WITHOUT_OWNERS, type OwnershipProbe } from "../../src/util/ownership.ts";
import { tempDir } from "../helpers/temp-dirs.ts";

const ALICE = 1000;
const MALLORY = 1001;
const EXT4 = 0xef53;
const FAT = 0x4d44;

function probe(stat: { uid: number; mode: number } | null, fsType = EXT4): OwnershipProbe {
  return { uid: ALICE, stat: () => stat, fsType: () => fsType };
}

describe("checkOwnership (§18 other users)", () => {
  test("nothing there is fine: li creates it owner-only itself", () => {
    expect(checkOwnership("/x/.li", "LI_HOME", probe(null))).toEqual({ ok: true });
  });

  test("the user's own 0700 directory and 0600 file, and a 0755 directory, are used", () => {
    expect(checkOwnership("/x/.li", "LI_HOME", probe({ uid: ALICE, mode: 0o40700 }))).toEqual({ ok: true });
    expect(checkOwnership("/x/.li/state.db", "the ledger", probe({ uid: ALICE, mode: 0o100600 }))).toEqual({ ok: true });
    expect(checkOwnership("/x/.li", "LI_HOME", probe({ uid: ALICE, mode: 0o40755 }))).toEqual({ ok: true });
  });

  test("a root-owned system path is used (root could change anything anyway)", () => {
    expect(checkOwnership("/var/lib/li", "LI_HOME", probe({ uid: 0, mode: 0o40755 }))).toEqual({ ok: true });
  });

  test("another user's path is refused, naming the path, its owner and mode", () => {
    const verdict = checkOwnership("/tmp/shared", "LI_HOME", probe({ uid: MALLORY, mode: 0o40755 }));
    expect(verdict).toEqual({ ok: false, problem: expect.stringMatching(/^LI_HOME \/tmp\/shared is another user's \(owned by (\S+ \()?uid 1001\)?, mode 0755\)/) });
  });

  test("the user's own path that group or others may write is refused, as is root's world-writable /tmp", () => {
    for (const [uid, mode] of [[ALICE, 0o40777], [ALICE, 0o100666], [ALICE, 0o40770], [0, 0o41777]] as const) {
      const verdict = checkOwnership("/p", "LI_HOME", probe({ uid, mode }));
      expect(verdict).toEqual({ ok: false, problem: expect.stringContaining("is writable by group or others") });
    }
  });

  test("on a file system without owners (FAT, exFAT, …) the path is used with a warning, never in silence", () => {
    const verdict = checkOwnership("/media/usb/.li", "LI_HOME", probe({ uid: MALLORY, mode: 0o40777 }, FAT));
    expect(verdict).toEqual({ ok: true, warning: expect.stringContaining("LI_HOME /media/usb/.li is on a FAT file system, which keeps no owner or mode of its own") });
    expect(FILE_SYSTEMS_WITHOUT_OWNERS.get(FAT)).toBe("FAT");
    // A path that passes needs no word, whatever its file system.
    expect(checkOwnership("/media/usb/.li", "LI_HOME", probe({ uid: ALICE, mode: 0o40700 }, FAT))).toEqual({ ok: true });
  });

  test("the async check reads the same stat as the sync one, real files included", async () => {
    const dir = tempDir("li-owner-");
    fs.chmodSync(dir, 0o777);
    const real = { uid: process.getuid?.() ?? 0, stat: (p: string) => ({ uid: fs.statSync(p).uid, mode: fs.statSync(p).mode }), fsType: () => EXT4 };
    expect(await checkOwnershipAsync(dir, "LI_HOME", real)).toEqual(checkOwnership(dir, "LI_HOME", real));
    expect((await checkOwnershipAsync(dir, "LI_HOME", real)).ok).toBe(false);
    expect(await checkOwnershipAsync(path.join(dir, "missing"), "LI_HOME", real)).toEqual({ ok: true });
  });
});
