// `npm run release`: cross-compiles li for every Linux target into dist/release/ with a SHA256SUMS file,
// then checks each binary's checksum and architecture (`file`), which holds even for binaries this
// machine cannot run. scripts/release-smoke.ts runs the ones it can.
import { $ } from "bun";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildCommit, compile, ROOT } from "./build.ts";

export const RELEASE_DIR = join(ROOT, "dist/release");

/** Each target: its name (in the file name and `li --version`), Bun's target, and what `file` must say. */
export const TARGETS = [
  { name: "linux-x64", bun: "bun-linux-x64", file: /ELF 64-bit LSB .*x86-64.*interpreter \/lib64\/ld-linux-x86-64\.so\.2/ },
  // For x86-64 CPUs without AVX2 (older servers, some VMs).
  { name: "linux-x64-baseline", bun: "bun-linux-x64-baseline", file: /ELF 64-bit LSB .*x86-64.*interpreter \/lib64\/ld-linux-x86-64\.so\.2/ },
  { name: "linux-arm64", bun: "bun-linux-arm64", file: /ELF 64-bit LSB .*ARM aarch64.*interpreter \/lib\/ld-linux-aarch64\.so\.1/ },
  { name: "linux-x64-musl", bun: "bun-linux-x64-musl", file: /ELF 64-bit LSB .*x86-64.*interpreter \/lib\/ld-musl-x86_64\.so\.1/ },
] as const;

export const binaryName = (target: string) => `li-${target}`;

function sha256(path: string): string {
  return new Bun.CryptoHasher("sha256").update(readFileSync(path)).digest("hex");
}

/** The lines of SHA256SUMS, as `sha256sum -c` reads them. */
function sums(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(join(RELEASE_DIR, "SHA256SUMS"), "utf8").split("\n").filter(Boolean)) {
    const [hash, name] = line.split(/ [ *]/, 2);
    out.set(name!, hash!);
  }
  return out;
}

/** Checks every binary against SHA256SUMS and its expected architecture; returns the problems. */
export async function verifyRelease(): Promise<string[]> {
  const problems: string[] = [];
  const listed = sums();
  for (const target of TARGETS) {
    const name = binaryName(target.name);
    const path = join(RELEASE_DIR, name);
    const expected = listed.get(name);
    if (expected === undefined) problems.push(`${name}: not in SHA256SUMS`);
    else if (sha256(path) !== expected) problems.push(`${name}: checksum does not match SHA256SUMS`);
    const described = (await $`file -b ${path}`.quiet().nothrow()).stdout.toString().trim();
    if (!target.file.test(described)) problems.push(`${name}: file says '${described}', expected ${target.file}`);
  }
  return problems;
}

if (import.meta.main) {
  const commit = await buildCommit();
  rmSync(RELEASE_DIR, { recursive: true, force: true });
  mkdirSync(RELEASE_DIR, { recursive: true });
  const lines: string[] = [];
  for (const target of TARGETS) {
    const name = binaryName(target.name);
    const started = performance.now();
    await compile(join(RELEASE_DIR, name), target, commit);
    lines.push(`${sha256(join(RELEASE_DIR, name))}  ${name}`);
    console.log(`built ${name} (${((performance.now() - started) / 1000).toFixed(1)} s)`);
  }
  writeFileSync(join(RELEASE_DIR, "SHA256SUMS"), lines.join("\n") + "\n");
  const problems = await verifyRelease();
  for (const p of problems) console.error(`release: ${p}`);
  if (problems.length > 0) process.exit(1);
  console.log(`release ${commit}: ${TARGETS.length} binaries in ${RELEASE_DIR}, SHA256SUMS and architectures checked`);
}
