// li watch with its safety poll and its sweeps an hour away still starts a scheduled run's retry when its
// delay ends (§14 "Many hosts", §19): the watcher sleeps until the next retry_at it knows of, not a whole
// poll. Nothing commits between the failed attempt and its retry's due time, so only the watcher's own
// timing can start it within the test. Both backends (the suite's LI_TEST_BACKEND).
import { expect, test } from "bun:test";
import { join } from "node:path";
import { li } from "../helpers/cli.ts";
import { watchHomes } from "../helpers/watch-homes.ts";
import { OWNER_VARIABLE } from "../helpers/until.ts";

const { newHome, startWatcher } = watchHomes();

test("a run failing once with --retries 1 --retry-delay 2s is retried and completes under li watch --poll 1h --sweep-interval 1h", async () => {
  const h = newHome();
  const { dir, home, rows } = h;
  const counter = join(dir, "count");
  const script = `n=$(cat "${counter}" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "${counter}"; [ $n -ge 2 ]`;
  const submitted = await li(["agent", "--detach", "--pass-env", OWNER_VARIABLE, "--queue", "q", "--retries", "1", "--retry-delay", "2s", "--", "sh", "-c", script], { home, cwd: dir });
  expect(submitted.stderr).toBe("");
  const first = submitted.stdout.trim();
  const { proc: watcher, lines } = startWatcher(h, {}, ["--poll", "1h", "--sweep-interval", "1h"]);
  const waited = await li(["wait", first, "--timeout", "30"], { home });
  watcher.kill("SIGTERM");
  await watcher.exited;
  expect(waited.stdout, lines.join("\n")).toStartWith(`${first}\tstatus=completed\treason=run.completed.ok\t`);
  const chain = await rows.all<{ status: string; chain_depth: number }>("SELECT status, chain_depth FROM schedule_runs WHERE queue = 'q' ORDER BY chain_depth");
  expect(chain.map((r) => [r.chain_depth, r.status])).toEqual([[0, "retry_wait"], [1, "completed"]]);
  expect(lines.filter((l) => l.includes("schedule_retry")).length).toBe(1);
}, 90_000);
