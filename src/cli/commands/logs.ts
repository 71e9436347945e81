// `li logs ID`: what a session's legs printed, read from their run directories (§13). The current leg by
// default, `--leg N` or `--leg all`; `-f` follows the live leg and ends with `li wait`'s exit codes.
// The command's bytes are escaped like any stored data in human output (§18; newline and tab kept); on a
// terminal (and without NO_COLOR) its colours and carriage returns are kept; `--raw` writes them exactly.
import { command, LEDGER_RETRY_ARG } from "../command.ts";
import type { BranchRow, LegRow } from "../../ledger/rows.ts";
import { resolveOneIn, WAIT_LOOKUP_ORDER } from "../../ledger/resolve.ts";
import { isTerminal } from "../../lifecycle/policy.ts";
import { followSession } from "../../logs/follow.ts";
import { locateLegOutput, type LegOutput } from "../../logs/locate.ts";
import { TerminalText } from "../../logs/terminal-text.ts";
import { LogFileError, StreamReader } from "../../logs/read.ts";
import { parseDuration, parseNonNegativeInt } from "../../util/duration.ts";
import { UnknownIdError, UsageError } from "../../util/errors.ts";
import { toOutcome } from "../../wait/line.ts";
import { waitExitCode } from "../../wait/waiter.ts";
import { useColour } from "../colour.ts";
import { writeAll } from "../fd.ts";
import { writeNote } from "../io.ts";
import { isoTime } from "../render.ts";
import { safeLines, safeText } from "../../util/text.ts";

/** Which legs: `--leg N` by seq, `--leg all`, else the current one (or the one a run id names). */
function chooseLegs(legs: readonly LegRow[], flag: string | undefined, preferred: LegRow | null, sessionId: string): LegRow[] {
  if (legs.length === 0) throw new UsageError(`session ${sessionId} has no legs: nothing was run`);
  if (flag === undefined) return [preferred ?? legs.at(-1)!];
  if (flag.trim() === "all") return [...legs];
  // A leg's seq starts at 1: the message names both spellings --leg takes.
  if (!/^\s*[1-9]\d{0,8}\s*$/.test(flag)) throw new UsageError(`--leg: ${JSON.stringify(flag)} is neither a leg number (1, 2 …) nor all`);
  const seq = Number(flag.trim());
  const leg = legs.find((l) => l.seq === seq);
  if (!leg) throw new UsageError(`--leg: session ${sessionId} has no leg ${seq} (it has ${legs.length === 1 ? "leg 1" : `legs 1–${legs.length}`})`);
  return [leg];
}

/** One line before each leg's output under --leg all (and when a follow moves to a new leg). */
function header(leg: LegRow): string {
  const end = leg.ended_at === null ? "running" : `${leg.status}, exit ${leg.exit_code ?? "-"}`;
  return `==> leg ${leg.seq} · run ${safeText(leg.run_id)} · started ${isoTime(leg.started_at)} · ${end} <==\n`;
}

/** How a leg's bytes reach stdout: exactly (--raw), for a terminal (colour and carriage returns kept), or escaped. */
type Rendering = "raw" | "terminal" | "escaped";

/**
 * Writes a leg's bytes to stdout as `rendering` says, decoding UTF-8 across chunk boundaries.
 * `onGone` runs once the reader has gone away (`li logs -f ID | head`): a follow stops there.
 */
function stdoutSink(rendering: Rendering, onGone: () => void): { sink: (bytes: Uint8Array) => void; flush: () => void } {
  const write = (data: string | Uint8Array) => {
    if (!writeAll(1, data)) onGone();
  };
  if (rendering === "raw") return { sink: (bytes) => write(bytes), flush: () => {} };
  const decoder = new TextDecoder();
  if (rendering === "terminal") {
    const screen = new TerminalText();
    return {
      sink: (bytes) => write(screen.push(decoder.decode(bytes, { stream: true }))),
      flush: () => write(screen.push(decoder.decode()) + screen.end()),
    };
  }
  return {
    sink: (bytes) => write(safeLines(decoder.decode(bytes, { stream: true }))),
    flush: () => write(safeLines(decoder.decode())),
  };
}

