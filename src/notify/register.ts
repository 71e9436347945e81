// Leg registrations (SPEC §9.1): the resolver of which argv a leg gets, and its rows in the setup transaction.

import path from "node:path";
import type { Tx } from "../ledger/backend.ts";
import { randomId } from "../util/ids.ts";
import { compileArgvWords, compileTemplate, type CompiledArgv } from "./argv.ts";
import { canonicalHost, handlerHost, handlerUid } from "./host.ts";
import { notifyAppliesToLeg, type NotifySetting } from "./on-terminal.ts";
import { REGISTRATION_PREFIX } from "../lifecycle/consumer-prefixes.ts";

export interface LegNotify {
  /** The compiled argv (placeholders not substituted), or null: no registration. */
  argv: readonly string[] | null;
  /** The flag or settings key it came from (`--notify`, `settings <file>: notify.on_terminal`). */
  origin: string | null;
  /** Configuration problems, one line each, naming the flag or key; never argument values in full. */
  warnings: string[];
}

/**
 * `--notify` > project settings > global settings > none (§9.1, ADR-0095). `loadSettings` has already
 * layered project over global; null settings: no settings file exists. A bad `--notify` disables the
 * notice (with a warning) rather than falling back to the settings: the user asked for something else.
 * Never throws.
 */
export function defaultLegNotify(settings: { readonly notifyOnTerminal: NotifySetting | null } | null, leg: { notifyFlag: string | undefined | null; sessionId: string; branchId: string }): LegNotify {
  if (leg.notifyFlag !== undefined && leg.notifyFlag !== null) return legNotify(compileTemplate(leg.notifyFlag, "--notify"), "--notify");
  const setting = settings?.notifyOnTerminal ?? null;
  if (!notifyAppliesToLeg(setting, leg) || setting === null) return { argv: null, origin: null, warnings: [] };
  const compiled = setting.template !== undefined ? compileTemplate(setting.template, setting.origin) : compileArgvWords(setting.argv ?? [], setting.origin);
  return legNotify(compiled.ok && setting.projectDir !== undefined ? { ...compiled, argv: anchoredProgram(compiled.argv, setting.projectDir) } : compiled, setting.origin);
}

/**
 * A settings handler's relative program (`./notify.sh`, `bin/notify`) made absolute against its project
 * (§18): the registration is run later, by whichever li delivers it, from whatever directory — a
 * relative path would then name whatever file sits there. A bare name (`notify-send`) is looked up on
 * PATH as always; a word starting with a placeholder is left as it is.
 */
export function anchoredProgram(argv: readonly string[], projectDir: string): string[] {
  const [program, ...rest] = argv;
  if (program === undefined || !program.includes("/") || program.startsWith("/") || program.startsWith("{")) return [...argv];
  return [path.resolve(projectDir, program), ...rest];
}

function legNotify(compiled: CompiledArgv, origin: string): LegNotify {
  return compiled.ok ? { argv: compiled.argv, origin, warnings: [] } : { argv: null, origin, warnings: [compiled.warning] };
}

export interface LegRegistrationInput {
  sessionId: string;
  legId: string;
  argv: readonly string[];
  origin: string;
  /** The host that runs it: `hostId()` or `machineId()` from host/proc.ts (only the machine part is kept); default this host. */
  hostId?: string;
  now: number;
  /** Defaults to a random UUID. */
  id?: string;
}

/**
 * Writes a leg's registration inside its setup transaction: a `terminal_callbacks` row bound to the
 * leg and its session, and the consumer `cb:<id>` whose watermark is the highest committed seq, so
 * it is owed only the first terminal event of its session from here on, while its leg is current.
 */
export async function registerLegCallback(tx: Tx, input: LegRegistrationInput): Promise<{ id: string; consumer: string }> {
  const id = input.id ?? randomId();
  const consumer = `${REGISTRATION_PREFIX}${id}`;
  const watermark = await tx.notify.maxSeq();
  await tx.notify.insertCallback({
    id,
    scope: "leg",
    name: null,
    consumer,
    session_id: input.sessionId,
    leg_id: input.legId,
    argv: JSON.stringify(input.argv),
    filter_kinds: null,
    filter_ids: null,
    origin: input.origin,
    host_id: input.hostId === undefined ? handlerHost() : canonicalHost(input.hostId),
    uid: handlerUid(),
    enabled: 1,
    created_at: input.now,
    retired_at: null,
  });
  await tx.notify.insertConsumer({ name: consumer, watermark, registered_at: input.now, retired_at: null });
  return { id, consumer };
}

/** A deferred leg passes its registrations to the leg that will finalize the session (§9.1). */
export async function passLegRegistration(tx: Tx, fromLegId: string, toLegId: string): Promise<number> {
  return tx.notify.moveLegCallbacks(fromLegId, toLegId);
}
