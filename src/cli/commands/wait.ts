// `li wait ID…`: block until each target is terminal and print the frozen line per target (§11).
// Its imports stay free of drizzle and zod: a script calls it in a loop, so start-up time matters.
import { command } from "../command.ts";
import { ambiguityMessage } from "../../ledger/resolve.ts";
import { parseDuration } from "../../util/duration.ts";
import { unknownIdMessage, UsageError } from "../../util/errors.ts";
import { parseWaitIds } from "../../wait/ids.ts";
import { formatWaitLine, waitJson } from "../../wait/line.ts";
import { resolveTargets, waitExitCode, waitForTerminal, withinMs, type Resolved } from "../../wait/waiter.ts";
import { writeErr, writeOut, writeNote } from "../io.ts";

export default command({
  description:
      "Wait until each id (session, invocation, play, schedule_run, branch or run id; or a unique prefix) is terminal; print one line per target as it finishes. Exit 0 all succeeded, 1 any unsuccessful, 2 any not found, 3 interrupted or --timeout",
  examples: ["li wait 1a2b3c4d", "li wait --timeout=10m --json $(li agent --detach -- make test)"],
  // Not the write path (drizzle, zod): a script calls li wait in a loop, so start-up time matters.
  ledger: "reads",
  longLived: true,
  args: {
    ids: { type: "positional", valueHint: "ID…", complete: "ids", description: "ids, space- or comma-separated", required: true },
    interval: { type: "string", valueHint: "DURATION", description: "the safety poll (default 1.0 s); commits wake li wait at once anyway" },
    timeout: { type: "string", valueHint: "DURATION", description: "give up after this long (90, 1.5, 500ms, 10m, 2h) with exit 3" },
    json: { type: "boolean", description: "one JSON object per finished target instead of the line" },
  },
  async run({ args, ledger: open }) {
    const intervalMs = args.interval === undefined ? 1000 : parseDuration(args.interval, "--interval") * 1000;
    const timeoutMs = args.timeout === undefined ? undefined : parseDuration(args.timeout, "--timeout") * 1000;
    const inputs = parseWaitIds(args._.map(String));
    if (inputs.length === 0) throw new UsageError("li wait needs at least one id");

    const stop = new AbortController();
    // One note per wait about an unreachable ledger, whichever part of the wait met it first.
    let toldOutage = false;
    const tellOutage = (error: Error) => {
      if (!toldOutage) writeNote(`${error.message}; still waiting (looking again when it answers${timeoutMs === undefined ? "" : ", until --timeout"})`);
      toldOutage = true;
    };
    // A server that is down when li wait starts is waited for as one that goes down later is (§17): until
    // --timeout, which the wait itself holds (the ledger's own patience never ends first and turns it into a 78).
    const ledger = open({ seconds: Infinity, onWait: tellOutage, signal: stop.signal });
    const onSignal = () => stop.abort();
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    try {
      const startedMs = performance.now();
      // --timeout covers the lookup too: a ledger that does not answer it (§17) is no reason to wait longer.
      let resolved: { value: Resolved } | null;
      try {
        resolved = await withinMs(resolveTargets(ledger.reads, inputs), timeoutMs ?? Infinity);
      } catch (error) {
        // Interrupted while the ledger was being waited for.
        if (!stop.signal.aborted) throw error;
        writeNote(`interrupted before the ledger answered (${inputs.length} target(s) not looked up)`);
        return waitExitCode("interrupted", [], []);
      }
      if (resolved === null) {
        writeNote(`--timeout reached before the ledger answered (${inputs.length} target(s) not looked up)`);
        return waitExitCode("timed_out", [], []);
      }
      const { targets, problems } = resolved.value;
      for (const p of problems) {
        writeNote(p.problem === "ambiguous" ? ambiguityMessage(p.input, p.matches) : unknownIdMessage(p.input));
      }
      // Several targets on a terminal: one status line on stderr ("3/10 finished, 1 failed"). Loaded only
      // then: it brings node:fs, which a single-id wait (a script's loop) never pays for.
      const status = targets.length > 1 ? (await import("../progress.ts")).StatusLine.onStderr({ minIntervalMs: 0 }) : null;
      let finished = 0;
      let failed = 0;
      const showStatus = () => status?.show(`${finished}/${targets.length} finished, ${failed} failed`);
      showStatus();
      const print = (line: string) => (status ? status.around(() => writeOut(line)) : writeOut(line));
      const { outcomes, end } = await waitForTerminal({
        reads: ledger.reads,
        targets,
        // Only when something is still running: an already-terminal wait never pays for a watcher.
        // The wake-up module (fs.watch) loads here too, so an already-terminal wait never loads node:fs.
        arm: async () => {
          const { pollingOnly, wakeUpsDisabled } = await import("../../ledger/wake.ts");
          return wakeUpsDisabled() ? pollingOnly() : ledger.wake();
        },
        intervalMs,
        ...(timeoutMs !== undefined ? { timeoutMs: Math.max(0, timeoutMs - (performance.now() - startedMs)) } : {}),
        signal: stop.signal,
        onUnreachable: tellOutage,
        onResult: (o) => {
          finished++;
          if (!o.success) failed++;
          print((args.json ? JSON.stringify(waitJson(o)) : formatWaitLine(o)) + "\n");
          showStatus();
        },
      });
      status?.clear();
      if (end === "timed_out") writeNote(`--timeout reached with ${targets.length - outcomes.length} target(s) still running`);
      if (end === "interrupted") writeNote(`interrupted with ${targets.length - outcomes.length} target(s) still running`);
      for (const o of outcomes) if (o.status === "unknown") writeNote(`${o.kind} ${o.id} was deleted while waited on`);
      return waitExitCode(end, problems, outcomes);
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
  },
});
