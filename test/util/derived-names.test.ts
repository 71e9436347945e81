// The names li derives from a digest (a watcher's socket, a ledger's slot directory, a watcher's LISTEN
// channels) are computed with Bun's own hasher: they must stay the SHA-256 / MD5 digests node:crypto gave,
// or a watcher of another build on the same host would no longer find its legs, slots or wake-ups.

import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import path from "node:path";
import { watcherSocketPath } from "../../src/legs/watcher-link.ts";
import { slotDir } from "../../src/ledger/postgres/slots.ts";
import { watcherChannels } from "../../src/ledger/postgres/wake.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const md5 = (text: string) => createHash("md5").update(text, "utf8").digest("hex");

describe("names derived from a digest", () => {
  for (const key of ["sqlite:/home/alice/.li/state.db", "postgres://li@db.example:5432/li?schema=ünïcode", ""]) {
    test(`are the digests they always were (${JSON.stringify(key.slice(0, 20))})`, () => {
      expect(watcherSocketPath("/home/alice/.li", key)).toBe(path.join("/home/alice/.li", "watch", `${sha256(key).slice(0, 16)}.sock`));
      expect(slotDir("/home/alice/.li", key)).toBe(path.join("/home/alice/.li", "pg-slots", sha256(key).slice(0, 16)));
      expect(watcherChannels(key, "build-7:boot-1")).toEqual({ host: `li_host_${md5(`${key}:build-7`)}`, fleet: `li_fleet_${md5(key)}` });
    });
  }
});
