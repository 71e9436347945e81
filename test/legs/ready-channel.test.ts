// The supervisor's ready report (legs/detach.ts) when its parent is gone: the leg is recorded by then, so
// the report is dropped and the supervisor goes on to run it.

import { expect, test } from "bun:test";
import { writeReady } from "../../src/legs/detach.ts";

test("a report to a parent that is gone is dropped, not thrown: the supervisor runs the recorded leg on", async () => {
  // The other end of a socket pair, held by a process that has exited: what a killed li watch leaves.
  const gone = Bun.spawn(["/bin/true"], { stdio: ["ignore", "ignore", "ignore", "pipe"] });
  const fd = gone.stdio[3] as number;
  await gone.exited;
  expect(() => writeReady({ fd }, { ok: true, session_id: "ses-1", branch_id: "bra-1", run_id: "run-1" })).not.toThrow();
});
