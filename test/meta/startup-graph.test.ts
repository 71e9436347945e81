// The start-up path, pinned: what a command loads before it does anything is most of what it costs
// (docs/benchmarks.md "Start-up", "Legs"). The bundle is built the way scripts/build.ts
// splits it; a chunk's static imports load with it, a dynamic import() or require() only when reached.
// Each list below names modules that used to sit on a start-up path for nothing.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");

interface Chunk {
  /** The source modules bundled into it (bun's `// src/…` markers). */
  modules: string[];
  /** Chunks it imports statically: loaded with it. */
  imports: string[];
  /** Built-in modules it imports statically (`node:fs`, `bun:sqlite`). */
  builtins: string[];
}

let chunks: Map<string, Chunk>;
let outdir: string;

beforeAll(async () => {
  outdir = mkdtempSync(join(tmpdir(), "li-startup-graph-"));
  const built = await Bun.build({ entrypoints: [join(ROOT, "src/cli.ts")], outdir, splitting: true, format: "esm", target: "bun" });
  if (!built.success) throw new Error(built.logs.map(String).join("\n"));
  chunks = new Map();
  for (const name of readdirSync(outdir)) {
    const text = readFileSync(join(outdir, name), "utf8");
    // `import "x"`, `import { a } from "x"` on one line, and the `} from "x"` that ends a longer one.
    const statics = [...text.matchAll(/^(?:import\s*["']([^"']+)["']|import\s[^"'\n]*?\sfrom\s*["']([^"']+)["']|\}?\s*from\s*["']([^"']+)["'])/gm)].map((m) => (m[1] ?? m[2] ?? m[3])!);
    chunks.set(name, {
      modules: [...text.matchAll(/^\/\/ (src\/\S+)$/gm)].map((m) => m[1]!),
      imports: statics.filter((s) => s.startsWith("./")).map((s) => s.slice(2)),
      builtins: statics.filter((s) => !s.startsWith(".")),
    });
  }
});
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/** The chunk a dynamic import of `module` (a path under src/) starts from. */
function chunkOf(module: string): string {
  for (const [name, chunk] of chunks) if (chunk.modules.at(-1) === module) return name;
  throw new Error(`no chunk ends with ${module}`);
}

/** Every source module and built-in loaded with `entries`, following static imports only. */
function loadedWith(...entries: string[]): { modules: Set<string>; builtins: Set<string> } {
  const modules = new Set<string>();
  const builtins = new Set<string>();
  const seen = new Set<string>();
  const walk = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    const chunk = chunks.get(name);
    if (!chunk) throw new Error(`no chunk ${name}`);
    chunk.modules.forEach((m) => modules.add(m));
    chunk.builtins.forEach((b) => builtins.add(b));
    chunk.imports.forEach(walk);
  };
  entries.forEach(walk);
  return { modules, builtins };
}

/** The node built-ins among `builtins`: the bundle names them without their `node:` prefix ("fs"); Bun's own keep theirs ("bun:sqlite"). */
function nodeBuiltins(builtins: Set<string>): string[] {
  return [...builtins].filter((b) => !b.startsWith("bun:") && b !== "bun");
}

/** What every command loads: src/cli.ts, then main.ts (which cli.ts imports once it has looked at argv). */
const ENTRY = () => ["cli.js", chunkOf("src/cli/main.ts")];

describe("the start-up graph", () => {
  test("the reader of the bundle sees static imports, and a module behind a dynamic import is not loaded with its importer", () => {
    expect(loadedWith("cli.js").modules).not.toContain("src/cli/main.ts");
    const entry = loadedWith(...ENTRY());
    expect(entry.modules).toContain("src/cli/main.ts");
    expect(entry.modules).toContain("src/cli/tree.ts");
    // tree.ts imports every command with import(): none of them comes with the entry.
    expect(entry.modules).not.toContain("src/cli/commands/wait.ts");
    expect(loadedWith(chunkOf("src/cli/commands/wait.ts")).modules).toContain("src/cli/commands/wait.ts");
  });

  test("every command's entry leaves the help renderer and the error mapping (and the adapters' classifiers) until they are needed", () => {
    const { modules } = loadedWith(...ENTRY());
    for (const lazy of ["src/cli/help.ts", "src/cli/exit.ts", "src/ledger/failures.ts", "src/ledger/sqlite/errors.ts", "src/ledger/postgres/errors.ts", "src/cli/output.ts"]) {
      expect(modules).not.toContain(lazy);
    }
  });

  test("li wait on SQLite loads no migration SQL, no write path and no node:* module of its own", () => {
    const { modules, builtins } = loadedWith(...ENTRY(), chunkOf("src/cli/commands/wait.ts"), chunkOf("src/ledger/open-reads.ts"));
    expect(modules).toContain("src/ledger/sqlite/open-read.ts");
    expect(modules).toContain("src/ledger/sqlite/schema-version.gen.ts");
    for (const lazy of ["src/ledger/sqlite/migrations.gen.ts", "src/ledger/transition.ts", "src/ledger/ledger.ts"]) expect(modules).not.toContain(lazy);
    expect(nodeBuiltins(builtins)).toEqual([]);
  });

  test("no command's entry loads a node:* module (util/profile.ts's node:fs loads only to write a profile, legs/warm-entry.ts's only in a warm supervisor)", () => {
    expect(nodeBuiltins(loadedWith(...ENTRY()).builtins)).toEqual([]);
  });

  test("a read command's open loads neither the scheduled runs' nor the metrics' statements (li queue, li ui and /metrics load them when used)", () => {
    const sqlite = loadedWith(...ENTRY(), chunkOf("src/cli/commands/wait.ts"), chunkOf("src/ledger/open-reads.ts")).modules;
    const postgres = loadedWith(chunkOf("src/ledger/postgres/open-reads.ts")).modules;
    expect(sqlite).toContain("src/ledger/sqlite/reads.ts");
    expect(postgres).toContain("src/ledger/postgres/reads.ts");
    for (const lazy of ["src/ledger/rules/schedule.ts", "src/ledger/rules/metrics.ts", "src/ledger/sqlite/schedule.ts", "src/ledger/postgres/schedule.ts"]) {
      expect(sqlite).not.toContain(lazy);
      expect(postgres).not.toContain(lazy);
    }
  });

  test("li agent loads, before its command starts, neither the detach, resume, evidence and contract modules nor --json's and the error path's", () => {
    const { modules } = loadedWith(...ENTRY(), chunkOf("src/cli/commands/agent.ts"), chunkOf("src/cli/agent-leg.ts"), chunkOf("src/cli/context.ts"));
    expect(modules).toContain("src/legs/leg.ts");
    expect(modules).toContain("src/contracts/containment.ts");
    for (const lazy of ["src/legs/detach.ts", "src/legs/resume.ts", "src/legs/evidence.ts", "src/contracts/artifacts.ts", "src/cli/output.ts", "src/cli/exit.ts", "src/legs/teardown/run.ts"]) {
      expect(modules).not.toContain(lazy);
    }
  });

  test("li agent --queue Q --detach, which only validates and records a scheduled run, loads none of the leg machinery, the foreground waiter or the run's leg hooks (issue 23: the submit is on the dispatch's critical path)", () => {
    const { modules } = loadedWith(...ENTRY(), chunkOf("src/cli/commands/agent.ts"), chunkOf("src/cli/agent-queue.ts"), chunkOf("src/cli/context.ts"));
    // What the submit does need: the leg request's validation and the submit's write.
    expect(modules).toContain("src/legs/request.ts");
    expect(modules).toContain("src/schedule/submit.ts");
    const legMachinery = ["src/legs/agent.ts", "src/legs/leg.ts", "src/legs/setup.ts", "src/legs/spawn.ts", "src/legs/capture.ts", "src/legs/signals.ts", "src/legs/cgroup.ts", "src/legs/leg-processes.ts", "src/legs/rundir.ts", "src/legs/notify.ts", "src/legs/watcher-link.ts", "src/legs/detach.ts", "src/contracts/containment.ts"];
    for (const lazy of [...legMachinery, "src/cli/agent-leg.ts", "src/schedule/foreground.ts", "src/schedule/leg.ts", "src/schedule/settle.ts"]) expect(modules).not.toContain(lazy);
    // The leg's path still loads them, through cli/agent-leg.ts.
    const leg = loadedWith(chunkOf("src/cli/agent-leg.ts")).modules;
    for (const module of legMachinery.filter((m) => m !== "src/legs/detach.ts")) expect(leg).toContain(module);
  });

  test("li agent --detach's parent, which starts the supervisor, loads none of the leg machinery with what it uses (the profile shows it does not load cli/agent-leg.ts: agent-detach.test.ts)", () => {
    const { modules } = loadedWith(...ENTRY(), chunkOf("src/cli/commands/agent.ts"), chunkOf("src/legs/detach.ts"));
    expect(modules).toContain("src/legs/request.ts");
    for (const lazy of ["src/cli/agent-leg.ts", "src/legs/agent.ts", "src/legs/leg.ts", "src/legs/spawn.ts", "src/legs/capture.ts", "src/legs/rundir.ts", "src/legs/notify.ts", "src/contracts/containment.ts"]) expect(modules).not.toContain(lazy);
  });

  test("a leg, up to its command's start and its spool room, loads no node:crypto (~3 ms of CPU), on either backend", () => {
    const sqlite = loadedWith(...ENTRY(), chunkOf("src/cli/commands/agent.ts"), chunkOf("src/cli/agent-leg.ts"), chunkOf("src/cli/context.ts"), chunkOf("src/spool/reserve.ts"));
    expect(sqlite.modules).toContain("src/legs/watcher-link.ts");
    expect(sqlite.modules).toContain("src/spool/mac.ts");
    // The bundler writes node:crypto as "crypto".
    const crypto = (builtins: Set<string>) => [...builtins].filter((b) => b === "crypto" || b === "node:crypto");
    expect(crypto(sqlite.builtins)).toEqual([]);
    // On PostgreSQL every li process takes a connection slot, and a watcher names its wake-up channels.
    const holding = [...chunks].filter(([, c]) => c.modules.includes("src/ledger/postgres/slots.ts") || c.modules.includes("src/ledger/postgres/wake.ts")).map(([name]) => name);
    expect(holding.length).toBeGreaterThan(0);
    expect(crypto(loadedWith(...holding).builtins)).toEqual([]);
  });

  test("a writer's open loads the migration SQL only when the ledger is behind", () => {
    const { modules } = loadedWith(...ENTRY(), chunkOf("src/cli/context.ts"));
    expect(modules).toContain("src/ledger/sqlite/migrate.ts");
    expect(modules).not.toContain("src/ledger/sqlite/migrations.gen.ts");
  });
});

test("the schema version an open compares with is the number of embedded migrations (both generated together)", async () => {
  const { SCHEMA_VERSION } = await import("../../src/ledger/sqlite/schema-version.gen.ts");
  const { MIGRATIONS } = await import("../../src/ledger/sqlite/migrations.gen.ts");
  expect(SCHEMA_VERSION).toBe(MIGRATIONS.length);
});
