// Unprivileged local users for the tests of who may act (SPEC §18 "Other users"): alice and mallory as real
// accounts made with useradd, li run as them with runuser. Names are unique to this process, so parallel runs
// of the suite never share (or remove) each other's users; each user has a home and a temp dir of its own.
// Creating users needs root: without it the tests say why in one line and skip — except in CI (LI_REQUIRE_USERS=1,
// set by .ci/run, or CI itself), where not being able to make them is a failure.

import { afterAll, describe } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { LI_BINARY, liEnv, type LiResult } from "./cli.ts";
import { tempDir } from "./temp-dirs.ts";

export interface LocalUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  /** Owned by the user, 0700: its HOME. */
  readonly home: string;
  /** Owned by the user, 0700: its TMPDIR, where its LI_HOME and projects go. */
  readonly tmp: string;
}

export interface AsUserOptions {
  cwd?: string;
  /** Added to the environment li gets (liEnv without LI_HOME's ledger: pass LI_HOME and LI_DB yourself). */
  env?: Record<string, string | undefined>;
  stdin?: string;
}

/** Why users cannot be made here, or null when they can. */
export function whyNoUsers(): string | null {
  if (process.getuid?.() !== 0) return "not root: the tests of other local users need useradd and runuser";
  for (const tool of ["/usr/sbin/useradd", "/usr/sbin/userdel", "/usr/sbin/runuser"]) if (!fs.existsSync(tool)) return `${tool} is missing`;
  return null;
}

const required = process.env.LI_REQUIRE_USERS === "1" || process.env.CI === "true";

/**
 * `describe` when users can be made; otherwise the block is skipped with one visible line saying why
 * (or, where users are required, registered anyway so that its first test fails naming the reason).
 */
export function describeAsUsers(label: string, body: () => void): void {
  const why = whyNoUsers();
  if (why === null || required) {
    describe(label, body);
    return;
  }
  console.warn(`skipped "${label}": ${why}`);
  describe.skip(label, body);
}

/** A token unique to this test process: its pid and a few random letters (names may be 32 characters). */
const RUN_TOKEN = `${process.pid.toString(36)}${crypto.randomUUID().replace(/-/g, "").slice(0, 4)}`;
const made: LocalUser[] = [];
// Registered when the test file loads this helper (a hook registered inside a hook runs at once).
afterAll(removeUsers);

function run(argv: string[]): { code: number; stderr: string } {
  const proc = Bun.spawnSync(argv, { stdout: "ignore", stderr: "pipe" });
  return { code: proc.exitCode ?? -1, stderr: proc.stderr.toString() };
}

/** The account `label` (alice, mallory) of this run, made once (a second call returns the same user). */
export function localUser(label: string): LocalUser {
  const why = whyNoUsers();
  if (why !== null) throw new Error(`cannot create local users: ${why}`);
  const name = `lt${RUN_TOKEN}${label}`.slice(0, 32);
  const known = made.find((u) => u.name === name);
  if (known) return known;
  const base = tempDir(`li-user-${label}-`);
  // Others must reach their own directories through this one (tempDir makes it 0700, root's).
  fs.chmodSync(base, 0o755);
  const home = path.join(base, "home");
  // -M: no skeleton copied; the home is made below, in this run's temp dirs, removed with them.
  const added = run(["/usr/sbin/useradd", "-M", "-N", "-g", "nogroup", "-d", home, "-s", "/bin/sh", name]);
  // 9: the name exists (made by this run before a crash of the helper): idempotent.
  if (added.code !== 0 && added.code !== 9) throw new Error(`useradd ${name} failed (${added.code}): ${added.stderr.trim()}`);
  const entry = fs
    .readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((line) => line.startsWith(`${name}:`));
  if (!entry) throw new Error(`useradd ${name}: no /etc/passwd entry`);
  const [, , uid, gid] = entry.split(":");
  const own = (dir: string) => {
    fs.mkdirSync(dir, { mode: 0o700 });
    fs.chownSync(dir, Number(uid), Number(gid));
    fs.chmodSync(dir, 0o700);
    return dir;
  };
  const user: LocalUser = { name, uid: Number(uid), gid: Number(gid), home: own(home), tmp: own(path.join(base, "tmp")) };
  made.push(user);
  return user;
}

/** Removes this run's users (their processes first, each by pid: a detached leg may outlive its test). */
export function removeUsers(): void {
  for (const user of made.splice(0)) {
    for (const pid of processesOf(user.uid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone already.
      }
    }
    run(["/usr/sbin/userdel", user.name]);
  }
}

/** The pids whose real uid is `uid` (/proc/PID/status), read just now: only this run's own users are ever asked for. */
function processesOf(uid: number): number[] {
  const pids: number[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = fs.readFileSync(`/proc/${name}/status`, "utf8");
      if (new RegExp(`^Uid:\\s+${uid}\\s`, "m").test(status)) pids.push(Number(name));
    } catch {
      // Exited meanwhile.
    }
  }
  return pids;
}

let binary: string | undefined;

/**
 * dist/li as other users can run it: the binary itself when it and every directory above it are open to
 * others (a checkout under /work); else a copy in a root-owned 0755 temp directory (a checkout under /root).
 */
export function userBinary(): string {
  if (binary !== undefined) return binary;
  if (reachableByOthers(LI_BINARY)) return (binary = LI_BINARY);
  const dir = tempDir("li-user-bin-");
  fs.chmodSync(dir, 0o755);
  binary = path.join(dir, "li");
  fs.copyFileSync(LI_BINARY, binary);
  fs.chmodSync(binary, 0o755);
  if (!reachableByOthers(binary)) throw new Error(`${binary}: other users cannot reach it (the temp directory's parents are closed to them)`);
  return binary;
}

/** Readable and executable by others, through directories they can search. */
function reachableByOthers(file: string): boolean {
  if ((fs.statSync(file).mode & 0o005) !== 0o005) return false;
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    if ((fs.statSync(dir).mode & 0o001) === 0) return false;
    if (path.dirname(dir) === dir) return true;
  }
}

/** A directory owned by `user` (0700 unless `mode`), under its temp dir. */
export function userDir(user: LocalUser, name: string, mode = 0o700): string {
  const dir = path.join(user.tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.chownSync(dir, user.uid, user.gid);
  fs.chmodSync(dir, mode);
  return dir;
}

/** Writes `text` to `file` as `user`'s file (mode given). */
export function userFile(user: LocalUser, file: string, text: string, mode = 0o600): string {
  fs.writeFileSync(file, text);
  fs.chownSync(file, user.uid, user.gid);
  fs.chmodSync(file, mode);
  return file;
}

/** The environment a user's li sees: the test's own (liEnv) with the user's HOME, TMPDIR and identity. */
export function userEnv(user: LocalUser, extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env = liEnv(undefined, { HOME: user.home, TMPDIR: user.tmp, USER: user.name, LOGNAME: user.name, ...extra });
  return env;
}

/** Runs `argv` as `user` (runuser, the environment exactly as given: nothing of root's leaks through). */
export function spawnAsUser(user: LocalUser, argv: string[], options: AsUserOptions = {}) {
  const env = userEnv(user, options.env);
  const assignments = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  return Bun.spawn(["/usr/sbin/runuser", "-u", user.name, "--", "/usr/bin/env", "-i", ...assignments, ...argv], {
    cwd: options.cwd ?? user.tmp,
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
}

/** dist/li as `user`. */
export async function liAs(user: LocalUser, args: string[], options: AsUserOptions = {}): Promise<LiResult> {
  const proc = spawnAsUser(user, [userBinary(), ...args], options);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}
