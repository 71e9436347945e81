// Benchmark (§17): 1,000 spooled leg outcomes replayed into a ledger — records per second — while
// another process keeps writing; the longest stall that writer sees during the replay, against the
// longest it sees alone in the same run (the floor).
// Usage: bun bench/replay.ts [ENTRIES=1000] [--postgres]
// Each entry is a whole spooled leg (setup never reached the ledger): session, branch, leg, outcome,
// replayed by the same replaySpool li watch runs, one transaction per entry. The ledger is a SQLite file,
// or with --postgres a database on the test helper's throwaway cluster on loopback (bench/pg-database.ts).

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openLedger } from "../src/ledger/open.ts";
import { resolvePaths } from "../src/ledger/location.ts";
import { spoolDirOf } from "../src/spool/entry.ts";
import { spoolWholeLegs } from "../test/spool/entries.ts";
import { replaySpool } from "../src/spool/replay.ts";
import { benchDatabase } from "./pg-database.ts";

const args = process.argv.slice(2);
const postgres = args.includes("--postgres");
const ENTRIES = Number(args.find((a) => !a.startsWith("--")) ?? 1000);
const dir = mkdtempSync(join(tmpdir(), "li-bench-replay-"));
const home = join(dir, "home");
mkdirSync(home, { recursive: true, mode: 0o700 });
const db = postgres ? await benchDatabase("bench_replay") : null;
// The ledger's location as li reads it: LI_DB names the database; without it, $LI_HOME/state.db.
const ledgerEnv: Record<string, string> = db ? { LI_DB: db.url } : {};
const ledger = openLedger(resolvePaths({ env: { LI_HOME: home, ...ledgerEnv } }), { create: true });
await ledger.ready(); // connected (and migrated) before any clock starts
const spoolDir = spoolDirOf(home);
const now = Date.now() / 1000;

/** Spools `count` whole legs numbered from `from` (the factory the tests use). */
const spool = (from: number, count: number) => void spoolWholeLegs(spoolDir, from, count, now);

/** The environment without LI_DB: the writer's ledger is the bench's, whatever the caller's shell names. */
function withoutLiDb(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && k !== "LI_DB") out[k] = v;
  return out;
}

/** Starts the concurrent writer; resolves once it writes. */
async function writer(prefix: string) {
  const stop = join(dir, `stop-${prefix}`);
  const proc = Bun.spawn(["bun", join(import.meta.dir, "workers/stall-writer.ts"), home, prefix, stop], { env: { ...withoutLiDb(process.env), ...ledgerEnv }, stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("ready\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the writer exited early");
    text += new TextDecoder().decode(value);
  }
  return {
    async finish(): Promise<number[]> {
      writeFileSync(stop, "");
      for (;;) {
        const { value, done } = await reader.read();
        if (value) text += new TextDecoder().decode(value);
        if (done) break;
      }
      await proc.exited;
      return JSON.parse(text.slice(text.indexOf("ready\n") + 6).trim()) as number[];
    },
  };
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: s[Math.floor(s.length / 2)]!, p99: s[Math.floor(s.length * 0.99)]!, max: s.at(-1)! };
};

// The floor: the writer alone, for about as long as the replay will take.
const alone = await writer("alone");
await Bun.sleep(1500);
const floor = stats(await alone.finish());

// The replay alone, for its own floor.
spool(0, ENTRIES);
const s0 = performance.now();
const soloSummary = await replaySpool(ledger, { spoolDir });
const soloSeconds = (performance.now() - s0) / 1000;
if (soloSummary.replayed !== ENTRIES) throw new Error(`replayed ${soloSummary.replayed} of ${ENTRIES} alone`);

spool(ENTRIES, ENTRIES);
const busy = await writer("busy");
const t0 = performance.now();
const summary = await replaySpool(ledger, { spoolDir });
const seconds = (performance.now() - t0) / 1000;
const during = stats(await busy.finish());
ledger.close();
await db?.dispose();

if (summary.replayed !== ENTRIES || summary.error) throw new Error(`replayed ${summary.replayed} of ${ENTRIES}: ${String(summary.error)}`);
const rate = ENTRIES / seconds;
console.log(`replay of ${ENTRIES} spooled legs (setup + outcome, one transaction each) into ${postgres ? "PostgreSQL (loopback)" : "SQLite"} with a concurrent writer`);
console.log(`  replayed in ${seconds.toFixed(2)} s: ${rate.toFixed(0)} records/s (alone, same run: ${soloSeconds.toFixed(2)} s, ${(ENTRIES / soloSeconds).toFixed(0)} records/s)`);
console.log(`  concurrent writer during the replay: ${during.n} writes, p50 ${during.p50.toFixed(2)} ms, p99 ${during.p99.toFixed(2)} ms, longest stall ${during.max.toFixed(2)} ms`);
console.log(`  the same writer alone (floor, same run): ${floor.n} writes, p50 ${floor.p50.toFixed(2)} ms, p99 ${floor.p99.toFixed(2)} ms, longest ${floor.max.toFixed(2)} ms`);
console.log(`  longest stall / floor's longest: ${(during.max / floor.max).toFixed(2)}x; p50 ratio ${(during.p50 / floor.p50).toFixed(2)}x`);
console.log(JSON.stringify({ bench: "replay", backend: postgres ? "postgres" : "sqlite", entries: ENTRIES, seconds: Number(seconds.toFixed(3)), records_per_s: Math.round(rate), records_per_s_alone: Math.round(ENTRIES / soloSeconds), writer_max_stall_ms: Number(during.max.toFixed(2)), writer_p50_ms: Number(during.p50.toFixed(2)), floor_max_ms: Number(floor.max.toFixed(2)), floor_p50_ms: Number(floor.p50.toFixed(2)) }));
