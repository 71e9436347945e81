// Builds dist/li: one standalone binary (flags from STACK.md: bytecode, ESM, no autoloaded .env/bunfig),
// with the git commit and the target baked in for `li --version` (scripts/release.ts builds the others).
import { $ } from "bun";
import { join } from "node:path";

export const ROOT = join(import.meta.dir, "..");

/** The commit this build is made from (`-dirty` when the worktree has changes); "unknown" outside git. */
export async function buildCommit(): Promise<string> {
  const head = await $`git -C ${ROOT} rev-parse --short=12 HEAD`.quiet().nothrow();
  if (head.exitCode !== 0) return "unknown";
  const dirty = await $`git -C ${ROOT} status --porcelain --untracked-files=no`.quiet().nothrow();
  return head.stdout.toString().trim() + (dirty.stdout.toString().trim() ? "-dirty" : "");
}

/**
 * JavaScriptCore's tier-up thresholds ×1000 from the start: li's commands live for milliseconds, and
 * compiling their run-once start-up code cost a leg ~2 ms of CPU (docs/benchmarks.md). Processes that
 * stay on return to the normal policy once started (src/util/jit.ts).
 */
export const JIT_POLICY = 1000;

/** Compiles src/cli.ts for one bun target (`bun-linux-arm64`, …; null = this machine) into `outfile`. */
export async function compile(outfile: string, target: { bun: string | null; name: string }, commit: string): Promise<void> {
  const targetFlag = target.bun === null ? [] : [`--target=${target.bun}`];
  const defines = [`--define=LI_BUILD_COMMIT=${JSON.stringify(commit)}`, `--define=LI_BUILD_TARGET=${JSON.stringify(target.name)}`];
  await $`bun build --compile ${targetFlag} --bytecode --compile-jit-policy=${JIT_POLICY} --splitting --minify-syntax --minify-whitespace --format=esm --no-compile-autoload-dotenv --no-compile-autoload-bunfig ${defines} ${join(ROOT, "src/cli.ts")} --outfile ${outfile}`.quiet();
}

if (import.meta.main) {
  const outfile = join(ROOT, "dist/li");
  await compile(outfile, { bun: null, name: `${process.platform}-${process.arch}` }, await buildCommit());
  console.log(`built ${outfile}`);
}
