import { describe, expect, test } from "bun:test";
import { prepareSubmit, submitRun, labelsNobodyHas, type SubmitInput } from "../../src/schedule/submit.ts";
import { parseStoredRequest, captureEnv } from "../../src/schedule/request.ts";
import { UsageError } from "../../src/util/errors.ts";
import { fakeClock, sequentialIds, tempLedger, type TempLedger } from "../helpers/ledger.ts";

const request = (argv: string[] = ["true"]) => ({ version: 1 as const, argv, workdir: "/tmp", env: { PATH: "/usr/bin" }, options: {} });
const input = (extra: Partial<SubmitInput> = {}): SubmitInput => ({ queue: "build", request: request(), ...extra });

function ledger(): TempLedger {
  return tempLedger({ now: fakeClock().now, newId: sequentialIds("r") });
}

async function refusal(t: TempLedger, given: SubmitInput): Promise<string> {
  const before = await t.dump();
  const error = await submitRun(t.ledger, given).then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(UsageError);
  expect(await t.dump()).toEqual(before);
  return (error as Error).message;
}

describe("submitting a scheduled run", () => {
  test("a run without --after is recorded queued with its whole leg request, and its queue is created with the defaults", async () => {
    const t = ledger();
    const run = await submitRun(t.ledger, input({ needs: ["gpu"], retries: 2, retryDelay: 5, retryBackoff: "exp", retryJitter: true }));
    expect(run.status).toBe("queued");
    const row = (await t.ledger.backend.schedule.getRun(run.id))!;
    expect(row).toMatchObject({ status: "queued", status_reason_code: "schedule.queued.created", queue: "build", needs: '["gpu"]', retries: 2, retry_delay: 5, retry_backoff: "exp", retry_jitter: 1, chain_depth: 0, attempts: 0 });
    expect(parseStoredRequest(run.id, row.request_json)).toEqual(request());
    expect(await t.ledger.backend.schedule.getQueue("build")).toMatchObject({ name: "build", parallel: 1, scope: "host", paused: 0, lease_attempts: 3 });
    const history = await t.ledger.backend.listTransitions("schedule_run", run.id);
    expect(history.map((h) => [h.previous_status, h.status])).toEqual([[null, "queued"]]);
  });

  test("with --after the run is created queued and moved to waiting_dependency in the same transaction, its dependencies recorded", async () => {
    const t = ledger();
    const first = await submitRun(t.ledger, input());
    const session = await t.ledger.createEntity("session", {});
    const second = await submitRun(t.ledger, input({ after: [first.id, session.id, first.id] }));
    expect(second.status).toBe("waiting_dependency");
    const history = await t.ledger.backend.listTransitions("schedule_run", second.id);
    expect(history.map((h) => [h.previous_status, h.status, h.reason_code])).toEqual([
      [null, "queued", "schedule.queued.created"],
      ["queued", "waiting_dependency", "schedule.waiting_dependency.blocked"],
    ]);
    const deps = await t.ledger.backend.schedule.dependenciesOf(second.id);
    expect(deps.map((d) => [d.depends_on_kind, d.depends_on_id]).sort()).toEqual([["schedule_run", first.id], ["session", session.id]].sort());
    expect(await t.ledger.backend.schedule.dependentsOf(first.id)).toEqual([second.id]);
  });

  test("an unknown --after id is refused naming it, and nothing is written", async () => {
    const t = ledger();
    await submitRun(t.ledger, input());
    expect(await refusal(t, input({ after: ["nope-123"] }))).toBe("--after: no run, session or branch matches 'nope-123'");
  });

  test("a cycle is refused: a run waiting for itself, or for a run that waits for it", async () => {
    const t = ledger();
    expect(await refusal(t, input({ request: { ...request(), options: { runId: "leg-1" } }, after: ["leg-1"] }))).toContain("a cycle");
    // A run that already names the id about to be submitted (ids are ledger-wide) closes a loop through it.
    const a = await submitRun(t.ledger, input());
    await t.rows().run("INSERT INTO schedule_run_deps (run_id, depends_on_kind, depends_on_id, created_at) VALUES (?, 'schedule_run', 'later', 0)", a.id);
    expect(await refusal(t, input({ id: "later", after: [a.id] }))).toBe(`--after ${a.id}: a cycle (${a.id} waits, directly or not, for this run)`);
  });

  test("bad options are refused with the flag they came from, and nothing is written", async () => {
    const t = ledger();
    expect(await refusal(t, input({ retries: -1 }))).toStartWith("--retries:");
    expect(await refusal(t, input({ queue: "no spaces" }))).toStartWith('--queue "no spaces"');
    expect(await refusal(t, input({ needs: ["bad label"] }))).toStartWith("--needs:");
    expect(await refusal(t, input({ retryBackoff: "linear" as "exp" }))).toStartWith("--retry-backoff:");
    expect(await refusal(t, input({ request: { ...request(), argv: [] } }))).toStartWith("the leg request:");
  });

  test("prepareSubmit resolves a leg's run id to its session", async () => {
    const t = ledger();
    const session = await t.ledger.createEntity("session", {});
    await t.rows().run(
      "INSERT INTO legs (id, session_id, seq, run_id, state_root, artifact_root, command, started_at, status) VALUES ('leg-a', ?, 1, 'nightly-7', '/x', '/x/a', '[]', 0, 'running')",
      session.id,
    );
    const prepared = await prepareSubmit(t.ledger, input({ after: ["nightly-7"] }));
    expect(prepared.dependencies).toEqual([{ given: "nightly-7", kind: "session", id: session.id }]);
  });

  test("labels no host offers are named, so a submit can warn", async () => {
    const t = ledger();
    await t.ledger.transact(async (tx) => tx.schedule.recordHost({ host_id: "h1", host_name: "one", labels: '["gpu","linux"]', seen_at: 1 }));
    expect(await labelsNobodyHas(t.ledger, ["gpu", "arm64"])).toEqual(["arm64"]);
  });
});

describe("the stored request", () => {
  test("keeps the allowlisted variables and --pass-env names, never credentials it was not asked for", () => {
    const env = captureEnv({ PATH: "/bin", LC_ALL: "C", LI_DB: "postgres://u:secret@h/db", PGPASSWORD: "secret", TOKEN: "t" }, ["TOKEN"]);
    expect(env).toEqual({ PATH: "/bin", LC_ALL: "C", TOKEN: "t" });
    expect(() => captureEnv({}, ["NOT-A-NAME"])).toThrow("--pass-env");
  });

  test("a stored request that does not parse is refused naming the run", () => {
    expect(() => parseStoredRequest("r1", "{")).toThrow("schedule run r1: its stored leg request is not JSON");
    expect(() => parseStoredRequest("r1", JSON.stringify({ version: 1, argv: ["x"], workdir: "rel", env: {}, options: {} }))).toThrow("workdir");
  });
});
