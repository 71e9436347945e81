// The JIT policy of a process that stays on. scripts/build.ts compiles li with JavaScriptCore's tier-up
// thresholds scaled up (`--compile-jit-policy`), so a command that lives for milliseconds stays in the
// interpreter instead of paying for compiles it never profits from (docs/benchmarks.md, its
// changelog). A process that stays on to serve — a leg's supervisor while its command
// runs, li watch, li wait and li logs -f once they wait — calls this when its start-up is over, so its
// hot paths are compiled as usual.

/** Back to JavaScriptCore's normal tier-up thresholds (from source, under `bun`, they already are). */
export function startUpDone(): void {
  Bun.unsafe.setJITPolicy(1);
}
