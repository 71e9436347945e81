// Smoke-tests the release binaries (after `npm run release`): each one this machine can execute runs a
// real leg, `li wait` and `li show --json` in a fresh LI_HOME. x64 binaries run natively, the arm64 one
// under qemu-user-static with Debian's arm64 C library; the musl one needs musl's libstdc++ (Alpine's),
// which Debian does not ship, so it is reported as not executable here (release.ts still checked its
// checksum and architecture). Prints one line per binary and exits 1 if any smoke test failed.
import { $ } from "bun";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildCommit } from "./build.ts";
import { binaryName, RELEASE_DIR, TARGETS, verifyRelease } from "./release.ts";

const ARM64_LIBC = "/usr/aarch64-linux-gnu"; // Debian's libc6-arm64-cross

interface Runner {
  prefix: string[];
  env: Record<string, string>;
  how: string;
}

function runnerFor(target: string): Runner | string {
  if (target === "linux-arm64") {
    const qemu = Bun.which("qemu-aarch64-static");
    if (!qemu) return "qemu-aarch64-static is missing (apt-get install qemu-user-static)";
    if (!existsSync(join(ARM64_LIBC, "lib/ld-linux-aarch64.so.1"))) return `${ARM64_LIBC} is missing (apt-get install libc6-arm64-cross)`;
    return { prefix: [qemu], env: { QEMU_LD_PREFIX: ARM64_LIBC }, how: "under qemu-aarch64-static" };
  }
  return { prefix: [], env: {}, how: "natively" };
}

async function run(runner: Runner, bin: string, home: string, args: string[]) {
  const proc = Bun.spawn([...runner.prefix, bin, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, LI_HOME: join(home, "li"), NO_COLOR: "1", ...runner.env },
    cwd: home,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** One binary's smoke test: its --version names this commit and target; a leg, wait and show agree. */
async function smoke(target: string, runner: Runner, commit: string): Promise<string | null> {
  const home = mkdtempSync(join(tmpdir(), `li-smoke-${target}-`));
  try {
    return await smokeIn(home, target, runner, commit);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

async function smokeIn(home: string, target: string, runner: Runner, commit: string): Promise<string | null> {
  const bin = join(RELEASE_DIR, binaryName(target));
  const version = await run(runner, bin, home, ["--version", "--json"]);
  if (version.code !== 0) return `--version exited ${version.code}: ${version.stderr.trim().split("\n")[0]}`;
  const v = JSON.parse(version.stdout) as { commit: string; target: string };
  if (v.target !== target || v.commit !== commit) return `--version says ${version.stdout.trim()}, expected target ${target} and commit ${commit}`;
  const leg = await run(runner, bin, home, ["agent", "--json", "--", "sh", "-c", "echo smoke-output"]);
  if (leg.code !== 0) return `li agent exited ${leg.code}: ${leg.stderr.trim().split("\n").at(-1)}`;
  const { session_id: id, status } = JSON.parse(leg.stdout) as { session_id: string; status: string };
  if (status !== "completed" || !leg.stderr.includes("smoke-output")) return `the leg ended ${status}, output ${JSON.stringify(leg.stderr)}`;
  const wait = await run(runner, bin, home, ["wait", id]);
  if (wait.code !== 0 || !wait.stdout.includes("status=completed")) return `li wait exited ${wait.code}: ${wait.stdout.trim()} ${wait.stderr.trim()}`;
  const show = await run(runner, bin, home, ["show", "--json", id]);
  if (show.code !== 0) return `li show --json exited ${show.code}: ${show.stderr.trim()}`;
  const shown = JSON.parse(show.stdout) as { entity: { status: string }; legs: unknown[] };
  if (shown.entity.status !== "completed" || shown.legs.length !== 1) return `li show --json: status ${shown.entity.status}, ${shown.legs.length} leg(s)`;
  return null;
}

/** The musl binary: does this machine have what it links against? (It says so itself when it does not.) */
async function muslRunnable(runner: Runner): Promise<string | null> {
  const probe = await run(runner, join(RELEASE_DIR, binaryName("linux-x64-musl")), tmpdir(), ["--version"]);
  if (probe.code === 0) return null;
  const missing = probe.stderr.match(/Error loading shared library ([^:]+)/)?.[1];
  return missing ? `needs ${missing} built for musl (Alpine's libstdc++), which Debian does not ship` : `exits ${probe.code}: ${probe.stderr.trim().split("\n")[0]}`;
}

const commit = await buildCommit();
let failed = 0;
const problems = await verifyRelease();
for (const p of problems) console.log(`release smoke: FAILED ${p}`);
failed += problems.length;
if (problems.length === 0) console.log(`release smoke: ok SHA256SUMS and architectures of ${TARGETS.length} binaries`);
if (Bun.spawnSync(["sha256sum", "-c", "--quiet", "SHA256SUMS"], { cwd: RELEASE_DIR }).exitCode !== 0) {
  console.log("release smoke: FAILED sha256sum -c SHA256SUMS");
  failed++;
}
for (const target of TARGETS) {
  const name = binaryName(target.name);
  const runner = runnerFor(target.name);
  if (typeof runner === "string") {
    console.log(`release smoke: FAILED ${name}: ${runner}`);
    failed++;
    continue;
  }
  if (target.name === "linux-x64-musl") {
    const why = await muslRunnable(runner);
    if (why) {
      console.log(`release smoke: not executable here ${name}: ${why}; checksum and architecture checked`);
      continue;
    }
  }
  const problem = await smoke(target.name, runner, commit);
  if (problem) failed++;
  console.log(problem ? `release smoke: FAILED ${name}: ${problem}` : `release smoke: ok ${name} ${runner.how}: --version, a leg, li wait, li show --json`);
}
process.exit(failed > 0 ? 1 : 0);