function openAt(file: string, tail: number | undefined): StreamReader {
  const reader = StreamReader.open(file);
  if (tail !== undefined) reader.seekToLastLines(tail);
  return reader;
}

/** `--json`: one object per leg, its text exactly (decoded as UTF-8), or why it could not be read. */
function jsonRecord(out: LegOutput, tail: number | undefined): Record<string, unknown> {
  const leg = out.leg;
  const base = { seq: leg.seq, leg_id: leg.id, run_id: leg.run_id, status: leg.status, exit_code: leg.exit_code, host_id: leg.host_id, host_name: leg.host_name ?? null, run_dir: leg.state_root };
  if (!out.ok) return { ...base, files: [], text: null, error: out.problem };
  const parts: Uint8Array[] = [];
  for (const file of out.files) {
    let reader: StreamReader;
    try {
      reader = openAt(file, tail);
    } catch (error) {
      if (error instanceof LogFileError) return { ...base, files: out.files, text: null, error: error.message };
      throw error;
    }
    try {
      reader.drain((bytes) => parts.push(bytes.slice()));
    } finally {
      reader.close();
    }
  }
  return { ...base, files: out.files, text: new TextDecoder().decode(Buffer.concat(parts)), error: null };
}

export default command({
  description:
    "Print what a session's legs printed (stdout and stderr as captured in their run directories): the current leg, --leg N, or --leg all with a header per leg. An id may be a session, branch or run id (a run id shows that leg). -f follows the live leg and exits like li wait: 0 completed, 1 unsuccessful, 3 interrupted. On a terminal colours are kept and a carriage return rewrites its line; every other control character is escaped (all of them off a terminal or with NO_COLOR) unless --raw. Exit 1 when a leg's run directory is gone or on another host, 2 for a bad id or flag",
  examples: ["li logs 1a2b3c4d --leg=all", "li logs -f --tail=20 1a2b3c4d"],
  ledger: "reads",
  args: {
    id: { type: "positional", valueHint: "ID", complete: "sessions", description: "a session, branch or run id (or a unique prefix)", required: true },
    follow: { type: "boolean", alias: "f", description: "follow the live leg until the session ends" },
    leg: { type: "string", valueHint: "N|all", description: "which leg: its seq (1, 2 …) or all (default: the current leg)" },
    tail: { type: "string", valueHint: "N", description: "only the last N lines of each leg shown" },
    raw: { type: "boolean", description: "write the captured bytes exactly, control characters included" },
    json: { type: "boolean", description: "one JSON object per leg with its text (not with -f)" },
    interval: { type: "string", valueHint: "DURATION", description: "with -f: the safety poll (default 1 s); file and ledger changes wake it at once" },
    ...LEDGER_RETRY_ARG,
  },
  async run({ args, ledger: open }) {
    const extra = args._.map(String).slice(1);
    if (extra.length > 0) throw new UsageError(`li logs takes one id; unexpected '${extra[0]}'`);
    if (args.follow && args.json) throw new UsageError("li logs: --json does not go with -f (follow prints as the leg writes)");
    if (args.json && args.raw) throw new UsageError("li logs: --raw does not go with --json (JSON carries the text exactly)");
    const tail = args.tail === undefined ? undefined : parseNonNegativeInt(args.tail, "--tail");
    const intervalMs = args.interval === undefined ? 1000 : parseDuration(args.interval, "--interval") * 1000;
    if (args.interval !== undefined && !args.follow) throw new UsageError("li logs: --interval goes with -f");

    const ledger = open();
    const { reads } = ledger;
    const target = await resolveOneIn(reads, args.id, WAIT_LOOKUP_ORDER);
    if (target.kind !== "session") throw new UsageError(`li logs shows sessions; ${args.id} is ${target.kind === "invocation" ? "an" : "a"} ${target.kind} (li show ${args.id} lists its sessions)`);
    const [row, legs, branches] = await Promise.all([reads.entityRow("session", target.id), reads.legsOf(target.id), reads.branchesOf(target.id)]);
    if (!row) throw new UnknownIdError(args.id);
    const byRun = target.via?.kind === "run" ? (legs.find((l) => l.run_id === target.via!.id) ?? null) : null;
    const current = legs.find((l) => l.id === row.current_leg_id) ?? null;
    const chosen = chooseLegs(legs, args.leg, byRun ?? current, target.id);
    if (args.follow && (args.leg ?? "").trim() !== "all" && current && chosen[0]!.id !== current.id) {
      throw new UsageError(`-f follows the current leg (leg ${current.seq}); leave out --leg or use --leg all`);
    }
    const outputs = chosen.map((leg) => locateLegOutput(leg, branches as BranchRow[]));

    if (args.json) {
      const records = outputs.map((out) => jsonRecord(out, tail));
      for (const record of records) writeAll(1, JSON.stringify(record) + "\n");
      return records.every((r) => r.error === null) ? 0 : 1;
    }

    const stop = new AbortController();
    const { sink, flush } = stdoutSink(args.raw ? "raw" : useColour() ? "terminal" : "escaped", () => stop.abort());
    let problems = 0;
    let followReader: StreamReader | null = null;
    // --leg all heads every leg, even a session's only one: a reader (or a script) sees the same shape.
    const headed = (args.leg ?? "").trim() === "all";
    for (const out of outputs) {
      if (headed) writeAll(1, header(out.leg));
      if (!out.ok) {
        writeNote(out.problem);
        problems++;
        continue;
      }
      for (const file of out.files) {
        let reader: StreamReader;
        try {
          reader = openAt(file, tail);
        } catch (error) {
          if (!(error instanceof LogFileError)) throw error;
          writeNote(error.message);
          problems++;
          continue;
        }
        reader.drain(sink);
        // The live leg's reader stays open for -f, at the byte it reached.
        if (args.follow && out.leg.id === current?.id && followReader === null) followReader = reader;
        else reader.close();
      }
    }
    flush();
    if (!args.follow) return problems > 0 ? 1 : 0;

    // -f: a leg elsewhere or gone cannot be followed; an already-terminal session ends at once.
    const live = current ?? chosen.at(-1)!;
    const liveOut = outputs.find((o) => o.leg.id === live.id);
    if (liveOut && !liveOut.ok) return 1;
    const onSignal = () => stop.abort();
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    try {
      let end: "done" | "interrupted" = "done";
      if (!isTerminal("session", row.status)) {
        const [{ pollingOnly, wakeUpsDisabled }, { watchFilesIn }] = await Promise.all([import("../../ledger/wake.ts"), import("../../ledger/file-wake.ts")]);
        const watchFiles = !wakeUpsDisabled();
        end = await followSession({
          reads,
          sessionId: target.id,
          branches: branches as BranchRow[],
          leg: live,
          reader: followReader,
          sink,
          onLeg: (leg) => {
            flush();
            writeAll(1, header(leg));
          },
          onProblem: (message) => writeNote(message),
          armLedger: () => (watchFiles ? ledger.wake() : pollingOnly()),
          armFiles: (dir, names) => (watchFiles ? watchFilesIn(dir, names) : pollingOnly()),
          intervalMs,
          signal: stop.signal,
        });
      } else followReader?.close();
      flush();
      if (end === "interrupted") return 3;
      const state = await reads.waitState("session", target.id);
      return waitExitCode("done", [], [toOutcome({ kind: "session", id: target.id, input: args.id }, state)]);
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
  },
});
